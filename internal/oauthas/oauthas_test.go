package oauthas

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/sqlite"
)

func TestLookalike(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, want string }{
		{"Cl4ude", "Claude"}, {"Сlaude", "Claude"}, {"CIaude", "Claude"}, {"Claude\u0301", "Claude"},
		{"Chat GPT", ""}, {"ChatGPT", ""}, {"claude", ""}, // the name itself, any case or spacing
		{"Curs0r", "Cursor"}, {"VS C0de", "VS Code"}, {"MCP lnspector", "MCP Inspector"}, {"Cu rsor", ""}, {"C l a u d e", ""},
		{"Alice's client", ""}, {"Claudia", ""}, {"", ""},
	} {
		if got := lookalike(tc.name); got != tc.want {
			t.Errorf("lookalike(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckRedirectURI(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://app.example/cb", "http://127.0.0.1:33418/callback", "http://localhost/cb", "http://[::1]:80/cb", "com.example.app:/oauth"} {
		if err := checkRedirectURI(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "http://evil.example/cb", "https://a.example/cb#f",
		"https://user@a.example/cb", "/relative", "https:///nohost", "http://127.0.0.1.evil.example/cb", "myapp:/cb"} {
		if err := checkRedirectURI(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzParseRegistration: whatever a client sends to /oauth/register (or
// serves as its metadata document), parsing never panics, and what it
// accepts meets every rule the consent page and the redirect rely on.
func FuzzParseRegistration(f *testing.F) {
	for _, s := range []string{
		`{"client_name":"x","redirect_uris":["http://127.0.0.1/cb"]}`,
		`{"client_name":"Cl4ude","redirect_uris":["https://a.example/cb"]}`,
		`{"client_name":"x","redirect_uris":["javascript:alert(1)"]}`,
		`{"client_name":"x\u200b","redirect_uris":["https://a/cb"],"grant_types":["authorization_code"]}`,
		`{"client_name":"x","redirect_uris":[]} {}`, `[]`, `null`, `{"redirect_uris":null}`, ``,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, registering bool) {
		reg, err := parseRegistration(body, registering)
		if err != nil {
			if err.Code != "invalid_client_metadata" && err.Code != "invalid_redirect_uri" {
				t.Fatalf("error code %q", err.Code)
			}
			return
		}
		if reg.ClientName == "" || len([]rune(reg.ClientName)) > maxNameLen || (registering && lookalike(reg.ClientName) != "") {
			t.Fatalf("accepted name %q", reg.ClientName)
		}
		if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > maxRedirectURIs {
			t.Fatalf("accepted %d redirect URIs", len(reg.RedirectURIs))
		}
		for _, u := range reg.RedirectURIs {
			if checkRedirectURI(u) != nil || strings.Contains(u, "#") {
				t.Fatalf("accepted redirect %q", u)
			}
		}
	})
}

// FuzzCheckClientIDURL: a client_id URL that passes is https with a path
// and nothing a fetch could be tricked by.
func FuzzCheckClientIDURL(f *testing.F) {
	for _, s := range []string{"https://a.example/client.json", "https://a.example", "https://a.example/../x", "http://a.example/c", "https://u@a.example/c", "https://a.example/c#f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if checkClientIDURL(raw) != nil {
			return
		}
		if !strings.HasPrefix(raw, "https://") || strings.Contains(raw, "#") || strings.Contains(raw, "@") && strings.Index(raw, "@") < strings.Index(raw[8:], "/")+8 {
			t.Fatalf("accepted %q", raw)
		}
	})
}

func newTestServer(t testing.TB, now func() time.Time) *Server {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(Options{Store: st, Issuer: "https://app.example", Resource: "https://app.example/mcp", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A token signed by the server's own key but expired, not yet valid,
// for another audience, or naming a grant that does not exist is refused
// by the verifier /mcp uses.
func TestEmbeddedTokenRefusals(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ctx := t.Context()
	g := switchboard.OAuthRecord{Kind: switchboard.OAuthGrant, ID: "sbg_live", User: "user:alice", Client: "sbc_1", Data: []byte(`{}`)}
	if err := s.store.OAuthPut(ctx, g); err != nil {
		t.Fatal(err)
	}
	v, err := oauth.NewVerifier(ctx, oauth.VerifierOptions{Issuer: s.issuer, Resource: s.resource, KeySet: s.KeySet(), Check: s.CheckToken})
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.keys.signing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(claims map[string]any) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.id}}, (&jose.SignerOptions{}).WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(claims)
		jws, err := sig.Sign(b)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := jws.CompactSerialize()
		return out
	}
	now := time.Now().Unix()
	good := map[string]any{"iss": s.issuer, "sub": "user:alice", "aud": []string{s.resource}, "exp": now + 60, "iat": now, "nbf": now,
		"jti": "sbg_live.x", "client_id": "sbc_1", "scope": "mcp"}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for a, b := range good {
			c[a] = b
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	if tok, err := v.Verify(ctx, sign(good)); err != nil || tok.Principal.ActsFor() != "user:alice" {
		t.Fatalf("good token: %v %+v", err, tok)
	}
	for name, claims := range map[string]map[string]any{
		"expired":          with("exp", now-600),
		"not yet valid":    with("nbf", now+3600),
		"another audience": with("aud", []string{"https://other.example/mcp"}),
		"another issuer":   with("iss", "https://other.example"),
		"unknown grant":    with("jti", "sbg_gone.x"),
		"no grant":         with("jti", nil),
		"another client":   with("client_id", "sbc_2"),
		"another user":     with("sub", "user:bob"),
		"the operator":     with("sub", "user:admin"),
	} {
		if _, err := v.Verify(ctx, sign(claims)); switchboard.CodeOf(err) != switchboard.CodeUnauthorized {
			t.Errorf("%s: %v, want UNAUTHORIZED", name, err)
		}
	}
	if _, err := s.store.OAuthRevoke(ctx, switchboard.OAuthGrant, "sbg_live", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, sign(good)); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked grant: %v", err)
	}
}

// BenchmarkVerify measures what /mcp adds per call for an embedded
// server's token: the signature and claims, and with the grant check (one
// store read on SQLite, so a revocation is seen at the next call).
func BenchmarkVerify(b *testing.B) {
	s := newTestServer(b, nil)
	ctx := context.Background()
	if err := s.store.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthGrant, ID: "sbg_live", User: "user:alice", Client: "sbc_1"}); err != nil {
		b.Fatal(err)
	}
	k, err := s.keys.signing(ctx)
	if err != nil {
		b.Fatal(err)
	}
	sig, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.id}}, (&jose.SignerOptions{}).WithType("JWT"))
	now := time.Now().Unix()
	body, _ := json.Marshal(map[string]any{"iss": s.issuer, "sub": "user:alice", "aud": []string{s.resource}, "exp": now + 3600, "iat": now,
		"jti": "sbg_live.x", "client_id": "sbc_1", "scope": "mcp"})
	jws, _ := sig.Sign(body)
	tok, _ := jws.CompactSerialize()
	for _, tc := range []struct {
		name  string
		check func(context.Context, map[string]any) error
	}{{"signature", nil}, {"signature+grant", s.CheckToken}} {
		v, err := oauth.NewVerifier(ctx, oauth.VerifierOptions{Issuer: s.issuer, Resource: s.resource, KeySet: s.KeySet(), Check: tc.check})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Without a host sign-in URL the authorize endpoint sends the browser to
// a page of switchboard's own that says sign-in is not set up; with one,
// to the host's page with the request id (its own query kept).
func TestLoginURL(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	if got := s.loginURL("sbr_1"); got != "https://app.example/oauth/login?request=sbr_1" {
		t.Fatalf("loginURL without a host page = %s", got)
	}
	rec := httptest.NewRecorder()
	s.Routes()[LoginPath].ServeHTTP(rec, httptest.NewRequest(http.MethodGet, LoginPath+"?request=sbr_1", nil))
	if body := rec.Body.String(); rec.Code != http.StatusServiceUnavailable || !strings.Contains(body, "--oauth-login-url") ||
		!strings.Contains(body, "Sign in as a user") || !strings.Contains(body, "switchboard login") {
		t.Fatalf("login page: %d %s", rec.Code, rec.Body)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := New(Options{Store: st, Issuer: "https://app.example", Resource: "https://app.example/mcp", LoginURL: "https://app.example/sign-in?from=agents"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.loginURL("sbr_1"); got != "https://app.example/sign-in?from=agents&request=sbr_1" {
		t.Fatalf("loginURL = %s", got)
	}
	for _, bad := range []string{"/relative", "javascript:alert(1)", "https://app.example/#frag"} {
		if _, err := New(Options{Store: st, Issuer: "https://app.example", Resource: "https://app.example/mcp", LoginURL: bad}); err == nil {
			t.Errorf("login URL %q accepted", bad)
		}
	}
}

// A client ID metadata document is never fetched from an address that
// reaches the daemon's own networks, however it is spelled.
func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "2606:4700::1111": true, "64:ff9b::5db8:d70e": true, "2002:5db8:d70e::1": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"0.0.0.0": false, "0.1.2.3": false, "255.255.255.255": false, "224.0.0.1": false,
		"100.100.100.200": false, "100.64.0.1": false, "192.0.0.170": false, "198.18.0.1": false,
		"::1": false, "::": false, "fe80::1": false, "fd00::1": false, "ff02::1": false,
		"::ffff:127.0.0.1": false, "::ffff:169.254.169.254": false,
		"64:ff9b::a9fe:a9fe": false, "64:ff9b::7f00:1": false, "64:ff9b:1::1": false,
		"2002:a9fe:a9fe::1": false, "2002:7f00:1::1": false, "2002:0a00:0001::1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("publicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

// The metadata client refuses such addresses before it connects.
func TestMetadataClientRefusesNonPublic(t *testing.T) {
	t.Parallel()
	c := publicOnlyClient()
	for _, u := range []string{"https://100.100.100.200/client.json", "https://[64:ff9b::a9fe:a9fe]/client.json", "https://[2002:7f00:1::1]/client.json"} {
		res, err := c.Get(u)
		if err == nil {
			res.Body.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "non-public address") {
			t.Errorf("GET %s: %v, want refused as non-public", u, err)
		}
	}
}

// Registration is open to anyone and every client is kept, so one source
// address registers at most a burst, then one client a second.
func TestRegistrationRateLimit(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := newTestServer(t, func() time.Time { return now })
	h := s.Routes()[RegisterPath]
	register := func(remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/oauth/register", strings.NewReader(`{"client_name":"Flood","redirect_uris":["https://flood.example/cb"]}`))
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := range registrationRate.Burst {
		if rec := register("203.0.113.7:4000"); rec.Code != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if rec := register("203.0.113.7:4001"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("past the burst: %d %q, want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := register("[2001:db8::1]:4000"); rec.Code != http.StatusCreated {
		t.Errorf("another address: %d, want 201", rec.Code)
	}
	now = now.Add(time.Second)
	if rec := register("203.0.113.7:4000"); rec.Code != http.StatusCreated {
		t.Errorf("a second later: %d, want 201", rec.Code)
	}
}

func TestSourceKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"203.0.113.7:1": "203.0.113.7", "[::ffff:203.0.113.7]:1": "203.0.113.7",
		"[2001:db8:1:2:3:4:5:6]:1": "2001:db8:1:2::/64", "[2001:db8:1:2::9]:2": "2001:db8:1:2::/64",
	} {
		if got := sourceKey(in); got != want {
			t.Errorf("sourceKey(%s) = %q, want %q", in, got, want)
		}
	}
}
