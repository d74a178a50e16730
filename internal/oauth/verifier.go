package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// MaxTokenBytes bounds an access token: larger ones are refused before
// any parsing (hosted IdPs' JWTs are 1-4 KB; 16 KiB leaves room for many
// claims and keeps a hostile header from costing memory).
const MaxTokenBytes = 16 << 10

// DefaultUserClaim is the claim that names the user a token acts for.
const DefaultUserClaim = "sub"

// discoveryTimeout bounds the issuer's discovery at start.
const discoveryTimeout = 15 * time.Second

// signingAlgs are the algorithms a token may be signed with: asymmetric
// only, whatever the issuer's discovery lists, so a token "signed" with
// HMAC over the issuer's public key, or with alg none, never verifies.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA,
}

// VerifierOptions configures a Verifier. Issuer and Resource are required.
type VerifierOptions struct {
	// Issuer is the external authorization server's issuer URL; its
	// OpenID discovery document (/.well-known/openid-configuration) names
	// its JWKS.
	Issuer string
	// Resource is /mcp's resource URL: a token's aud must contain it.
	Resource string
	// UserClaim names the claim whose value is the user the agent acts
	// for (DefaultUserClaim when empty): "user:" + its value.
	UserClaim string
	// HTTPClient fetches discovery and the JWKS; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Logger records refused tokens; nil discards.
	Logger *slog.Logger
	// Now is the clock expiry is checked against; nil is time.Now.
	Now func() time.Time
	// KeySet, when set, verifies signatures instead of the JWKS named by
	// the issuer's discovery, which is then not fetched: the embedded
	// authorization server (internal/oauthas) hands its own key set over,
	// as it cannot be discovered over HTTP before the daemon listens.
	KeySet oidc.KeySet
	// Check, when set, runs on every token whose signature and claims
	// passed, with its claims; an error refuses it. The embedded server
	// checks that the token's grant is still live.
	Check func(ctx context.Context, claims map[string]any) error
}

// Verifier checks access tokens an external issuer signed: the signature
// against the issuer's JWKS (cached; refetched when a token names a key
// the cache lacks, which is how a rotation reaches it), iss, aud (the
// resource URL), exp and nbf. Safe for concurrent use.
type Verifier struct {
	opts     VerifierOptions
	verifier *oidc.IDTokenVerifier
	log      *slog.Logger
}

// NewVerifier discovers the issuer (failing when it cannot be reached or
// names another issuer) and returns its Verifier.
func NewVerifier(ctx context.Context, opts VerifierOptions) (*Verifier, error) {
	if opts.Issuer == "" || opts.Resource == "" {
		return nil, errors.New("oauth: VerifierOptions.Issuer and Resource are required")
	}
	if _, err := ParseResource(opts.Resource); err != nil {
		return nil, err
	}
	if opts.UserClaim == "" {
		opts.UserClaim = DefaultUserClaim
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := opts.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	// The key set's fetches outlive ctx (a request's or serve's start),
	// so they get their own context carrying only the client.
	keyCtx := oidc.ClientContext(context.Background(), client)
	if opts.KeySet != nil {
		return &Verifier{opts: opts, verifier: newIDVerifier(opts, opts.KeySet), log: log}, nil
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, client), discoveryTimeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, opts.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oauth: discover issuer %s: %w", opts.Issuer, err)
	}
	var meta struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKS == "" {
		return nil, fmt.Errorf("oauth: issuer %s publishes no jwks_uri in its discovery document", opts.Issuer)
	}
	keys := oidc.NewRemoteKeySet(keyCtx, meta.JWKS)
	return &Verifier{opts: opts, verifier: newIDVerifier(opts, keys), log: log}, nil
}

func newIDVerifier(opts VerifierOptions, keys oidc.KeySet) *oidc.IDTokenVerifier {
	return oidc.NewVerifier(opts.Issuer, keys, &oidc.Config{
		ClientID:             opts.Resource, // the audience check: aud must contain the resource URL
		SupportedSigningAlgs: signingAlgs,
		Now:                  opts.Now,
	})
}

