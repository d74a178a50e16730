package oauthas

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/switchboardhq/switchboard"
)

// Bounds on client metadata, registered or fetched.
const (
	maxMetadataBytes = 5 << 10 // the CIMD draft's suggested limit; a registration is no larger
	maxRedirectURIs  = 10
	maxNameLen       = 100
	maxURILen        = 2000
	metadataTimeout  = 5 * time.Second
	metadataCacheTTL = 5 * time.Minute
	metadataCacheMax = 256
)

// clientData is a client's metadata as kept (registered clients) or
// fetched (client ID metadata documents).
type clientData struct {
	Name         string   `json:"client_name"`
	RedirectURIs []string `json:"redirect_uris"`
	// Document is true for a client ID metadata document: its id is the
	// URL the document was fetched from, so its host is verified.
	Document bool `json:"document,omitempty"`
	// Builtin is switchboard's own console (ConsoleClientID), never
	// stored.
	Builtin bool `json:"-"`
}

// client is an op.Client: public (no secret, PKCE), code flow with
// refresh, JWT access tokens.
type client struct {
	id   string
	data clientData
	s    *Server
}

func (c *client) GetID() string                    { return c.id }
func (c *client) RedirectURIs() []string           { return c.data.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return nil }

// ApplicationType is native for every client: loopback redirects may
// change port (RFC 8252 §7.3) and private-use schemes are allowed, while
// other http redirects are not (registration refuses them anyway).
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodNone }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}
func (c *client) LoginURL(id string) string           { return c.s.loginURL(id) }
func (c *client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration      { return 5 * time.Minute }
func (c *client) DevMode() bool                       { return false }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// IsScopeAllowed: the resource's scope and tools:<glob> narrowings; the
// console's one scope for the console.
func (c *client) IsScopeAllowed(s string) bool {
	if c.data.Builtin {
		return s == ConsoleScope
	}
	return s == c.s.scope || strings.HasPrefix(s, "tools:")
}
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }

// errUnknownClient is an unknown client_id (the op answers
// invalid_client, or at the authorize endpoint a page: it never
// redirects for a client it does not know).
var errUnknownClient = errors.New("unknown client")

// lookupClient finds a registered client or fetches a client ID metadata
// document.
func (s *Server) lookupClient(ctx context.Context, id string) (*client, error) {
	if Person(id) {
		if c := s.builtinClient(id); c != nil {
			return c, nil
		}
		return nil, errUnknownClient
	}
	if strings.HasPrefix(id, "https://") {
		d, err := s.fetchMetadata(ctx, id)
		if err != nil {
			s.log.WarnContext(ctx, "OAuth client metadata document refused", "client", id, "reason", err.Error())
			return nil, fmt.Errorf("%w: %v", errUnknownClient, err)
		}
		return &client{id: id, data: d, s: s}, nil
	}
	if !strings.HasPrefix(id, clientPrefix) || len(id) > 64 {
		return nil, errUnknownClient
	}
	rec, err := s.store.OAuthGet(ctx, switchboard.OAuthClient, id)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		return nil, errUnknownClient
	}
	if err != nil {
		return nil, err
	}
	var d clientData
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return nil, err
	}
	return &client{id: id, data: d, s: s}, nil
}

const clientPrefix = "sbc_"

// registration is an RFC 7591 request: the members this server acts on;
// others are ignored, as the RFC allows.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientID                string   `json:"client_id"` // in a metadata document only
}

// regError is an RFC 7591 §3.2.2 error.
type regError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *regError) Error() string { return e.Code + ": " + e.Description }

func badMetadata(format string, args ...any) *regError {
	return &regError{"invalid_client_metadata", fmt.Sprintf(format, args...)}
}

