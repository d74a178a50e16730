package daemon_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// The host app's sign-in page, as the embedded server knows it; the
// tests play the host's backend themselves.
const hostLogin = "https://app.example/sign-in"

// asReplica is one daemon serving the embedded authorization server.
type asReplica struct {
	srv *httptest.Server
	d   *daemon.Daemon
}

// embeddedReplicas starts n daemons over one store (opened once per
// daemon, as separate processes would), all at the first one's public
// URL: a token any of them issued works at all of them.
func embeddedReplicas(t *testing.T, st durable, n int) []asReplica {
	t.Helper()
	var out []asReplica
	resource := ""
	for i := range n {
		srv := httptest.NewUnstartedServer(nil)
		if i == 0 {
			resource = "http://" + srv.Listener.Addr().String() + "/mcp"
		}
		store := st.open(t)
		t.Cleanup(func() { store.Close() })
		d, err := daemon.New(context.Background(), daemon.Options{Store: store, AdminToken: mcpToken,
			OAuth: daemon.OAuthOptions{Resource: resource, LoginURL: hostLogin}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		registerWhoami(t, d)
		srv.Config.Handler = d.Handler()
		srv.Start()
		t.Cleanup(srv.Close)
		out = append(out, asReplica{srv, d})
	}
	return out
}

// registerWhoami registers auth.whoami, which answers who the call acts
// for (a replica over a store that has it already is fine).
func registerWhoami(t *testing.T, d *daemon.Daemon) {
	t.Helper()
	err := d.RegisterFunc(context.Background(), switchboard.Tool{Name: "auth.whoami", Description: "Who the call acts for.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ json.RawMessage) (any, error) {
			p, _ := switchboard.PrincipalFrom(ctx)
			return map[string]string{"caller": p.String(), "actsFor": p.ActsFor()}, nil
		})
	if err != nil && switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatal(err)
	}
}

// flow drives the embedded server as an MCP client, a browser and the
// host's backend would, over real HTTP.
type flow struct {
	t        *testing.T
	base     string // the issuer
	client   string
	redirect string
	scope    string       // "mcp" when empty
	resource string       // base + /mcp when empty
	hc       *http.Client // never follows redirects: each hop is checked
}

func newFlow(t *testing.T, base string) *flow {
	return &flow{t: t, base: base, redirect: "http://127.0.0.1:7777/callback",
		hc: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (f *flow) postJSON(path, token string, body any) (int, map[string]any) {
	f.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return f.do(req)
}

func (f *flow) do(req *http.Request) (int, map[string]any) {
	f.t.Helper()
	res, err := f.hc.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

func (f *flow) form(path string, v url.Values) (int, map[string]any) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return f.do(req)
}

func (f *flow) register(name string) {
	f.t.Helper()
	code, m := f.postJSON("/oauth/register", "", map[string]any{"client_name": name, "redirect_uris": []string{f.redirect},
		"token_endpoint_auth_method": "client_secret_post", "grant_types": []string{"authorization_code", "refresh_token"}})
	if code != http.StatusCreated || m["token_endpoint_auth_method"] != "none" {
		f.t.Fatalf("register: %d %v", code, m)
	}
	f.client = m["client_id"].(string)
}

func pkce() (verifier, challenge string) {
	verifier = rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorize sends the authorization request and returns the response.
func (f *flow) authorize(q url.Values) *http.Response {
	f.t.Helper()
	res, err := f.hc.Get(f.base + "/oauth/authorize?" + q.Encode())
	if err != nil {
		f.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func (f *flow) params(challenge string) url.Values {
	return url.Values{"client_id": {f.client}, "redirect_uri": {f.redirect}, "response_type": {"code"}, "state": {"st-1"},
		"scope": {cmp.Or(f.scope, "mcp")}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {f.audience()}}
}

// audience is the resource the flow's tokens are for.
func (f *flow) audience() string { return cmp.Or(f.resource, f.base+"/mcp") }

// signIn starts an authorization and plays the host: its sign-in page
// gets ?request=, its backend vouches for user with the admin token and
// gets the consent URL.
func (f *flow) signIn(user, challenge string) string {
	f.t.Helper()
	res := f.authorize(f.params(challenge))
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), hostLogin+"?") || loc.Query().Get("request") == "" {
		f.t.Fatalf("authorize: %d, Location %q, want the host's sign-in page", res.StatusCode, res.Header.Get("Location"))
	}
	code, m := f.postJSON("/api/v1/oauth/signins", mcpToken, map[string]string{"request": loc.Query().Get("request"), "user": user})
	if code != http.StatusCreated {
		f.t.Fatalf("signins: %d %v", code, m)
	}
	return m["url"].(string)
}

// consent loads the consent page, then answers it; it returns the
// redirect to the client.
func (f *flow) consent(consentURL, decision string) *url.URL {
	f.t.Helper()
	res, err := f.hc.Get(consentURL)
	if err != nil {
		f.t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "Allow") {
		f.t.Fatalf("consent page: %d %s", res.StatusCode, page)
	}
	ticket := regexp.MustCompile(`name="ticket" value="([^"]+)"`).FindStringSubmatch(string(page))
	res, err = f.hc.PostForm(f.base+"/oauth/consent", url.Values{"ticket": {ticket[1]}, "decision": {decision}})
	if err != nil {
		f.t.Fatal(err)
	}
	res.Body.Close()
	for res.StatusCode/100 == 3 && strings.HasPrefix(res.Header.Get("Location"), f.base) && !strings.HasPrefix(res.Header.Get("Location"), f.redirect+"?") {
		if res, err = f.hc.Get(res.Header.Get("Location")); err != nil {
			f.t.Fatal(err)
		}
		res.Body.Close()
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	if loc == nil || !strings.HasPrefix(loc.String(), f.redirect+"?") {
		f.t.Fatalf("after consent: %d, Location %q, want the client's redirect URI", res.StatusCode, res.Header.Get("Location"))
	}
	return loc
}

// code runs the whole front channel for user and returns a code and its
// PKCE verifier.
func (f *flow) code(user string) (code, verifier string) {
	f.t.Helper()
	verifier, challenge := pkce()
	loc := f.consent(f.signIn(user, challenge), "approve")
	if loc.Query().Get("state") != "st-1" || loc.Query().Get("code") == "" {
		f.t.Fatalf("redirect %s: want the code and the state", loc)
	}
	return loc.Query().Get("code"), verifier
}

func (f *flow) exchange(code, verifier string) (int, map[string]any) {
	f.t.Helper()
	return f.form("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.redirect},
		"client_id": {f.client}, "code_verifier": {verifier}, "resource": {f.audience()}})
}

func (f *flow) tokens(user string) (access, refresh string) {
	f.t.Helper()
	code, m := f.exchange(f.code(user))
	if code != http.StatusOK || m["access_token"] == nil || m["refresh_token"] == nil {
		f.t.Fatalf("token: %d %v", code, m)
	}
	return m["access_token"].(string), m["refresh_token"].(string)
}

func (f *flow) refresh(rt string) (int, map[string]any) {
	f.t.Helper()
	return f.form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {f.client}})
}

// whoami calls the tool over MCP with token at base and returns who it
// ran as, or the error.
func whoami(t *testing.T, base, token string) (string, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	out, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "auth-whoami", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(out.Content)
	return string(b), nil
}

// mcpStatus posts a ping to /mcp with token and returns the status and
// challenge.
func mcpStatus(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("WWW-Authenticate")
}

// The embedded authorization server, on SQLite and Postgres, with two
// replicas over one store: a client registers (RFC 7591), the host signs
// alice in, she approves, the client exchanges the code with PKCE for
// tokens audience-bound to /mcp, and its calls run as agent:oauth-<client>
// acting for user:alice on either replica; the refresh token rotates;
// revoking the grant (the user's tab, or the operator) stops the next
// call on the other replica.
func TestOAuthEmbeddedFlow(t *testing.T) {
	t.Parallel()
	for _, st := range durables(t) {
		t.Run(st.name, func(t *testing.T) {
			rs := embeddedReplicas(t, st, 2)
			a, b := rs[0], rs[1]
			base := a.srv.URL

			var asm map[string]any
			res, err := http.Get(base + "/.well-known/oauth-authorization-server")
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(res.Body).Decode(&asm)
			res.Body.Close()
			if asm["issuer"] != base || asm["registration_endpoint"] != base+"/oauth/register" ||
				asm["client_id_metadata_document_supported"] != true || !strings.Contains(jsonOf(asm["code_challenge_methods_supported"]), `"S256"`) ||
				strings.Contains(jsonOf(asm["code_challenge_methods_supported"]), "plain") {
				t.Fatalf("authorization server metadata: %v", asm)
			}
			var prm oauthex.ProtectedResourceMetadata
			res, err = http.Get(base + "/.well-known/oauth-protected-resource/mcp")
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(res.Body).Decode(&prm)
			res.Body.Close()
			if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != base {
				t.Fatalf("protected resource metadata names %v, want [%s]", prm.AuthorizationServers, base)
			}

			f := newFlow(t, base)
			f.register("Alice's desktop client")
			access, refresh := f.tokens("user:alice")
			for _, r := range rs {
				got, err := whoami(t, r.srv.URL, access)
				if err != nil || !strings.Contains(got, `user:alice`) || !strings.Contains(got, `agent:oauth-`+f.client) {
					t.Fatalf("whoami at %s = %s %v, want agent:oauth-%s acting for user:alice", r.srv.URL, got, err, f.client)
				}
			}

			// Rotation: the new refresh token works, the old one is used up,
			// and presenting it again revokes the grant.
			code, m := f.refresh(refresh)
			if code != http.StatusOK || m["refresh_token"] == nil || m["refresh_token"] == refresh {
				t.Fatalf("refresh: %d %v", code, m)
			}
			access2, refresh2 := m["access_token"].(string), m["refresh_token"].(string)
			if got, err := whoami(t, b.srv.URL, access2); err != nil || !strings.Contains(got, "user:alice") {
				t.Fatalf("refreshed token: %s %v", got, err)
			}

			// Grants: alice's tab sees hers, bob's tab neither sees nor
			// revokes it, the operator sees all.
			aliceTab, bobTab := openTab(t, base, "user:alice"), openTab(t, base, "user:bob")
			grants := listGrants(t, base, aliceTab)
			if len(grants) != 1 || grants[0]["user"] != "user:alice" || grants[0]["client"] != f.client || grants[0]["clientName"] != "Alice's desktop client" {
				t.Fatalf("alice's grants: %v", grants)
			}
			gid := grants[0]["id"].(string)
			if g := listGrants(t, base, bobTab); len(g) != 0 {
				t.Fatalf("bob sees grants %v", g)
			}
			if g := listGrants(t, base, mcpToken); len(g) != 1 {
				t.Fatalf("operator sees grants %v", g)
			}
			if code := deleteGrant(t, base, bobTab, gid); code != http.StatusNotFound {
				t.Fatalf("bob revoking alice's grant: %d, want 404", code)
			}
			if code := deleteGrant(t, base, access2, gid); code != http.StatusForbidden {
				t.Fatalf("the OAuth client revoking its own user's grant: %d, want 403", code)
			}

			// Revoked mid-session: an MCP session open at replica B, the
			// grant revoked through replica A, B refuses the next call.
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: b.srv.URL + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{access2}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "auth-whoami", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			if code := deleteGrant(t, base, aliceTab, gid); code != http.StatusOK {
				t.Fatalf("alice revoking her grant: %d", code)
			}
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "auth-whoami", Arguments: map[string]any{}}); err == nil {
				t.Fatal("a call after the grant was revoked ran")
			}
			if code, h := mcpStatus(t, b.srv.URL, access2); code != http.StatusUnauthorized || !strings.Contains(h, `error="invalid_token"`) || !strings.Contains(h, "revoked") {
				t.Fatalf("revoked grant at replica B: %d %q", code, h)
			}
			if code, m := f.refresh(refresh2); code != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Fatalf("refresh after revocation: %d %v", code, m)
			}

			// A used refresh token presented again revokes its grant.
			access3, refresh3 := f.tokens("user:alice")
			if code, _ := f.refresh(refresh3); code != http.StatusOK {
				t.Fatal("refresh failed")
			}
			if code, m := f.refresh(refresh3); code != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Fatalf("reused refresh token: %d %v", code, m)
			}
			if code, _ := mcpStatus(t, base, access3); code != http.StatusUnauthorized {
				t.Fatalf("after refresh-token reuse the grant's access token still works: %d", code)
			}

			// RFC 7009: the client revokes its refresh token; its grant ends.
			access4, refresh4 := f.tokens("user:alice")
			if code, m := f.form("/oauth/revoke", url.Values{"token": {refresh4}, "client_id": {f.client}}); code != http.StatusOK {
				t.Fatalf("revoke: %d %v", code, m)
			}
			if code, _ := mcpStatus(t, b.srv.URL, access4); code != http.StatusUnauthorized {
				t.Fatalf("after RFC 7009 revocation: %d", code)
			}
			access5, _ := f.tokens("user:alice") // an access token revoked ends its grant too
			if code, m := f.form("/oauth/revoke", url.Values{"token": {access5}, "token_type_hint": {"access_token"}, "client_id": {f.client}}); code != http.StatusOK {
				t.Fatalf("revoke an access token: %d %v", code, m)
			}
			if code, _ := mcpStatus(t, b.srv.URL, access5); code != http.StatusUnauthorized {
				t.Fatalf("after revoking the access token: %d", code)
			}
			other := newFlow(t, base)
			other.register("Another client")
			access6, _ := f.tokens("user:alice")
			if code, m := other.form("/oauth/revoke", url.Values{"token": {access6}, "client_id": {other.client}}); code != http.StatusUnauthorized || m["error"] != "invalid_client" {
				t.Fatalf("another client revoking alice's token: %d %v", code, m)
			}
			if code, _ := mcpStatus(t, base, access6); code != http.StatusOK {
				t.Fatalf("a refused revocation revoked: %d", code)
			}
			if code, _ := f.form("/oauth/revoke", url.Values{"token": {"never-issued"}, "client_id": {f.client}}); code != http.StatusOK {
				t.Fatalf("revoking an unknown token: %d, want 200 (RFC 7009 §2.2)", code)
			}

			// The ledger tells the story: who granted, who revoked and why.
			cl := client.New(base, mcpToken, nil)
			verbs := map[string][]string{}
			for _, verb := range []string{"oauth.grant", "oauth.revoke"} {
				page, err := cl.Activity(t.Context(), client.ActivityQuery{Verb: verb, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range page.Items {
					verbs[verb] = append(verbs[verb], e.Actor+" "+e.Target+" "+string(e.Details))
				}
			}
			if g := strings.Join(verbs["oauth.grant"], "\n"); len(verbs["oauth.grant"]) != len(listGrants(t, base, mcpToken)) || !strings.Contains(g, "user:alice agent:oauth-"+f.client) {
				t.Fatalf("oauth.grant entries:\n%s", g)
			}
			r := strings.Join(verbs["oauth.revoke"], "\n")
			for _, want := range []string{`user:alice agent:oauth-` + f.client, `"override":false`, `system agent:oauth-` + f.client, `a reused refresh token`,
				`agent:oauth-` + f.client + ` agent:oauth-` + f.client, `RFC 7009`} {
				if !strings.Contains(r, want) {
					t.Fatalf("oauth.revoke entries lack %q:\n%s", want, r)
				}
			}

			// The operator's tokens keep working beside OAuth.
			if got, err := whoami(t, b.srv.URL, mcpToken); err != nil || !strings.Contains(got, "user:admin") {
				t.Fatalf("admin token: %s %v", got, err)
			}
		})
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func openTab(t *testing.T, base, user string) string {
	t.Helper()
	f := newFlow(t, base)
	code, m := f.postJSON("/api/v1/sessions", mcpToken, map[string]string{"principal": user})
	if code != http.StatusCreated {
		t.Fatalf("open a tab for %s: %d %v", user, code, m)
	}
	return m["sessionToken"].(string)
}

func listGrants(t *testing.T, base, token string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/oauth/grants", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("list grants: %d %v", res.StatusCode, err)
	}
	return out.Items
}

func deleteGrant(t *testing.T, base, token, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/api/v1/oauth/grants/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A refresh may narrow a token's scopes, never widen them: a tools:
// scope narrows, so a refresh asking for "mcp" alone keeps the grant's
// tools: narrowing instead of handing out a token for every tool.
func TestOAuthRefreshKeepsToolNarrowing(t *testing.T) {
	t.Parallel()
	rs := embeddedReplicas(t, durables(t)[0], 1)
	f := newFlow(t, rs[0].srv.URL)
	f.scope = "mcp tools:tasks.*"
	f.register("Narrow Client")
	_, refresh := f.tokens("user:alice")
	code, m := f.form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {f.client}, "scope": {"mcp"}})
	if code != http.StatusOK {
		t.Fatalf("refresh: %d %v", code, m)
	}
	if m["scope"] != "mcp tools:tasks.*" {
		t.Errorf("refresh asking for mcp alone: scope %q, want the grant's narrowing kept", m["scope"])
	}
	access := m["access_token"].(string)
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(access, ".")[1])
	var claims struct {
		Scope string `json:"scope"`
	}
	_ = json.Unmarshal(payload, &claims)
	if claims.Scope != "mcp tools:tasks.*" {
		t.Errorf("access token scope %q, want mcp tools:tasks.*", claims.Scope)
	}
	// The rotated refresh token keeps it too.
	code, m = f.refresh(m["refresh_token"].(string))
	if code != http.StatusOK || m["scope"] != "mcp tools:tasks.*" {
		t.Errorf("second refresh: %d %v", code, m)
	}
}