// claims are what an access token says beyond iss, aud, exp and nbf.
// Hosted IdPs spell scopes as a space-separated "scope" (RFC 9068, Auth0,
// Keycloak) or an array "scp" (Okta, Entra ID), and the client as
// "client_id" (RFC 9068) or "azp" (OIDC).
type claims struct {
	Subject  string          `json:"sub"`
	Scope    string          `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
	AZP      string          `json:"azp"`
}

// Token is a verified access token.
type Token struct {
	Principal switchboard.Principal
	Scopes    []string
	ClientID  string
	Expiry    time.Time
}

// Verify checks raw and maps it to its principal. Every refusal is
// UNAUTHORIZED (the OAuth error invalid_token), logged with its reason.
func (v *Verifier) Verify(ctx context.Context, raw string) (Token, error) {
	t, err := v.verify(ctx, raw)
	if err != nil {
		v.log.WarnContext(ctx, "OAuth access token refused", slog.String("issuer", v.opts.Issuer), slog.String("reason", err.Error()))
		return Token{}, switchboard.Errorf(switchboard.CodeUnauthorized, "the access token is not valid for this resource: %v", err)
	}
	return t, nil
}

func (v *Verifier) verify(ctx context.Context, raw string) (Token, error) {
	if len(raw) > MaxTokenBytes {
		return Token{}, fmt.Errorf("token is %d bytes, over the %d-byte limit", len(raw), MaxTokenBytes)
	}
	if strings.Count(raw, ".") != 2 {
		return Token{}, errors.New("token is not a signed JWT (three dot-separated parts)")
	}
	idt, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return Token{}, fmt.Errorf("token expired at %s", exp.Expiry.UTC().Format(time.RFC3339))
		}
		return Token{}, errors.New(strings.TrimPrefix(err.Error(), "oidc: "))
	}
	var c claims
	var all map[string]any
	if err := idt.Claims(&c); err != nil {
		return Token{}, fmt.Errorf("claims: %w", err)
	}
	if err := idt.Claims(&all); err != nil {
		return Token{}, fmt.Errorf("claims: %w", err)
	}
	if v.opts.Check != nil {
		if err := v.opts.Check(ctx, all); err != nil {
			return Token{}, err
		}
	}
	user, _ := all[v.opts.UserClaim].(string)
	if user == "" {
		return Token{}, fmt.Errorf("token has no string claim %q naming the user", v.opts.UserClaim)
	}
	// The claim becomes the user the agent acts for: it must name a user,
	// and never the operator, whose rights no sign-in at the IdP grants
	// (a user who picked "admin" as a name, say).
	u, err := scope.ParseUser(strings.TrimPrefix(user, "user:"))
	if err != nil || u == "" || u == switchboard.Operator {
		return Token{}, fmt.Errorf("the token's %q claim %q does not name a user switchboard may act for (a user id, not the operator's)", v.opts.UserClaim, user)
	}
	user = u
	client := c.ClientID
	if client == "" {
		client = c.AZP
	}
	if client == "" {
		return Token{}, errors.New("token names no client (client_id or azp claim)")
	}
	scopes := strings.Fields(c.Scope)
	if len(c.Scp) > 0 {
		var list []string
		var one string
		switch {
		case json.Unmarshal(c.Scp, &list) == nil:
			scopes = append(scopes, list...)
		case json.Unmarshal(c.Scp, &one) == nil:
			scopes = append(scopes, strings.Fields(one)...)
		default:
			return Token{}, errors.New("scp claim is neither a string nor an array of strings")
		}
	}
	return Token{Principal: Principal(client, user, scopes), Scopes: scopes, ClientID: client, Expiry: idt.Expiry}, nil
}

// Authenticate is Verify in the shape authn.OAuthTokens takes.
func (v *Verifier) Authenticate(ctx context.Context, raw string) (switchboard.Principal, []string, error) {
	t, err := v.Verify(ctx, raw)
	return t.Principal, t.Scopes, err
}