// parseRegistration checks client metadata, from a registration request
// (registering) or a metadata document, and returns what is kept. A
// client that asks for a secret gets none (RFC 7591 lets the server
// substitute values): every client here is public and proves itself with
// PKCE. A registration whose name imitates a well-known client's is
// refused; a metadata document's is allowed (its URL, which the consent
// page shows, is its verified identity) and warned about on the consent
// page.
func parseRegistration(body []byte, registering bool) (registration, *regError) {
	var reg registration
	if len(body) > maxMetadataBytes {
		return reg, badMetadata("the client metadata is %d bytes, over the %d-byte limit", len(body), maxMetadataBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&reg); err != nil {
		return reg, badMetadata("the client metadata is not a JSON object of the RFC 7591 members: %v", err)
	}
	if dec.More() {
		return reg, badMetadata("the client metadata must be one JSON object")
	}
	reg.ClientName = strings.TrimSpace(reg.ClientName)
	switch {
	case reg.ClientName == "":
		return reg, badMetadata("client_name is required: the consent page shows it to the user")
	case utf8.RuneCountInString(reg.ClientName) > maxNameLen:
		return reg, badMetadata("client_name is over %d characters", maxNameLen)
	case strings.ContainsFunc(reg.ClientName, func(c rune) bool { return c < 0x20 || c == 0x7f || (c >= 0x200b && c <= 0x206f) || c == 0xfeff }):
		return reg, badMetadata("client_name holds control or invisible characters")
	}
	if known := lookalike(reg.ClientName); known != "" && registering {
		return reg, badMetadata("client_name %q imitates the name of %s; register under your own name", reg.ClientName, known)
	}
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > maxRedirectURIs {
		return reg, &regError{"invalid_redirect_uri", fmt.Sprintf("redirect_uris must list 1 to %d URIs", maxRedirectURIs)}
	}
	for _, u := range reg.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return reg, &regError{"invalid_redirect_uri", err.Error()}
		}
	}
	for _, g := range reg.GrantTypes {
		if g != string(oidc.GrantTypeCode) && g != string(oidc.GrantTypeRefreshToken) {
			return reg, badMetadata("grant_types may hold authorization_code and refresh_token only, not %q", g)
		}
	}
	for _, r := range reg.ResponseTypes {
		if r != string(oidc.ResponseTypeCode) {
			return reg, badMetadata("response_types may hold code only, not %q", r)
		}
	}
	switch reg.TokenEndpointAuthMethod {
	case "", "none", "client_secret_post", "client_secret_basic":
	default:
		return reg, badMetadata("token_endpoint_auth_method %q is not supported; clients here are public (none) and use PKCE", reg.TokenEndpointAuthMethod)
	}
	return reg, nil
}

// checkRedirectURI allows what OAuth 2.1 and RFC 8252 allow a public
// client: https, http on a loopback host, or a private-use scheme with a
// dot (com.example.app:/cb); never a fragment, user info, or a scheme a
// browser would run (javascript:, data:, file:).
func checkRedirectURI(raw string) error {
	if len(raw) > maxURILen {
		return fmt.Errorf("redirect URI is over %d bytes", maxURILen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return fmt.Errorf("redirect URI %q is not an absolute URI", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") || u.User != nil {
		return fmt.Errorf("redirect URI %q must have no fragment or user info", raw)
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return fmt.Errorf("redirect URI %q has no host", raw)
		}
	case "http":
		if _, loop := op.HTTPLoopbackOrLocalhost(raw); !loop {
			return fmt.Errorf("redirect URI %q: http is allowed only for a loopback host (127.0.0.1, [::1], localhost)", raw)
		}
	default:
		if !strings.Contains(u.Scheme, ".") {
			return fmt.Errorf("redirect URI %q: scheme %q is neither https, loopback http, nor a private-use scheme such as com.example.app", raw, u.Scheme)
		}
	}
	return nil
}

// register answers POST /oauth/register (RFC 7591). Open to anyone, as
// MCP clients register themselves; what they register is only shown to a
// user who must still approve it.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMetadataBytes+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, badMetadata("cannot read the request body: %v", err))
		return
	}
	reg, rerr := parseRegistration(body, true)
	if rerr != nil {
		s.log.WarnContext(r.Context(), "OAuth client registration refused", "reason", rerr.Error())
		writeJSON(w, http.StatusBadRequest, rerr)
		return
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	id := clientPrefix + hex.EncodeToString(raw)
	d := clientData{Name: reg.ClientName, RedirectURIs: reg.RedirectURIs}
	data, _ := json.Marshal(d)
	now := s.now()
	if err := s.store.OAuthPut(r.Context(), switchboard.OAuthRecord{Kind: switchboard.OAuthClient, ID: id, Client: id, Data: data, CreatedAt: now}); err != nil {
		s.log.ErrorContext(r.Context(), "OAuth client registration failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, &regError{"server_error", "the registration could not be stored; retry"})
		return
	}
	s.log.InfoContext(r.Context(), "OAuth client registered", "client", id, "name", reg.ClientName)
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": id, "client_id_issued_at": now.Unix(), "client_name": d.Name, "redirect_uris": d.RedirectURIs,
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// checkClientIDURL is the CIMD draft's rule for a client_id URL: https,
// a path, no fragment, user info or dot segments.
func checkClientIDURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("client_id %q is not an https URL", raw)
	}
	if u.Path == "" || u.Path == "/" || u.Fragment != "" || u.User != nil || strings.Contains(raw, "#") {
		return fmt.Errorf("client_id %q must have a path and no fragment or user info", raw)
	}
	if slices.Contains(strings.Split(u.Path, "/"), "..") || slices.Contains(strings.Split(u.Path, "/"), ".") {
		return fmt.Errorf("client_id %q has dot segments", raw)
	}
	return nil
}

