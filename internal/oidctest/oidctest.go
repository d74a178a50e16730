// Package oidctest starts a real OpenID provider for tests: zitadel/oidc's
// certified OP (pkg/op) over its example storage and login page, with
// users alice, bob and admin (an IdP user named like the operator), and a
// native (PKCE) client whose access tokens are
// JWTs audience-bound to a resource, as a hosted IdP issues them for an
// API (Auth0's "audience", Okta's and Entra ID's resource). Tests get
// tokens through the real authorization-code flow. Only tests import it.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// ClientID is the provider's one client: native, public, PKCE.
const ClientID = "mcp-desktop"

// RedirectURI is where the provider sends the client's code.
const RedirectURI = "http://localhost/callback"

// Password is every user's password on the provider's login page.
const Password = "correct horse"

// ExchangeClientID and ExchangeSecret are the confidential client the
// provider lets exchange its users' access tokens (RFC 8693) for tokens
// of ExchangeAudience, as an operator configures an IdP for a gateway;
// exchanged tokens name the exchanging client in act (delegation).
const (
	ExchangeClientID = "switchboard-exchange"
	ExchangeSecret   = "exchange-secret-0123456789"
	ExchangeAudience = "https://api.example.test"
)

// Provider is a running OP.
type Provider struct {
	// Issuer is its issuer URL (discovery at Issuer +
	// /.well-known/openid-configuration).
	Issuer string
	srv    *httptest.Server
}

// Start runs an OP whose access tokens name resource in aud; the test
// stops it.
func Start(t testing.TB, resource string) *Provider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	users := userStore{"alice": {ID: "alice", Username: "alice", Password: Password, FirstName: "Alice", Email: "alice@example.com", EmailVerified: true, PreferredLanguage: language.English},
		"bob": {ID: "bob", Username: "bob", Password: Password, FirstName: "Bob", Email: "bob@example.com", EmailVerified: true, PreferredLanguage: language.English},
		// A user of the IdP who picked the operator's name.
		"admin": {ID: "admin", Username: "admin", Password: Password, FirstName: "Ad", Email: "admin@example.com", EmailVerified: true, PreferredLanguage: language.English}}
	clients := map[string]*storage.Client{ClientID: storage.NativeClient(ClientID, RedirectURI),
		ExchangeClientID: storage.WebClient(ExchangeClientID, ExchangeSecret)}
	st := &resourceStorage{Storage: storage.NewStorageWithClients(users, clients), resource: resource}
	srv.Config.Handler = exampleop.SetupServer(issuer, st, nil, false)
	srv.Start()
	t.Cleanup(srv.Close)
	return &Provider{Issuer: issuer, srv: srv}
}

// Token signs user in on the provider's login page and runs the
// authorization-code flow with PKCE for scopes; it returns the access
// token.
func (p *Provider) Token(t testing.TB, user string, scopes ...string) string {
	t.Helper()
	verifier := rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	c := &http.Client{CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), RedirectURI) {
			return http.ErrUseLastResponse // the client's own redirect URI: read the code off it
		}
		return nil
	}}
	q := url.Values{"client_id": {ClientID}, "redirect_uri": {RedirectURI}, "response_type": {"code"},
		"scope": {strings.Join(append([]string{"openid"}, scopes...), " ")}, "state": {"s1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	res, err := c.Get(p.Issuer + "/auth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Request.URL.Query().Get("authRequestID") // the login page the OP sent the browser to
	if id == "" {
		t.Fatalf("the provider did not send the client to its login page: %s %s", res.Status, res.Request.URL)
	}
	res, err = c.PostForm(p.Issuer+"/login/username", url.Values{"id": {id}, "username": {user}, "password": {Password}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("no code after signing in: %s, Location %q", res.Status, res.Header.Get("Location"))
	}
	res, err = c.PostForm(p.Issuer+"/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {RedirectURI}, "client_id": {ClientID}, "code_verifier": {verifier}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token endpoint: %s %v %s", res.Status, err, tok.Error)
	}
	return tok.AccessToken
}

// resourceStorage is the example storage configured the way an operator
// configures a hosted IdP for an API: the client's access tokens are JWTs
// for the resource, and carry their scopes.
type resourceStorage struct {
	*storage.Storage
	resource string
}

func (s *resourceStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return jwtClient{c}, nil
}

func (s *resourceStorage) CreateAuthRequest(ctx context.Context, r *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	a, err := s.Storage.CreateAuthRequest(ctx, r, userID)
	return s.wrap(a, err)
}

func (s *resourceStorage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	return s.wrap(s.Storage.AuthRequestByID(ctx, id))
}

func (s *resourceStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	return s.wrap(s.Storage.AuthRequestByCode(ctx, code))
}

func (s *resourceStorage) wrap(a op.AuthRequest, err error) (op.AuthRequest, error) {
	if err != nil {
		return nil, err
	}
	return forResource{a, s.resource}, nil
}

// GetPrivateClaimsFromScopes puts the granted scopes in the access token
// ("scope", RFC 9068), as hosted IdPs do.
func (s *resourceStorage) GetPrivateClaimsFromScopes(_ context.Context, _, _ string, scopes []string) (map[string]any, error) {
	return map[string]any{"scope": strings.Join(scopes, " ")}, nil
}

// ValidateTokenExchangeRequest is the provider's exchange policy: only the
// exchange client, only a user's access token, only for ExchangeAudience,
// and the result is an access token for the same user.
func (s *resourceStorage) ValidateTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) error {
	switch {
	case r.GetClientID() != ExchangeClientID:
		return oidc.ErrUnauthorizedClient().WithDescription("this client may not exchange tokens")
	case r.GetExchangeSubjectTokenType() != oidc.AccessTokenType:
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are exchanged")
	case len(r.GetAudience()) != 1 || r.GetAudience()[0] != ExchangeAudience:
		return oidc.ErrInvalidTarget().WithDescription("tokens are exchanged only for " + ExchangeAudience)
	}
	if r.GetRequestedTokenType() == "" {
		r.SetRequestedTokenType(oidc.AccessTokenType)
	}
	r.SetCurrentScopes(r.GetScopes())
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest puts the scopes and the actor
// (the exchanging client, RFC 8693 delegation) in the exchanged token.
func (s *resourceStorage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) (map[string]any, error) {
	return map[string]any{"scope": strings.Join(r.GetScopes(), " "), "act": map[string]any{"sub": r.GetClientID()}}, nil
}

type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

// IsScopeAllowed lets the client ask for the resource's scopes beside
// OpenID's own.
func (jwtClient) IsScopeAllowed(string) bool { return true }

type forResource struct {
	op.AuthRequest
	resource string
}

func (f forResource) GetAudience() []string { return []string{f.resource} }

// userStore is the provider's users by name (and ID, the same).
type userStore map[string]*storage.User

func (u userStore) GetUserByID(id string) *storage.User         { return u[id] }
func (u userStore) GetUserByUsername(name string) *storage.User { return u[name] }
func (u userStore) ExampleClientID() string                     { return "service" }
