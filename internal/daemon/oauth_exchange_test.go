package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/oidctest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestOAuthTokenExchangeToBackend: a binding with tokenExchange sends its
// backend the identity provider's own token for the user the MCP client
// acts for, exchanged (RFC 8693, at a real OpenID provider) from the
// client's access token: the backend verifies it against the provider's
// keys and finds the user in sub, its own API in aud and the daemon in
// act, beside the daemon's assertion. The exchanged token is reused while
// it is fresh. A caller with no OAuth token (the admin over MCP), and an
// audience the provider will not exchange for, fail with UNAUTHORIZED
// and never reach the backend; a binding that sets its own Authorization
// beside tokenExchange is refused at registration.
func TestOAuthTokenExchangeToBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + "/mcp"
	op := oidctest.Start(t, resource)

	provider, err := oidc.NewProvider(ctx, op.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: oidctest.ExchangeAudience})
	type seen struct {
		sub, act, scope, token string
		assertion              bool
	}
	var mu sync.Mutex
	var calls []seen
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, "no bearer token", http.StatusUnauthorized)
			return
		}
		tok, err := verifier.Verify(r.Context(), raw)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var c struct {
			Act   struct{ Sub string } `json:"act"`
			Scope string               `json:"scope"`
		}
		_ = tok.Claims(&c)
		mu.Lock()
		calls = append(calls, seen{tok.Subject, c.Act.Sub, c.Scope, raw, r.Header.Get("Switchboard-Assertion") != ""})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"owner": tok.Subject})
	}))
	defer backend.Close()

	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken, OAuth: daemon.OAuthOptions{
		Resource: resource, Issuer: op.Issuer, ExchangeClientID: oidctest.ExchangeClientID, ExchangeClientSecret: oidctest.ExchangeSecret}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(srv.Close)

	admin := client.New(srv.URL, mcpToken, nil)
	tool := func(name, audience string, headers map[string]switchboard.HeaderValue) switchboard.Tool {
		return switchboard.Tool{Name: name, Description: "The caller's contacts in the CRM.", Class: switchboard.ClassRead,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: backend.URL + "/contacts", Headers: headers,
				TokenExchange: &switchboard.TokenExchange{Audience: audience, Scopes: []string{"contacts:read"}}}}}
	}
	if _, err := admin.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{
		tool("crm.contacts", oidctest.ExchangeAudience, nil), tool("crm.elsewhere", "https://other.example.test", nil)}); err != nil {
		t.Fatal(err)
	}
	bad := []switchboard.Tool{tool("crm.both", oidctest.ExchangeAudience, map[string]switchboard.HeaderValue{"Authorization": {Env: "CRM_KEY"}}),
		tool("crm.noaud", "", nil)}
	for _, b := range bad {
		if _, err := admin.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{b}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("registering %s: %v, want INVALID_INPUT", b.Name, err)
		}
	}

	connect := func(token string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, name string) (string, bool) {
		out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out.Content)
		return string(b), out.IsError
	}

	alice := connect(op.Token(t, "alice", "mcp"))
	for range 2 {
		if out, isErr := call(alice, "crm-contacts"); isErr || !strings.Contains(out, `\"owner\":\"alice\"`) {
			t.Fatalf("alice's call: %s", out)
		}
	}
	mu.Lock()
	got := append([]seen(nil), calls...)
	mu.Unlock()
	if len(got) != 2 || got[0].sub != "alice" || got[0].act != oidctest.ExchangeClientID || got[0].scope != "contacts:read" || !got[0].assertion {
		t.Fatalf("the backend saw %+v; want alice's exchanged token, acted by %s, with the assertion", got, oidctest.ExchangeClientID)
	}
	if got[0].token != got[1].token {
		t.Error("the second call exchanged again; a fresh exchanged token is reused")
	}

	if out, isErr := call(alice, "crm-elsewhere"); !isErr || !strings.Contains(out, "UNAUTHORIZED") || !strings.Contains(out, "invalid_target") {
		t.Errorf("an audience the provider refuses: %s", out)
	}
	if out, isErr := call(connect(mcpToken), "crm-contacts"); !isErr || !strings.Contains(out, "UNAUTHORIZED") || !strings.Contains(out, "none to exchange") {
		t.Errorf("the admin over MCP (no OAuth token): %s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Errorf("the backend ran %d times; the refused calls must not reach it", len(calls))
	}
}
