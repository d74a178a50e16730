package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/oidctest"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/sqlite"
)

// oauthDaemon serves a daemon whose /mcp is an OAuth resource at its own
// URL, with o's other settings; it returns the server.
func oauthDaemon(t *testing.T, o daemon.OAuthOptions) (*httptest.Server, *daemon.Daemon) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	o.Resource = "http://" + srv.Listener.Addr().String() + "/mcp"
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken, OAuth: o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, d
}

// Both RFC 9728 locations serve the metadata without a token, naming the
// resource as clients reach it.
func TestOAuthProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	srv, _ := oauthDaemon(t, daemon.OAuthOptions{})
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var m oauthex.ProtectedResourceMetadata
		err = json.NewDecoder(res.Body).Decode(&m)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, res.StatusCode, err)
		}
		if m.Resource != srv.URL+"/mcp" || len(m.ScopesSupported) != 1 || m.ScopesSupported[0] != "mcp" {
			t.Fatalf("GET %s: %+v", path, m)
		}
		// No external issuer: the embedded authorization server, at the
		// daemon's own URL.
		if len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != srv.URL {
			t.Fatalf("no issuer is configured, yet the metadata names %v, not the daemon itself", m.AuthorizationServers)
		}
	}
}

// A 401 from /mcp tells a client where to find the resource metadata (the
// MCP authorization spec's discovery), with error="invalid_token" when a
// token was presented and none when not; the admin token and agent tokens
// keep working, and a browser session token is still refused.
func TestOAuthChallengeOnMCP(t *testing.T) {
	t.Parallel()
	srv, d := oauthDaemon(t, daemon.OAuthOptions{})
	meta := `resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource/mcp"`
	post := func(token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for _, tc := range []struct {
		name, token, want string
	}{
		{"no token", "", `Bearer scope="mcp", ` + meta},
		{"foreign token", "not-ours", `Bearer error="invalid_token", error_description="the bearer token is not valid for this daemon", scope="mcp", ` + meta},
		// A JWT goes to the embedded authorization server's verifier, which names why it refused.
		{"forged JWT", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.", `Bearer error="invalid_token", error_description="the access token is not valid for this resource: malformed jwt: unexpected signature algorithm  none `},
	} {
		res := post(tc.token)
		if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized || (h != tc.want && !(strings.HasPrefix(h, tc.want) && strings.HasSuffix(h, meta))) {
			t.Errorf("%s: %d %q, want 401 %q", tc.name, res.StatusCode, res.Header.Get("WWW-Authenticate"), tc.want)
		}
	}
	tok, err := d.Tokens.Create(t.Context(), scope.TokenRequest{Agent: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{mcpToken, tok.Token} {
		c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatalf("token %.8s…: %v", token, err)
		}
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		cs.Close()
	}
}

// With --oauth-issuer, a token the issuer gave alice's MCP client through
// the authorization-code flow lists and calls tools as that client acting
// for user:alice; a token without the mcp scope is 403 insufficient_scope
// naming it, at /mcp and at /a2a; a token for another resource is 401
// invalid_token.
func TestOAuthExternalIssuer(t *testing.T) {
	t.Parallel()
	// The daemon's URL must be known before the provider issues tokens
	// for it, and the provider's before the daemon starts.
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + "/mcp"
	op := oidctest.Start(t, resource)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken, OAuth: daemon.OAuthOptions{Resource: resource, Issuer: op.Issuer}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "auth.whoami", Description: "Who the call acts for.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ json.RawMessage) (any, error) {
			p, _ := switchboard.PrincipalFrom(ctx)
			return map[string]string{"caller": p.String(), "actsFor": p.ActsFor()}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(srv.Close)

	var m oauthex.ProtectedResourceMetadata
	res, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&m)
	res.Body.Close()
	if len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != op.Issuer {
		t.Fatalf("metadata names authorization servers %v, want [%s]", m.AuthorizationServers, op.Issuer)
	}

	c := mcp.NewClient(&mcp.Implementation{Name: "alice-desktop", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: &http.Client{Transport: bearer{op.Token(t, "alice", "mcp")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "auth-whoami", Arguments: map[string]any{}})
	if err != nil || out.IsError {
		t.Fatalf("whoami: %v %+v", err, out)
	}
	got, _ := json.Marshal(out.Content)
	if s := string(got); !strings.Contains(s, `user:alice`) || !strings.Contains(s, `agent:oauth-`+oidctest.ClientID) {
		t.Fatalf("whoami = %s, want the agent oauth-%s acting for user:alice", s, oidctest.ClientID)
	}

	meta := `resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource/mcp"`
	post := func(token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res = post(op.Token(t, "alice")) // signed in, but never granted mcp
	if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusForbidden ||
		!strings.HasPrefix(h, `Bearer error="insufficient_scope", `) || !strings.HasSuffix(h, `scope="mcp", `+meta) {
		t.Fatalf("token without mcp: %d %q", res.StatusCode, h)
	}
	other := oidctest.Start(t, "https://elsewhere.example.com/mcp") // a token for another API
	res = post(other.Token(t, "alice", "mcp"))
	if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(h, `Bearer error="invalid_token", `) {
		t.Fatalf("token for another resource: %d %q", res.StatusCode, h)
	}

	// /a2a takes an access token only with the scope /mcp requires: a
	// token its user never granted mcp acts for nobody there either.
	list := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/a2a", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("WWW-Authenticate")
	}
	if code, _ := list(op.Token(t, "alice", "mcp")); code != http.StatusOK {
		t.Fatalf("a2a, token with mcp: %d, want 200", code)
	}
	if code, h := list(op.Token(t, "alice")); code != http.StatusForbidden || !strings.Contains(h, `error="insufficient_scope"`) {
		t.Fatalf("a2a, token without mcp: %d %q, want 403 insufficient_scope", code, h)
	}
}
