package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// mcpOAuthClient is the official TypeScript MCP SDK client with its OAuth
// provider (e2e/testdata/mcp-oauth-client/build.sh installs it).
var mcpOAuthClient = filepath.Join("testdata", "mcp-oauth-client")

// nodeClient is one run of client.mjs; its JSON lines arrive on lines.
type nodeClient struct {
	lines chan map[string]json.RawMessage
	stdin io.Writer // lines to client.mjs
}

// startNodeClient runs client.mjs in mode; a clientID makes it a client
// pre-registered at the authorization server.
func startNodeClient(t *testing.T, mcpURL, mode string, clientID ...string) *nodeClient {
	t.Helper()
	cmd := exec.Command("node", append([]string{"client.mjs", mcpURL, mode}, clientID...)...)
	cmd.Dir = mcpOAuthClient
	cmd.Stderr = &testLog{t: t, prefix: "client.mjs " + mode + ": "}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	n := &nodeClient{lines: make(chan map[string]json.RawMessage, 16), stdin: in}
	go n.read(out)
	return n
}

// read hands the JSON lines of out to lines until out ends.
func (n *nodeClient) read(out io.Reader) {
	defer close(n.lines)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			n.lines <- m
		}
	}
}

// next waits for the client's next line, which must carry key.
func (n *nodeClient) next(t *testing.T, key string) json.RawMessage {
	t.Helper()
	select {
	case m, ok := <-n.lines:
		if !ok {
			t.Fatalf("client.mjs exited before writing %q (its stderr is in the log)", key)
		}
		if v, ok := m[key]; ok {
			return v
		}
		t.Fatalf("client.mjs wrote %v, want %q", m, key)
	case <-time.After(2 * time.Minute):
		t.Fatalf("client.mjs wrote no %q in 2 minutes", key)
	}
	return nil
}

