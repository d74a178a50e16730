package oauthas

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
)

// Store is the part of switchboard.Store the server keeps its state in.
type Store interface {
	OAuthPut(ctx context.Context, r switchboard.OAuthRecord) error
	OAuthGet(ctx context.Context, kind, id string) (switchboard.OAuthRecord, error)
	OAuthUpdate(ctx context.Context, kind, id, user string, data []byte) error
	OAuthUse(ctx context.Context, kind, id string, at time.Time) (switchboard.OAuthRecord, error)
	OAuthRevoke(ctx context.Context, kind, id string, at time.Time) (switchboard.OAuthRecord, error)
	OAuthList(ctx context.Context, kind, user string) ([]switchboard.OAuthRecord, error)
	OAuthDeleteExpired(ctx context.Context, before time.Time) (int, error)
}

// Ledger is the activity ledger's append (*activity.Ledger).
type Ledger interface {
	Append(ctx context.Context, e *switchboard.ActivityEntry) error
}

// Defaults for Options.
const (
	DefaultAccessLifetime  = 15 * time.Minute
	DefaultRefreshLifetime = 30 * 24 * time.Hour
)

// Paths of the endpoints (under the issuer).
const (
	MetadataPath  = "/.well-known/oauth-authorization-server"
	AuthorizePath = "/oauth/authorize"
	TokenPath     = "/oauth/token"
	RevokePath    = "/oauth/revoke"
	RegisterPath  = "/oauth/register"
	KeysPath      = "/oauth/jwks"
)

// Options configures a Server. Store, Issuer and Resource are required.
type Options struct {
	Store Store
	// Issuer is the server's issuer: the daemon's public base URL
	// (https://app.example.com). The metadata is at Issuer +
	// /.well-known/oauth-authorization-server.
	Issuer string
	// Resource is /mcp's URL: the audience of every token issued.
	Resource string
	// Scope is the scope /mcp requires (oauth.DefaultScope when empty).
	Scope string
	// APIResource is the HTTP API's URL (Issuer + /api/v1): the audience
	// of the built-in console client's tokens (ConsoleClientID). Empty:
	// there is no console client, and people sign in to the console with
	// the admin token only.
	APIResource string
	// LoginURL is the host app's sign-in page: the authorize endpoint
	// sends the browser there with ?request=<id>. Empty: a page saying
	// sign-in is not set up.
	LoginURL string
	// HTTPClient fetches client ID metadata documents; nil refuses
	// non-public addresses (tests pass their own).
	HTTPClient *http.Client
	// AccessLifetime and RefreshLifetime bound the tokens (defaults
	// above).
	AccessLifetime, RefreshLifetime time.Duration
	// Ledger, when set, records grants made, denied and revoked
	// (oauth.grant, oauth.deny, oauth.revoke) in the activity ledger.
	Ledger Ledger
	Logger *slog.Logger
	Now    func() time.Time
}

// Server is the embedded authorization server. Safe for concurrent use.
type Server struct {
	store                           Store
	issuer, resource, scope         string
	apiResource                     string
	login                           *url.URL
	http                            *http.Client
	accessLifetime, refreshLifetime time.Duration
	log                             *slog.Logger
	now                             func() time.Time
	keys                            *keyRing
	cimd                            metadataCache
	provider                        *op.Provider
	ledger                          Ledger
	registrations                   *ratelimit.Limiter // per source address
}

