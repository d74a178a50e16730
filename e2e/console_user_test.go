package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestConsoleSignedInAsUserInChromium: a person of the host app signs in
// to the console as themselves, through the daemon's embedded
// authorization server (the app's sign-in page vouches for alice, she
// approves on the consent page, the console trades the code for tokens).
// She sees her pending approvals and not bob's, live; approves hers and
// sees it run; sees her activity and agents, none of bob's, and none of
// the operator's parts; sees her grants on "Your access". An expired
// access token is renewed with the refresh token; revoking the console's
// own grant signs her out. The console's token is refused on /mcp and on
// operator routes. The operator, signing in after her in the same tab,
// sees everything again.
func TestConsoleSignedInAsUserInChromium(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser end-to-end tests: %s not found", chromium)
	}
	ctx := context.Background()

	// The host app's sign-in page, as --oauth-login-url: alice is the
	// app's signed-in user, so its backend vouches for her with the admin
	// token and sends the browser on to the consent page.
	var daemonURL string
	host := http.NewServeMux()
	hostSrv := httptest.NewServer(host)
	t.Cleanup(hostSrv.Close)
	host.HandleFunc("GET /sign-in", func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(map[string]string{"request": r.URL.Query().Get("request"), "user": "user:alice"})
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, daemonURL+"/api/v1/oauth/signins", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		var out struct{ URL string }
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
			http.Error(w, "the sign-in link has expired", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, out.URL, http.StatusSeeOther)
	})

	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	daemonURL = "http://" + srv.Listener.Addr().String()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken,
		OAuth: daemon.OAuthOptions{Resource: daemonURL + "/mcp", LoginURL: hostSrv.URL + "/sign-in"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = d.Handler()
	srv.Start()
	e := &env{t: t, d: d, srv: srv, admin: client.New(daemonURL, adminToken, nil)}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		d.Close()
		srv.Close()
		st.Close()
	})
	// Registered after the daemon's cleanup, so the browser stops first.
	e.browser = startChromium(t, e)

	created := opsTools(t, e)
	list := switchboard.Tool{Name: "tasks.list", Description: "List the tasks.", Class: switchboard.ClassRead, InputSchema: json.RawMessage(`{"type":"object"}`)}
	if err := d.RegisterFunc(ctx, list, func(context.Context, json.RawMessage) (any, error) { return []string{}, nil }); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, who := range []string{"alice", "bob"} {
		tok, err := e.admin.CreateToken(ctx, client.TokenRequest{Agent: who + "-bot", User: "user:" + who, Allow: []string{"tasks.*"}})
		if err != nil {
			t.Fatal(err)
		}
		tokens[who] = tok.Token
		// A call that runs at once: a ledger entry of each user.
		if _, err := client.New(daemonURL, tok.Token, nil).CallTool(ctx, "tasks.list", json.RawMessage(`{}`), client.CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	agentCall(t, e, tokens["alice"], "Water the plants for alice")
	agentCall(t, e, tokens["bob"], "Feed the cat for bob")

	// Sign in as a user: the app's sign-in page, then the consent page.
	tab, cancel := e.tab(t, daemonURL+"/")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1440, 900), chromedp.WaitVisible("html[data-console=ready] #signin-user"))
	consoleShot(t, tab, "signin")
	do(t, tab, chromedp.Click("#signin-user"))
	poll(t, tab, `document.getElementById("approve") !== null`)
	if u := text(t, tab, "#user"); u != "user:alice" {
		t.Fatalf("the consent page signs in %q, want user:alice", u)
	}
	do(t, tab, chromedp.Click("#approve"))
	poll(t, tab, `location.pathname === "/console/" && document.documentElement.dataset.console === "ready" && document.getElementById("status").textContent === "signed in as user:alice"`)
	if q := eval[string](t, tab, `location.search`); q != "" {
		t.Errorf("the sign-in's answer stays in the address bar: %q", q)
	}

	// Her views only: the operator's are not offered.
	shown := `[...document.querySelectorAll(SEL)].filter(x => x.offsetParent !== null)`
	if nav := eval[string](t, tab, strings.Replace(shown, "SEL", `'#nav a'`, 1)+`.map(a => a.dataset.view).join(' ')`); nav != "approvals activity agents tasks access" {
		t.Errorf("signed in as a user, the console offers %q", nav)
	}
	if eval[bool](t, tab, `document.getElementById("model-status").offsetParent !== null`) {
		t.Error("a user is shown the assistant's model status")
	}

	// Her pending approval, not bob's; the stream is live and hers: of two
	// asked now, hers appears and bob's does not.
	inbox := `[...document.querySelectorAll("#approval-list article")].map(a => a.textContent).join("\n")`
	poll(t, tab, `document.getElementById("approvals-live").textContent === "live" && `+inbox+`.includes("Water the plants for alice")`)
	agentCall(t, e, tokens["bob"], "Walk the dog for bob")
	agentCall(t, e, tokens["alice"], "Mow the lawn for alice")
	poll(t, tab, inbox+`.includes("Mow the lawn for alice")`)
	if s := eval[string](t, tab, inbox); strings.Contains(s, "bob") {
		t.Fatalf("alice's inbox shows bob's approvals:\n%s", s)
	}

	// She approves hers: it runs, and the card says so.
	eval[bool](t, tab, `([...document.querySelectorAll("#approval-list article")].find(a => a.textContent.includes("Water the plants for alice")).querySelector("button.primary").click(), true)`)
	poll(t, tab, `[...document.querySelectorAll("#approval-list article.decided")].some(a => a.textContent.includes("Water the plants for alice") && a.querySelector(".result").textContent.includes("succeeded"))`)
	if n := created.Load(); n != 1 {
		t.Fatalf("tasks.create ran %d times, want once", n)
	}
	consoleShot(t, tab, "user-approvals")

	// Activity: her entries, none of bob's; no Verify, no Reverse.
	do(t, tab, chromedp.Click(`#nav a[data-view="activity"]`))
	poll(t, tab, `[...document.querySelectorAll("#entries tr")].some(r => r.cells[2].textContent === "agent:alice-bot" && r.cells[3].textContent === "tool.call")`)
	if s := text(t, tab, "#entries"); strings.Contains(s, "bob") {
		t.Errorf("alice's activity shows bob's entries:\n%s", s)
	}
	if eval[bool](t, tab, `document.getElementById("verify").offsetParent !== null || !!document.querySelector("#entries button")`) {
		t.Error("a user is offered Verify or Reverse")
	}

	// Agents: hers, and no quotas.
	do(t, tab, chromedp.Click(`#nav a[data-view="agents"]`))
	poll(t, tab, `document.getElementById("agent-count").textContent !== ""`)
	if s := text(t, tab, "#agent-list"); strings.Contains(s, "bob") {
		t.Errorf("alice's agents include bob's:\n%s", s)
	}
	if eval[bool](t, tab, `document.getElementById("quota-list").offsetParent !== null`) {
		t.Error("a user is shown the daily quotas")
	}

	// Your access: the grant she just gave this console.
	do(t, tab, chromedp.Click(`#nav a[data-view="access"]`))
	poll(t, tab, `[...document.querySelectorAll("#grant-list tr")].some(r => r.textContent.includes("this console") && !!r.querySelector("button.danger"))`)
	poll(t, tab, `document.getElementById("myrun-count").textContent !== ""`)
	consoleShot(t, tab, "user-access")
	do(t, tab, chromedp.EmulateViewport(390, 844), chromedp.Click(`#nav a[data-view="approvals"]`))
	poll(t, tab, inbox+`.includes("Mow the lawn for alice")`)
	consoleShot(t, tab, "narrow-user-approvals")
	do(t, tab, chromedp.EmulateViewport(1440, 900))

	// The console's token is for the console's routes: not /mcp, not the
	// operator's routes, and its approvals are alice's alone.
	token := eval[string](t, tab, `sessionStorage.getItem("switchboard.console.token")`)
	as := func(token, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, daemonURL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, res.Body)
		return res.StatusCode, b.String()
	}
	if code, body := as(token, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`); code != http.StatusUnauthorized {
		t.Errorf("the console's token on /mcp: %d %s, want 401 (its audience is the API, not /mcp)", code, body)
	}
	if code, body := as(token, http.MethodGet, "/api/v1/tools", ""); code != http.StatusForbidden {
		t.Errorf("the console's token on GET /api/v1/tools: %d %s, want 403", code, body)
	}
	if code, body := as(token, http.MethodGet, "/api/v1/approvals?status=all", ""); code != http.StatusOK || strings.Contains(body, "user:bob") || !strings.Contains(body, "user:alice") {
		t.Errorf("the console's token on GET /api/v1/approvals?status=all: %d %s, want alice's only", code, body)
	}

	// An access token the daemon refuses (here: its signature spoilt) is
	// renewed once with the refresh token, and the request sent again.
	spoilt := eval[string](t, tab, `(() => { const t = sessionStorage.getItem("switchboard.console.token"); const s = t.slice(0, t.lastIndexOf(".") + 1) + "AAAA"; sessionStorage.setItem("switchboard.console.token", s); return s; })()`)
	if code, body := as(spoilt, http.MethodGet, "/api/v1/approvals", ""); code != http.StatusUnauthorized {
		t.Fatalf("a spoilt access token: %d %s, want 401", code, body)
	}
	do(t, tab, chromedp.Click(`#nav a[data-view="activity"]`))
	poll(t, tab, `sessionStorage.getItem("switchboard.console.token") !== `+strconv.Quote(spoilt)+` && document.querySelectorAll("#entries tr").length > 0`)
	if s := text(t, tab, "#status"); s != "signed in as user:alice" || eval[bool](t, tab, `!document.getElementById("login").hidden`) {
		t.Fatalf("after renewing its token the console says %q", s)
	}

	// Revoking the console's own grant signs her out: the renewal is
	// refused, and the tab forgets her tokens.
	do(t, tab, chromedp.Click(`#nav a[data-view="access"]`))
	poll(t, tab, `!!document.querySelector("#grant-list tr button.danger")`)
	eval[bool](t, tab, `([...document.querySelectorAll("#grant-list tr")].find(r => r.textContent.includes("this console")).querySelector("button.danger").click(), true)`)
	poll(t, tab, `!document.getElementById("login").hidden && document.getElementById("login-error").textContent.includes("sign in again")`)
	if left := eval[string](t, tab, `Object.keys(sessionStorage).filter(k => k.startsWith("switchboard.console.")).join(" ")`); left != "" {
		t.Errorf("signed out, the tab keeps %q", left)
	}
	grants, err := e.admin.OAuthGrants(ctx, "user:alice")
	if err != nil || len(grants) != 1 || grants[0].RevokedAt.IsZero() {
		t.Fatalf("alice's grants after the revocation: %+v %v", grants, err)
	}

	// The operator, in the same tab, sees everyone's approvals and every view.
	do(t, tab, chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"), chromedp.Click(`#nav a[data-view="approvals"]`))
	poll(t, tab, inbox+`.includes("Feed the cat for bob") && `+inbox+`.includes("Mow the lawn for alice")`)
	if s := text(t, tab, "#status"); s != "signed in" {
		t.Errorf("the operator's status says %q", s)
	}
	if nav := eval[string](t, tab, strings.Replace(shown, "SEL", `'#nav a'`, 1)+`.map(a => a.dataset.view).join(' ')`); nav != "catalog approvals activity calls agents tasks tabs tokens assistant" {
		t.Errorf("the operator is offered %q", nav)
	}
}