type testLog struct {
	t      *testing.T
	prefix string
}

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Log(l.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestMCPOAuthEmbeddedServer: the official TypeScript MCP SDK client,
// given only /mcp's URL, completes the OAuth flow against the embedded
// authorization server: it discovers it, registers itself, and sends the
// browser (real Chromium) to sign in; the host app signs alice in and
// vouches for her; she approves on the consent page; the client gets its
// tokens on its loopback redirect and lists and calls tools as
// user:alice. Its call of a mutation waits for alice's approval and shows
// in her digest; bob's client, through the same flow, acts as user:bob
// and his digest does not show alice's approval.
func TestMCPOAuthEmbeddedServer(t *testing.T) {
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

	// The host app: its own sign-in (a cookie naming the user stands for
	// whatever session the app keeps), and the page --oauth-login-url names,
	// whose backend vouches for the signed-in user with the admin token.
	var admin *client.Client
	var daemonURL string
	host := http.NewServeMux()
	hostSrv := httptest.NewServer(host)
	t.Cleanup(hostSrv.Close)
	host.HandleFunc("GET /login-as", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "app_user", Value: r.URL.Query().Get("user"), Path: "/", HttpOnly: true})
		_, _ = w.Write([]byte("<p id=signed-in>signed in</p>"))
	})
	host.HandleFunc("GET /agent-sign-in", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("app_user")
		if err != nil || c.Value == "" {
			http.Error(w, "sign in to the app first", http.StatusUnauthorized)
			return
		}
		body, _ := json.Marshal(map[string]string{"request": r.URL.Query().Get("request"), "user": "user:" + c.Value})
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
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	daemonURL = "http://" + srv.Listener.Addr().String()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken,
		OAuth: daemon.OAuthOptions{Resource: daemonURL + "/mcp", LoginURL: hostSrv.URL + "/agent-sign-in"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	deleted := make(chan string, 1)
	for _, tool := range []struct {
		t  switchboard.Tool
		fn func(context.Context, json.RawMessage) (any, error)
	}{
		{switchboard.Tool{Name: "auth.whoami", Description: "Who the call acts for.", Class: switchboard.ClassRead, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ json.RawMessage) (any, error) {
				p, _ := switchboard.PrincipalFrom(ctx)
				return map[string]string{"caller": p.String(), "actsFor": p.ActsFor()}, nil
			}},
		{switchboard.Tool{Name: "tasks.delete", Description: "Delete a task.", Class: switchboard.ClassMutate,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"}},"required":["task"]}`)},
			func(_ context.Context, in json.RawMessage) (any, error) {
				deleted <- string(in)
				return map[string]bool{"deleted": true}, nil
			}},
	} {
		if err := d.RegisterFunc(ctx, tool.t, tool.fn); err != nil {
			t.Fatal(err)
		}
	}
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	admin = client.New(daemonURL, adminToken, nil)

	e := &env{t: t, d: d, srv: srv, admin: admin}
	browser := startChromium(t, e)

	// signIn drives the browser through the app's sign-in and the consent
	// page for user, as the client asked in authorizeURL.
	signIn := func(user, authorizeURL string) {
		t.Helper()
		do(t, browser,
			chromedp.Navigate(hostSrv.URL+"/login-as?user="+user),
			chromedp.WaitVisible("#signed-in"),
			chromedp.Navigate(authorizeURL)) // → the app's sign-in → the consent page
		poll(t, browser, `document.getElementById("approve") !== null`)
		text := func(id string) string {
			return eval[string](t, browser, `document.getElementById("`+id+`").textContent`)
		}
		shownUser, shownClient, shownHost := text("user"), text("client-name"), text("redirect-host")
		do(t, browser, chromedp.Click("#approve"))
		poll(t, browser, `document.getElementById("done") !== null`) // the client's loopback redirect page
		if shownUser != "user:"+user || !strings.HasPrefix(shownClient, "E2E ") || !strings.HasPrefix(shownHost, "127.0.0.1:") {
			t.Fatalf("consent page showed user %q, client %q, redirect host %q", shownUser, shownClient, shownHost)
		}
	}
	var ready struct {
		Tools   []string
		Whoami  string
		Refresh bool
	}

	alice := startNodeClient(t, daemonURL+"/mcp", "approve")
	var authorize string
	_ = json.Unmarshal(alice.next(t, "authorize"), &authorize)
	if !strings.HasPrefix(authorize, daemonURL+"/oauth/authorize?") || !strings.Contains(authorize, "code_challenge_method=S256") {
		t.Fatalf("the SDK authorizes at %s", authorize)
	}
	signIn("alice", authorize)
	if err := json.Unmarshal(alice.next(t, "ready"), &ready); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(ready.Tools, " "), "auth-whoami") || !strings.Contains(ready.Whoami, `"actsFor":"user:alice"`) ||
		!strings.Contains(ready.Whoami, `"caller":"agent:oauth-sbc_`) || !ready.Refresh {
		t.Fatalf("alice's client: %+v", ready)
	}

	// Her mutation waits for her approval, which her digest shows.
	var pending []switchboard.DigestApproval
	if err := json.Unmarshal(alice.next(t, "pending"), &pending); err != nil {
		t.Fatal(err)
	}
	aprs, err := admin.Approvals(ctx, client.ApprovalQuery{})
	if err != nil || len(aprs) != 1 || aprs[0].User != "user:alice" || aprs[0].Tool != "tasks.delete" {
		t.Fatalf("pending approvals: %+v %v", aprs, err)
	}
	if len(pending) != 1 || pending[0].ID != aprs[0].ID {
		t.Fatalf("alice's digest shows pending approvals %+v, want her %s", pending, aprs[0].ID)
	}

	bob := startNodeClient(t, daemonURL+"/mcp", "digest")
	_ = json.Unmarshal(bob.next(t, "authorize"), &authorize)
	signIn("bob", authorize)
	if err := json.Unmarshal(bob.next(t, "ready"), &ready); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ready.Whoami, `"actsFor":"user:bob"`) {
		t.Fatalf("bob's client: %+v", ready)
	}
	var bobDigest switchboard.WorkspaceDigest
	if err := json.Unmarshal(bob.next(t, "digest"), &bobDigest); err != nil {
		t.Fatal(err)
	}
	if len(bobDigest.PendingApprovals) != 0 {
		t.Fatalf("bob's digest shows approvals %+v (alice's is %s)", bobDigest.PendingApprovals, aprs[0].ID)
	}

	// The SDK refreshes bob's tokens: the scope it asked for, no ID token.
	// After the operator revokes his grant, its refreshes fail with the
	// SDK's InvalidGrantError saying the grant was revoked, each time, and
	// the ledger holds that one revocation, no reuse alarm.
	var refreshed struct {
		Scope   string
		IDToken bool
	}
	if err := json.Unmarshal(bob.next(t, "refreshed"), &refreshed); err != nil || refreshed.Scope != "mcp" || refreshed.IDToken {
		t.Fatalf("the SDK's refresh: %+v %v, want scope mcp and no ID token", refreshed, err)
	}
	grants, err := admin.OAuthGrants(ctx, "user:bob")
	if err != nil || len(grants) != 1 {
		t.Fatalf("bob's grants: %+v %v", grants, err)
	}
	if _, err := admin.RevokeOAuthGrant(ctx, grants[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(bob.stdin, "revoked\n"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var refusal struct{ Name, Message string }
		if err := json.Unmarshal(bob.next(t, "refusal"), &refusal); err != nil || refusal.Name != "InvalidGrantError" || !strings.Contains(refusal.Message, "revoked") {
			t.Fatalf("the SDK's refresh after the revocation: %+v %v, want InvalidGrantError saying the grant was revoked", refusal, err)
		}
	}
	revokes, err := admin.Activity(ctx, client.ActivityQuery{Verb: "oauth.revoke"})
	if err != nil || len(revokes.Items) != 1 || revokes.Items[0].Actor != switchboard.Operator {
		t.Fatalf("oauth.revoke entries: %+v %v, want the operator's one", revokes.Items, err)
	}

	// The operator approves alice's call (an override, recorded so); it runs once.
	if _, err := admin.Decide(ctx, aprs[0].ID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	var result map[string]any
	_ = json.Unmarshal(alice.next(t, "result"), &result)
	if result["isError"] != false || !strings.Contains(jsonString(result["text"]), "deleted") {
		t.Fatalf("alice's approved call: %v", result)
	}
	select {
	case in := <-deleted:
		if !strings.Contains(in, "t-1") {
			t.Fatalf("tasks.delete ran with %s", in)
		}
	default:
		t.Fatal("tasks.delete did not run")
	}
}

func jsonString(v any) string { s, _ := v.(string); return s }