// New builds the server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Issuer == "" || opts.Resource == "" {
		return nil, errors.New("oauthas: Options.Store, Issuer and Resource are required")
	}
	iss, err := url.Parse(opts.Issuer)
	if err != nil || (iss.Scheme != "https" && iss.Scheme != "http") || iss.Host == "" || iss.RawQuery != "" || iss.Fragment != "" {
		return nil, fmt.Errorf("oauthas: issuer %q must be an absolute http(s) URL without query or fragment", opts.Issuer)
	}
	if _, err := oauth.ParseResource(opts.Resource); err != nil {
		return nil, err
	}
	if opts.APIResource != "" {
		if _, err := oauth.ParseResource(opts.APIResource); err != nil {
			return nil, err
		}
	}
	s := &Server{store: opts.Store, issuer: strings.TrimSuffix(opts.Issuer, "/"), resource: opts.Resource, scope: opts.Scope, apiResource: opts.APIResource,
		http: opts.HTTPClient, accessLifetime: opts.AccessLifetime, refreshLifetime: opts.RefreshLifetime,
		log: opts.Logger, now: opts.Now, cimd: metadataCache{m: map[string]cachedMetadata{}}, ledger: opts.Ledger}
	if opts.LoginURL != "" {
		u, err := url.Parse(opts.LoginURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
			return nil, fmt.Errorf("oauthas: the sign-in URL %q must be an absolute http(s) URL of the app's sign-in page", opts.LoginURL)
		}
		s.login = u
	}
	if s.scope == "" {
		s.scope = oauth.DefaultScope
	}
	if s.http == nil {
		s.http = publicOnlyClient()
	}
	if s.accessLifetime <= 0 {
		s.accessLifetime = DefaultAccessLifetime
	}
	if s.refreshLifetime <= 0 {
		s.refreshLifetime = DefaultRefreshLifetime
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.registrations = ratelimit.New(registrationRate, s.now)
	s.keys = &keyRing{store: opts.Store, now: s.now, lifetime: s.accessLifetime, pubs: map[string]*ecdsa.PublicKey{}}
	// The crypto key encrypts the request id into each code; codes are
	// only ever looked up by their hash, never decrypted, so each replica
	// may hold its own random key.
	var key [32]byte
	_, _ = rand.Read(key[:])
	cfg := &op.Config{CryptoKey: key, CodeMethodS256: true, GrantTypeRefreshToken: true}
	opts2 := []op.Option{
		op.WithCustomAuthEndpoint(op.NewEndpoint(strings.TrimPrefix(AuthorizePath, "/"))),
		op.WithCustomTokenEndpoint(op.NewEndpoint(strings.TrimPrefix(TokenPath, "/"))),
		op.WithCustomRevocationEndpoint(op.NewEndpoint(strings.TrimPrefix(RevokePath, "/"))),
		op.WithCustomKeysEndpoint(op.NewEndpoint(strings.TrimPrefix(KeysPath, "/"))),
		op.WithLogger(s.log),
	}
	if iss.Scheme == "http" {
		opts2 = append(opts2, op.WithAllowInsecure()) // a loopback daemon without TLS, as serve starts by default
	}
	if s.provider, err = op.NewProvider(cfg, storage{s}, op.StaticIssuer(s.issuer), opts2...); err != nil {
		return nil, fmt.Errorf("oauthas: %w", err)
	}
	return s, nil
}

// Issuer is the server's issuer URL.
func (s *Server) Issuer() string { return s.issuer }

// KeySet verifies the server's access tokens (oauth.VerifierOptions.KeySet).
func (s *Server) KeySet() oidc.KeySet { return s.keys }

// maxFormBytes bounds what the token, revocation and authorize endpoints
// read.
const maxFormBytes = 64 << 10

// Routes are the server's handlers by http.ServeMux pattern: the metadata
// and the endpoints, nothing else of the library's router (no userinfo,
// introspection or OIDC discovery: this is an OAuth server for /mcp).
func (s *Server) Routes() map[string]http.Handler {
	path := ""
	if u, err := url.Parse(s.issuer); err == nil {
		path = strings.TrimSuffix(u.Path, "/")
	}
	lib := http.Handler(s.provider)
	bounded := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			h.ServeHTTP(w, r)
		})
	}
	// Anyone who learns a request's id can open its callback: only the
	// user's own Deny on the consent page goes back as an error.
	callback := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lib.ServeHTTP(&errorRedirectGuard{ResponseWriter: w, s: s, denied: true}, r)
	})
	return map[string]http.Handler{
		MetadataPath + path:         http.HandlerFunc(s.metadata),
		AuthorizePath:               bounded(http.HandlerFunc(s.authorize)),
		AuthorizePath + "/callback": callback,
		TokenPath:                   bounded(http.HandlerFunc(s.token)),
		RevokePath:                  bounded(http.HandlerFunc(s.revoke)),
		KeysPath:                    lib,
		RegisterPath:                http.HandlerFunc(s.registerRoute),
		ConsentPath:                 http.HandlerFunc(s.consent),
		LoginPath:                   http.HandlerFunc(s.loginPage),
	}
}

// authorize hands the request to the library with its RFC 8707 resource
// values, which the library does not read (CreateAuthRequest checks them),
// and asks for the resource's scope when the client named none.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the authorization request cannot be parsed", http.StatusBadRequest)
		return
	}
	if r.Form.Get("scope") == "" {
		_, scope := s.audienceOf(r.Form.Get("client_id"))
		r.Form.Set("scope", scope)
		q := r.URL.Query()
		q.Set("scope", scope)
		r.URL.RawQuery = q.Encode()
	}
	ctx := context.WithValue(r.Context(), resourceKey{}, r.Form["resource"])
	g := &errorRedirectGuard{ResponseWriter: w, s: s}
	s.provider.ServeHTTP(g, r.WithContext(ctx))
}

// errorRedirectGuard keeps the authorization endpoint from being an open
// redirector (RFC 9700 §4.11.2): anyone may register a client with any
// https redirect URI, so an invalid request's error is not sent there
// without the user; the browser gets a page saying what was refused.
// Redirects to this server's own origin and to a loopback address (a
// native app on the user's machine) still carry errors back.
type errorRedirectGuard struct {
	http.ResponseWriter
	s    *Server
	held bool
	// denied lets access_denied through: the user's answer on the
	// consent page, which named the host it goes back to.
	denied bool
}