// metadataCache keeps fetched documents briefly, per replica.
type metadataCache struct {
	mu sync.Mutex
	m  map[string]cachedMetadata
}

type cachedMetadata struct {
	data    clientData
	fetched time.Time
}

// fetchMetadata gets and checks a client ID metadata document: its
// client_id must be the URL it came from, and it must meet the same rules
// as a registration.
func (s *Server) fetchMetadata(ctx context.Context, id string) (clientData, error) {
	if err := checkClientIDURL(id); err != nil {
		return clientData{}, err
	}
	now := s.now()
	s.cimd.mu.Lock()
	if c, ok := s.cimd.m[id]; ok && now.Sub(c.fetched) < metadataCacheTTL {
		s.cimd.mu.Unlock()
		return c.data, nil
	}
	s.cimd.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return clientData{}, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := s.http.Do(req)
	if err != nil {
		return clientData{}, fmt.Errorf("fetch the client metadata document: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return clientData{}, fmt.Errorf("the client metadata document answered %s", res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxMetadataBytes+1))
	if err != nil {
		return clientData{}, fmt.Errorf("read the client metadata document: %v", err)
	}
	reg, rerr := parseRegistration(body, false)
	if rerr != nil {
		return clientData{}, rerr
	}
	if reg.ClientID != id {
		return clientData{}, fmt.Errorf("the document's client_id %q is not the URL it was fetched from", reg.ClientID)
	}
	if reg.TokenEndpointAuthMethod != "" && reg.TokenEndpointAuthMethod != "none" {
		return clientData{}, fmt.Errorf("token_endpoint_auth_method %q: clients with metadata documents must be public (none)", reg.TokenEndpointAuthMethod)
	}
	d := clientData{Name: reg.ClientName, RedirectURIs: reg.RedirectURIs, Document: true}
	s.cimd.mu.Lock()
	if len(s.cimd.m) >= metadataCacheMax {
		clear(s.cimd.m)
	}
	s.cimd.m[id] = cachedMetadata{d, now}
	s.cimd.mu.Unlock()
	return d, nil
}

// publicOnlyClient fetches metadata documents, refusing to connect to
// loopback, private, link-local or unspecified addresses: a client_id is
// a URL anyone can name, and the daemon must not be made to probe its own
// network with it.
func publicOnlyClient() *http.Client {
	d := &net.Dialer{Timeout: metadataTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if ip, err := netip.ParseAddr(host); err != nil || !publicAddr(ip) {
			return fmt.Errorf("refusing to fetch client metadata from %s, a non-public address", host)
		}
		return nil
	}}
	return &http.Client{
		Timeout:   metadataTimeout,
		Transport: &http.Transport{DialContext: d.DialContext, TLSHandshakeTimeout: metadataTimeout, Proxy: nil},
		// A document that redirects is refused: its URL is the client's identity.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Address ranges publicAddr refuses beyond what netip classifies: shared
// address space (carrier NAT, also cloud metadata services and overlay
// networks such as Tailscale), IETF protocol assignments, benchmarking,
// and the local-use NAT64 prefix (RFC 8215).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// Prefixes of IPv6 addresses that carry an IPv4 address a gateway
// forwards to: well-known NAT64 (RFC 6052) and 6to4 (RFC 3056). The
// embedded address must be public too.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// publicAddr reports whether a metadata document may be fetched from ip:
// a global unicast address that is not private, and not an IPv6 address
// standing for a non-public IPv4 one.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	b := ip.As16()
	if nat64.Contains(ip) {
		return publicAddr(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if sixToFour.Contains(ip) {
		return publicAddr(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return true
}
