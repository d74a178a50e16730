package daemon_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// lockedBuffer is a daemon's log, written from its handlers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// loggedReplica is one daemon serving the embedded authorization server,
// its log kept.
func loggedReplica(t *testing.T, st durable) (base string, log *lockedBuffer) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	store := st.open(t)
	t.Cleanup(func() { store.Close() })
	log = &lockedBuffer{}
	d, err := daemon.New(context.Background(), daemon.Options{Store: store, AdminToken: mcpToken, Logger: slog.New(slog.NewTextHandler(log, nil)),
		OAuth: daemon.OAuthOptions{Resource: "http://" + srv.Listener.Addr().String() + "/mcp", LoginURL: hostLogin}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	registerWhoami(t, d)
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, log
}

// revokeEntries are the ledger's oauth.revoke entries, as actor and
// details.
func revokeEntries(t *testing.T, base string) []string {
	t.Helper()
	page, err := client.New(base, mcpToken, nil).Activity(t.Context(), client.ActivityQuery{Verb: "oauth.revoke", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range page.Items {
		out = append(out, e.Actor+" "+string(e.Details))
	}
	return out
}

// What an MCP client meets after its user or the operator revoked its
// grant: its next refresh, with a refresh token it never used, is
// invalid_grant saying the grant was revoked, however often it retries;
// no reuse alarm is raised and the ledger holds the one revocation that
// happened. Reuse detection is for a rotated-away token of a live grant
// (TestOAuthEmbeddedFlow). Along the way: the token responses carry no ID
// token and only the scope the client asked for, and the JWKS publishes
// the signing key before the first token is issued.
func TestOAuthEmbeddedRevokedGrantRefresh(t *testing.T) {
	t.Parallel()
	for _, st := range durables(t) {
		t.Run(st.name, func(t *testing.T) {
			base, log := loggedReplica(t, st)
			var jwks struct {
				Keys []struct {
					Kid string `json:"kid"`
				} `json:"keys"`
			}
			res, err := http.Get(base + "/oauth/jwks")
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(res.Body).Decode(&jwks)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || len(jwks.Keys) == 0 {
				t.Fatalf("the JWKS before any token: %d %+v, want the signing key", res.StatusCode, jwks)
			}

			f := newFlow(t, base)
			f.register("Revoked client")
			code, m := f.exchange(f.code("user:alice"))
			if code != http.StatusOK {
				t.Fatalf("token: %d %v", code, m)
			}
			checkTokenResponse(t, "code exchange", m)
			if kid := jwtHeader(t, m["access_token"].(string))["kid"]; kid != jwks.Keys[0].Kid {
				t.Errorf("the first token is signed with %v, not the key the JWKS published before it (%s)", kid, jwks.Keys[0].Kid)
			}
			code, m = f.refresh(m["refresh_token"].(string))
			if code != http.StatusOK {
				t.Fatalf("refresh: %d %v", code, m)
			}
			checkTokenResponse(t, "refresh", m)
			refresh := m["refresh_token"].(string)

			gid := listGrants(t, base, mcpToken)[0]["id"].(string)
			if c := deleteGrant(t, base, mcpToken, gid); c != http.StatusOK {
				t.Fatalf("the operator revoking: %d", c)
			}
			for i := range 3 { // the SDK's refresh, then its retries
				c, m := f.refresh(refresh)
				desc, _ := m["error_description"].(string)
				if c != http.StatusBadRequest || m["error"] != "invalid_grant" || !strings.Contains(desc, "revoked") || strings.Contains(desc, "used already") {
					t.Fatalf("refresh #%d after the revocation: %d %v, want invalid_grant saying the grant was revoked", i+1, c, m)
				}
			}
			// The client revokes its token (RFC 7009) and the operator
			// revokes again: both are fine, and change nothing.
			if c, m := f.form("/oauth/revoke", url.Values{"token": {refresh}, "client_id": {f.client}}); c != http.StatusOK {
				t.Fatalf("RFC 7009 revocation of a revoked grant's token: %d %v", c, m)
			}
			if c := deleteGrant(t, base, mcpToken, gid); c != http.StatusOK {
				t.Fatalf("revoking a revoked grant: %d", c)
			}
			if e := revokeEntries(t, base); len(e) != 1 || !strings.HasPrefix(e[0], "user:admin ") || !strings.Contains(e[0], `"override":true`) {
				t.Fatalf("oauth.revoke entries:\n%s\nwant the operator's one", strings.Join(e, "\n"))
			}
			if l := log.String(); strings.Contains(l, "reused") || !strings.Contains(l, `msg="OAuth token request refused" error=invalid_grant`) {
				t.Fatalf("the daemon's log:\n%s\nwant the refusals and no reuse alarm", l)
			}
		})
	}
}

// checkTokenResponse: an MCP client gets an access token and a refresh
// token for the scope it asked for (mcp), and no ID token: it signs no
// user in, and openid is not a scope here.
func checkTokenResponse(t *testing.T, name string, m map[string]any) {
	t.Helper()
	if m["id_token"] != nil || m["scope"] != "mcp" || m["refresh_token"] == nil || m["token_type"] != "Bearer" {
		t.Errorf("%s answered %v, want a Bearer token and a refresh token with scope mcp and no id_token", name, m)
	}
}

func jwtHeader(t *testing.T, jwt string) map[string]any {
	t.Helper()
	h, _, _ := strings.Cut(jwt, ".")
	b, err := base64.RawURLEncoding.DecodeString(h)
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("not a JWT: %.40s", jwt)
	}
	return m
}

// Every refusal of the token and revocation endpoints says what went
// wrong in error_description (the MCP SDKs show it to the user), with
// the error code the specs name.
func TestOAuthEmbeddedRefusalsDescribed(t *testing.T) {
	t.Parallel()
	base, _ := loggedReplica(t, durables(t)[0])
	f := newFlow(t, base)
	f.register("Described client")
	other := newFlow(t, base)
	other.register("Another client")
	_, refresh := f.tokens("user:alice")
	replayed, replayedVerifier := f.code("user:alice")
	if c, m := f.exchange(replayed, replayedVerifier); c != http.StatusOK {
		t.Fatalf("exchange: %d %v", c, m)
	}
	code, verifier := f.code("user:alice")
	token := func(v url.Values) url.Values {
		v.Set("client_id", f.client)
		return v
	}
	for _, tc := range []struct {
		name, path string
		form       url.Values
		status     int
		error      string
		says       string
	}{
		{"no grant_type", "/oauth/token", token(url.Values{}), 400, "invalid_request", "grant_type is required"},
		{"the password grant", "/oauth/token", token(url.Values{"grant_type": {"password"}}), 400, "unsupported_grant_type", "authorization_code or refresh_token"},
		{"an unknown refresh token", "/oauth/token", token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"never-issued"}}), 400, "invalid_grant", "unknown refresh token"},
		{"another client's refresh token", "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {other.client}}, 400, "invalid_grant", "not issued to this client_id"},
		{"an unknown client", "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"sbc_unknown"}}, 401, "invalid_client", "unknown client_id"},
		{"no client_id", "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, 401, "invalid_client", "client_id"},
		{"a replayed code", "/oauth/token", token(url.Values{"grant_type": {"authorization_code"}, "code": {replayed}, "redirect_uri": {f.redirect}, "code_verifier": {replayedVerifier}}), 400, "invalid_grant", "used already"},
		{"an unknown code", "/oauth/token", token(url.Values{"grant_type": {"authorization_code"}, "code": {"never-issued"}, "redirect_uri": {f.redirect}, "code_verifier": {verifier}}), 400, "invalid_grant", "unknown authorization code"},
		{"a PKCE mismatch", "/oauth/token", token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.redirect}, "code_verifier": {verifier + "x"}}), 400, "invalid_grant", "code_verifier"},
		{"revoking without client_id", "/oauth/revoke", url.Values{"token": {refresh}}, 401, "invalid_client", "client_id is required"},
		{"revoking as an unknown client", "/oauth/revoke", url.Values{"token": {refresh}, "client_id": {"sbc_unknown"}}, 401, "invalid_client", "unknown client_id"},
		{"revoking with a secret", "/oauth/revoke", url.Values{"token": {refresh}, "client_id": {f.client}, "client_secret": {"s"}}, 401, "invalid_client", "no client_secret"},
	} {
		c, m := f.form(tc.path, tc.form)
		if desc, _ := m["error_description"].(string); c != tc.status || m["error"] != tc.error || !strings.Contains(desc, tc.says) {
			t.Errorf("%s: %d %v, want %d %s saying %q", tc.name, c, m, tc.status, tc.error, tc.says)
		}
	}
	// RFC 7009 §2.2: a known client revoking a token this server does not
	// know is 200; the grant of the refresh token above is still live.
	if c, m := f.form("/oauth/revoke", url.Values{"token": {"never-issued"}, "client_id": {f.client}}); c != http.StatusOK {
		t.Errorf("revoking an unknown token: %d %v, want 200", c, m)
	}
	if c, m := f.refresh(refresh); c != http.StatusOK {
		t.Errorf("the refresh token after the refusals above: %d %v", c, m)
	}
}