func (g *errorRedirectGuard) WriteHeader(code int) {
	if code/100 == 3 {
		if u, err := url.Parse(g.Header().Get("Location")); err == nil && u.Query().Get("error") != "" && !g.s.errorRedirectAllowed(u) &&
			!(g.denied && u.Query().Get("error") == "access_denied") {
			g.held = true
			g.Header().Del("Location")
			msg := "The request was refused (" + u.Query().Get("error") + ")"
			if d := u.Query().Get("error_description"); d != "" {
				msg += ": " + d
			}
			g.s.message(g.ResponseWriter, http.StatusBadRequest, "This sign-in request cannot be used",
				msg+". You were not sent on to "+u.Host+"; go back to the app you came from and try again.")
			return
		}
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *errorRedirectGuard) Write(b []byte) (int, error) {
	if g.held {
		return len(b), nil
	}
	return g.ResponseWriter.Write(b)
}

// errorRedirectAllowed reports whether an error may be redirected to u
// without the user: this server's origin, or a loopback http address.
func (s *Server) errorRedirectAllowed(u *url.URL) bool {
	if iss, err := url.Parse(s.issuer); err == nil && u.Scheme == iss.Scheme && u.Host == iss.Host {
		return true
	}
	_, loop := op.HTTPLoopbackOrLocalhost(u.String())
	return u.Scheme == "http" && loop
}

// revoke serves RFC 7009 revocation through the op, once the client has
// said who it is. Every client here is public, so client_id is its whole
// authentication (RFC 6749 §2.3.1 and §3.2.1, OAuth 2.1 §3.2.1): it is
// required, because a token may be revoked only by the client it was
// issued to (RFC 7009 §2.1), and the op's own refusal ("invalid
// authorization") does not say so.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "the revocation request cannot be parsed"})
		return
	}
	refuse := func(status int, code, desc string) {
		s.log.WarnContext(r.Context(), "OAuth revocation refused", "error", code, "reason", desc, "client", r.PostForm.Get("client_id"))
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	id := r.PostForm.Get("client_id")
	if _, _, basic := r.BasicAuth(); basic || r.PostForm.Has("client_secret") {
		refuse(http.StatusUnauthorized, "invalid_client", "clients here are public and have no secret: send client_id in the form body and no client_secret or HTTP Basic credentials")
		return
	}
	if id == "" {
		refuse(http.StatusUnauthorized, "invalid_client", "client_id is required: send the client_id the token was issued to; only that client may revoke it")
		return
	}
	if _, err := s.lookupClient(r.Context(), id); errors.Is(err, errUnknownClient) {
		refuse(http.StatusUnauthorized, "invalid_client", "unknown client_id: send the client_id this server registered for you, or your client ID metadata document's URL")
		return
	} else if err != nil {
		s.log.ErrorContext(r.Context(), "OAuth revocation: looking up the client failed", "client", id, "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error", "error_description": "the server failed to answer; retry"})
		return
	}
	s.provider.ServeHTTP(w, r)
}

func (s *Server) registerRoute(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "invalid_request", "error_description": "register with POST"})
		return
	}
	if ok, wait := s.registrations.Allow(sourceKey(r.RemoteAddr)); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeJSON(w, http.StatusTooManyRequests, &regError{"too_many_requests", "too many client registrations from this address; a client registers once and keeps its client_id"})
		return
	}
	s.register(w, r)
}

// registrationRate bounds the registrations one source address makes:
// registration is open to anyone and every client is kept, so without a
// bound any peer could grow the store as fast as it can post.
var registrationRate = ratelimit.Rate{PerSecond: 1, Burst: 20}

// sourceKey is the rate-limit key of a peer: its IP address, or for IPv6
// its /64, which one host usually holds whole.
func sourceKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip = ip.Unmap(); ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// metadata answers RFC 8414 authorization server metadata.
func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*") // public, read by browser-based clients too
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                     s.issuer,
		"authorization_endpoint":                     s.issuer + AuthorizePath,
		"token_endpoint":                             s.issuer + TokenPath,
		"registration_endpoint":                      s.issuer + RegisterPath,
		"revocation_endpoint":                        s.issuer + RevokePath,
		"jwks_uri":                                   s.issuer + KeysPath,
		"response_types_supported":                   []string{"code"},
		"response_modes_supported":                   []string{"query"},
		"grant_types_supported":                      []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":           []string{"S256"},
		"token_endpoint_auth_methods_supported":      []string{"none"},
		"revocation_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                           s.scopesSupported(),
		"client_id_metadata_document_supported":      true,
	})
}

// record appends a ledger entry about a grant; a failure is logged, not
// returned: the grant's state in the store is what counts.
func (s *Server) record(ctx context.Context, actor, verb string, g Grant, details map[string]any) {
	if s.ledger == nil {
		return
	}
	d := map[string]any{"grant": g.ID, "user": g.User, "client": g.Client}
	for k, v := range details {
		d[k] = v
	}
	b, _ := json.Marshal(d)
	e := &switchboard.ActivityEntry{Actor: actor, Verb: verb, Target: "agent:" + oauth.AgentID(g.Client), Details: b}
	if err := s.ledger.Append(context.WithoutCancel(ctx), e); err != nil {
		s.log.ErrorContext(ctx, "OAuth: append to the ledger", "verb", verb, "err", err)
	}
}
