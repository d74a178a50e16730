package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/oidctest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestMCPOAuthExternalIssuer: the official TypeScript MCP SDK client,
// given only /mcp's URL, completes the OAuth flow against an external
// OpenID provider (oidctest: zitadel/oidc's OP, a real implementation in
// Go): it finds the issuer in /mcp's protected-resource metadata,
// discovers the issuer's endpoints, and sends the browser (real
// Chromium) to the provider's login form, where alice signs in with her
// password; the provider redirects to the client's loopback URI with the
// code, the client redeems it with its PKCE verifier as the provider's
// pre-registered public client (the provider has no dynamic
// registration), and then lists tools and calls one as user:alice with
// the provider's JWT access token, which the daemon verifies against the
// provider's JWKS.
func TestMCPOAuthExternalIssuer(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser end-to-end tests: %s not found", chromium)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed")
	}
	if _, err := os.Stat(filepath.Join(mcpOAuthClient, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skipf("skipping: the MCP SDK client is not installed (%v); run e2e/testdata/mcp-oauth-client/build.sh", err)
	}
	ctx := context.Background()

	// The provider issues tokens for /mcp's URL, which must be known
	// before it starts, and the daemon needs the provider's issuer.
	srv := httptest.NewUnstartedServer(nil)
	daemonURL := "http://" + srv.Listener.Addr().String()
	op := oidctest.Start(t, daemonURL+"/mcp")

	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken,
		OAuth: daemon.OAuthOptions{Resource: daemonURL + "/mcp", Issuer: op.Issuer}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.RegisterFunc(ctx, switchboard.Tool{Name: "auth.whoami", Description: "Who the call acts for.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ json.RawMessage) (any, error) {
			p, _ := switchboard.PrincipalFrom(ctx)
			return map[string]string{"caller": p.String(), "actsFor": p.ActsFor()}, nil
		}); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })

	e := &env{t: t, d: d, srv: srv, admin: client.New(daemonURL, adminToken, nil)}
	browser := startChromium(t, e)

	alice := startNodeClient(t, daemonURL+"/mcp", "call", oidctest.ClientID)
	var authorize string
	_ = json.Unmarshal(alice.next(t, "authorize"), &authorize)
	if !strings.HasPrefix(authorize, op.Issuer+"/") || !strings.Contains(authorize, "client_id="+oidctest.ClientID) ||
		!strings.Contains(authorize, "code_challenge_method=S256") {
		t.Fatalf("the SDK authorizes at %s, want the provider %s with PKCE", authorize, op.Issuer)
	}

	// The provider's own login form: a username and a password.
	do(t, browser, chromedp.Navigate(authorize))
	poll(t, browser, `document.getElementById("password") !== null`)
	do(t, browser,
		chromedp.SendKeys("#username", "alice"),
		chromedp.SendKeys("#password", oidctest.Password),
		chromedp.Click(`button[type="submit"]`))
	poll(t, browser, `document.getElementById("done") !== null`) // the client's loopback redirect page

	var ready struct {
		Tools  []string
		Whoami string
	}
	if err := json.Unmarshal(alice.next(t, "ready"), &ready); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(ready.Tools, " "), "auth-whoami") || !strings.Contains(ready.Whoami, `"actsFor":"user:alice"`) ||
		!strings.Contains(ready.Whoami, `"caller":"agent:oauth-`+oidctest.ClientID) {
		t.Fatalf("alice's client: %+v", ready)
	}
}
