package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/sqlite"
)

const (
	chromium   = "/usr/bin/chromium"
	adminToken = "e2e-admin-token"
	// heartbeat is short so a closed tab is detected quickly (grace = 2×).
	heartbeat = 250 * time.Millisecond
	// stepTimeout bounds one browser step; generous for a loaded CI box.
	stepTimeout = 30 * time.Second
)

// env is one daemon (demo on) and one headless Chromium.
type env struct {
	t       *testing.T
	d       *daemon.Daemon
	srv     *httptest.Server
	admin   *client.Client
	browser context.Context

	mu      sync.Mutex
	console []string
}

func newEnv(t *testing.T, origins ...string) *env {
	t.Helper()
	return newEnvWith(t, session.Options{Heartbeat: heartbeat}, origins...)
}

// newEnvWith is newEnv with the daemon's session options.
func newEnvWith(t *testing.T, so session.Options, origins ...string) *env {
	t.Helper()
	return newEnvFlags(t, so, nil, origins...)
}

// newEnvFlags is newEnvWith with extra Chromium flags.
func newEnvFlags(t *testing.T, so session.Options, flags []chromedp.ExecAllocatorOption, origins ...string) *env {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser end-to-end tests: %s not found (apt-get install chromium; CI installs it)", chromium)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{
		Store: st, AdminToken: adminToken, Demo: true, DemoKey: demoKey, AllowOrigins: origins,
		Session: so,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	e := &env{t: t, d: d, srv: srv, admin: client.New(srv.URL, adminToken, nil)}

	t.Cleanup(func() {
		srv.CloseClientConnections()
		d.Close()
		srv.Close()
		st.Close()
	})
	// Registered after the daemon's cleanup, so the browser stops first.
	e.browser = startChromium(t, e, flags...)
	return e
}

// demoKey is the env daemon's demo key; tab adds it to demo URLs as the
// URL serve --demo prints carries it.
const demoKey = "e2e-demo-key"

// tab opens a new tab at url (a /demo/ URL with the demo key, as a user
// opens the URL serve printed).
func (e *env) tab(t *testing.T, url string) (context.Context, context.CancelFunc) {
	t.Helper()
	if strings.HasPrefix(url, e.srv.URL+"/demo") && !strings.Contains(url, "key=") {
		url += "?key=" + demoKey
	}
	ctx, cancel := chromedp.NewContext(e.browser)
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			e.mu.Lock()
			e.console = append(e.console, m.String())
			e.mu.Unlock()
		}
	}()
	do(t, ctx, chromedp.Navigate(url))
	return ctx, cancel
}

// consoleErrors are the errors and uncaught exceptions the tabs have
// logged so far (a failed resource load is one).
func (e *env) consoleErrors() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, m := range e.console {
		if strings.HasPrefix(m, "error: ") || strings.HasPrefix(m, "exception: ") {
			out = append(out, m)
		}
	}
	return out
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// poll waits for a JavaScript predicate in the page (the browser's own
// polling: no sleeps here). A poll does not survive a navigation, so one
// cut short by the page (re)loading starts again in the new document.
func poll(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		_, err := chromedp.Run(sctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(10*time.Millisecond)))
		if err == nil {
			return
		}
		if sctx.Err() == nil && (strings.Contains(err.Error(), "context") || strings.Contains(err.Error(), "navigat")) {
			continue
		}
		t.Fatalf("waiting for %s: %v", js, err)
	}
}

// connected waits until the page's session is open and advertises want, and
// returns the session id.
func (e *env) connected(t *testing.T, ctx context.Context, want ...string) string {
	t.Helper()
	poll(t, ctx, `document.body.dataset.status === "open" && !!document.body.dataset.session`)
	id := eval[string](t, ctx, `document.body.dataset.session`)
	e.waitTools(t, id, want...)
	return id
}

// waitTools waits until session id advertises exactly want (sorted).
func (e *env) waitTools(t *testing.T, id string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	var got []string
	for {
		tools, err := e.admin.SessionTools(context.Background(), id)
		got = got[:0]
		for _, tl := range tools {
			got = append(got, tl.Name)
		}
		if err == nil && strings.Join(got, ",") == strings.Join(want, ",") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s advertises %v (%v), want %v", id, got, err, want)
		}
		time.Sleep(10 * time.Millisecond) // polling the daemon; the tab advertises asynchronously
	}
}

func (e *env) call(tool, sessionID, input string) (switchboard.CallResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	return e.admin.CallTool(ctx, tool, json.RawMessage(input), client.CallOptions{SessionID: sessionID})
}

var demoTools = []string{"nav.goto", "page.describe", "ui.focus", "ui.scroll_to", "ui.select"}

func TestDemoInChromium(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	id := e.connected(t, ctx, demoTools...)

	t.Run("a call navigates the page and returns the acknowledgement", func(t *testing.T) {
		resp, err := e.call("nav.goto", id, `{"page":"media"}`)
		if err != nil {
			t.Fatal(err)
		}
		var ack struct{ Page, URL, Title string }
		_ = json.Unmarshal(resp.Result, &ack)
		if resp.Status != switchboard.StatusSucceeded || ack.Page != "media" || ack.URL != "/demo/media" || ack.Title != "Media library" {
			t.Fatalf("nav.goto answered %+v %s", resp, resp.Result)
		}
		if got := eval[string](t, ctx, `location.pathname + " " + document.body.dataset.page`); got != "/demo/media media" {
			t.Fatalf("the page is at %q", got)
		}
		// The media page mounts media.filter while it is shown.
		e.waitTools(t, id, "media.filter", "nav.goto", "page.describe", "ui.focus", "ui.scroll_to", "ui.select")
		resp, err = e.call("media.filter", id, `{"kind":"video"}`)
		if err != nil || !strings.Contains(string(resp.Result), `"shown":8`) {
			t.Fatalf("media.filter: %s %v", resp.Result, err)
		}
	})

	t.Run("ui tools move the view", func(t *testing.T) {
		if resp, err := e.call("ui.select", id, `{"target":"media","value":"media-7"}`); err != nil || !strings.Contains(string(resp.Result), `"selected":"Photo 7"`) {
			t.Fatalf("ui.select in the grid: %s %v", resp.Result, err)
		}
		if got := eval[string](t, ctx, `document.querySelector(".media.selected").id`); got != "media-7" {
			t.Fatalf("selected %q", got)
		}
		if _, err := e.call("nav.goto", id, `{"page":"settings"}`); err != nil {
			t.Fatal(err)
		}
		e.waitTools(t, id, demoTools...) // media.filter withdrawn on unmount
		if resp, err := e.call("ui.select", id, `{"target":"settings-theme","value":"dark"}`); err != nil || !strings.Contains(string(resp.Result), `"selected":true`) {
			t.Fatalf("ui.select a dropdown: %s %v", resp.Result, err)
		}
		if got := eval[string](t, ctx, `document.getElementById("settings-theme").value`); got != "dark" {
			t.Fatalf("theme is %q", got)
		}
		if resp, err := e.call("ui.focus", id, `{"target":"settings-name"}`); err != nil || !strings.Contains(string(resp.Result), `"focused":true`) {
			t.Fatalf("ui.focus: %s %v", resp.Result, err)
		}
		if got := eval[string](t, ctx, `document.activeElement.id`); got != "settings-name" {
			t.Fatalf("focus is on %q", got)
		}
		if _, err := e.call("nav.goto", id, `{"page":"projects"}`); err != nil {
			t.Fatal(err)
		}
		if resp, err := e.call("ui.scroll_to", id, `{"target":"project-fjord"}`); err != nil || !strings.Contains(string(resp.Result), `"top"`) {
			t.Fatalf("ui.scroll_to: %s %v", resp.Result, err)
		}
		if visible := eval[bool](t, ctx, `(() => { const r = document.getElementById("project-fjord").getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight })()`); !visible {
			t.Fatal("project-fjord is not in view after ui.scroll_to")
		}
		resp, err := e.call("page.describe", id, `{}`)
		if err != nil || !strings.Contains(string(resp.Result), `"page":"projects"`) || !strings.Contains(string(resp.Result), `"project-apollo"`) {
			t.Fatalf("page.describe: %s %v", resp.Result, err)
		}
	})

	t.Run("a handler's error comes back with its code", func(t *testing.T) {
		resp, err := e.call("ui.focus", id, `{"target":"nothing-here"}`)
		if switchboard.CodeOf(err) != switchboard.CodeNotFound || resp.Status != switchboard.StatusFailed || !strings.Contains(resp.Error.Message, "project-apollo") {
			t.Fatalf("ui.focus on a missing element: %+v %v", resp, err)
		}
		resp, err = e.call("ui.select", id, `{"target":"project-apollo","value":"x"}`)
		if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Fatalf("ui.select on a card: %+v %v", resp, err)
		}
	})

	t.Run("SDK: handler time limit, cancel, thrown codes, concurrency", func(t *testing.T) {
		// Mount test tools from the page itself, as an app would.
		eval[chromedp.Void](t, ctx, `(() => {
			const sb = window.switchboard;
			window.aborted = [];
			window.started = [];
			sb.registerTool({ name: "test.hang", description: "Never resolves; honours its signal.", timeoutMs: 60000,
				handler: (_, { signal, invocationId }) => new Promise((_, reject) => {
					window.started.push(invocationId);
					signal.addEventListener("abort", () => { window.aborted.push(invocationId); reject(signal.reason); });
				}) });
			sb.registerTool({ name: "test.slowish", description: "Takes longer than its own limit.", timeoutMs: 20000, handlerTimeoutMs: 200,
				handler: () => new Promise((r) => setTimeout(r, 60000)) });
			sb.registerTool({ name: "test.throw", description: "Throws a coded error.",
				handler: ({ code }) => { const e = new Error("thrown on purpose"); if (code) e.code = code; throw e; } });
			sb.registerTool({ name: "test.echo", description: "Echoes after a tick.",
				handler: async (input) => { await new Promise((r) => setTimeout(r, 5)); return input; } });
		})()`)
		e.waitTools(t, id, "nav.goto", "page.describe", "test.echo", "test.hang", "test.slowish", "test.throw", "ui.focus", "ui.scroll_to", "ui.select")

		// The SDK's own handler limit ends a stuck handler and reports
		// TIMEOUT itself, before the daemon's longer wait would.
		resp, err := e.call("test.slowish", id, `{}`)
		if switchboard.CodeOf(err) != switchboard.CodeTimeout || !strings.Contains(resp.Error.Message, "200 ms") {
			t.Fatalf("slow handler: %+v %v", resp, err)
		}

		// A cancelled call aborts the handler's signal.
		cctx, cancelCall := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := e.admin.CallTool(cctx, "test.hang", json.RawMessage(`{}`), client.CallOptions{SessionID: id})
			done <- err
		}()
		poll(t, ctx, `window.started.length === 1`) // the handler runs in the tab
		cancelCall()
		<-done
		poll(t, ctx, `window.aborted.length === 1`)

		for _, tc := range []struct{ code, want string }{{"NOT_FOUND", "NOT_FOUND"}, {"", "INTERNAL"}, {"ELEMENT_GONE", "UPSTREAM_ERROR"}} {
			_, err := e.call("test.throw", id, `{"code":"`+tc.code+`"}`)
			if string(switchboard.CodeOf(err)) != tc.want {
				t.Errorf("thrown code %q came back as %v, want %s", tc.code, err, tc.want)
			}
		}

		// Many calls in flight on one tab, each reconciled to its own result.
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := `{"n":` + strings.Repeat("1", 1+i%5) + `}`
				resp, err := e.call("test.echo", id, in)
				if err == nil && string(resp.Result) != in {
					err = errors.New("echo of " + in + " came back as " + string(resp.Result))
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("the stream reconnects and resumes", func(t *testing.T) {
		// Steal the stream from Go; the tab's stream ends, it reconnects with
		// backoff (taking the stream back) and keeps working.
		conn, err := e.d.Sessions.Attach(context.Background(), id, "")
		if err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, `document.body.dataset.status === "reconnecting" || document.body.dataset.status === "open"`)
		<-conn.Done() // the tab came back and replaced it
		conn.Close()
		poll(t, ctx, `document.body.dataset.status === "open"`)
		if resp, err := e.call("nav.goto", id, `{"page":"media"}`); err != nil || resp.Status != switchboard.StatusSucceeded {
			t.Fatalf("after reconnect: %+v %v", resp, err)
		}
	})

	t.Run("reloading re-advertises", func(t *testing.T) {
		do(t, ctx, chromedp.Reload())
		newID := e.connected(t, ctx, "media.filter", "nav.goto", "page.describe", "ui.focus", "ui.scroll_to", "ui.select")
		if newID == id {
			t.Fatal("a reload should end the old session and open a new one")
		}
		// The old session ended with the page (pagehide → DELETE): calls
		// naming it fail with SESSION_GONE.
		if _, err := e.call("nav.goto", id, `{"page":"projects"}`); switchboard.CodeOf(err) != switchboard.CodeSessionGone {
			t.Fatalf("call to the reloaded-away session: %v", err)
		}
		// The new one takes calls, even without naming it (the only live tab).
		if resp, err := e.call("nav.goto", "", `{"page":"settings"}`); err != nil || resp.Status != switchboard.StatusSucceeded {
			t.Fatalf("after reload: %+v %v", resp, err)
		}
		id = newID
	})

	t.Run("closing the tab makes the next call fail with SESSION_GONE fast", func(t *testing.T) {
		tctx, closeTab := e.tab(t, e.srv.URL+"/demo/settings")
		other := e.connected(t, tctx, demoTools...)
		// A call in flight on the tab when it closes fails at once too.
		hang := make(chan error, 1)
		eval[chromedp.Void](t, tctx, `window.started = 0; window.switchboard.registerTool({ name: "test.hang", description: "Never answers.", handler: () => { window.started++; return new Promise(() => {}); } })`)
		e.waitTools(t, other, "nav.goto", "page.describe", "test.hang", "ui.focus", "ui.scroll_to", "ui.select")
		start := time.Now()
		go func() {
			_, err := e.call("test.hang", other, `{}`)
			hang <- err
		}()
		poll(t, tctx, `window.started === 1`)
		closeTab()
		if err := <-hang; switchboard.CodeOf(err) != switchboard.CodeSessionGone {
			t.Fatalf("call in flight when the tab closed: %v", err)
		}
		resp, err := e.call("nav.goto", other, `{"page":"media"}`)
		if switchboard.CodeOf(err) != switchboard.CodeSessionGone {
			t.Fatalf("next call after closing the tab: %+v %v", resp, err)
		}
		// Both ended long before the 30 s call timeout (TIMEOUT would be the
		// code otherwise); the elapsed time is logged, not asserted.
		t.Logf("SESSION_GONE %s after the close began", time.Since(start))
		// The first tab is unaffected.
		if resp, err := e.call("nav.goto", id, `{"page":"projects"}`); err != nil || resp.Status != switchboard.StatusSucceeded {
			t.Fatalf("the other tab: %+v %v", resp, err)
		}
	})
}

// TestSDKFromAnotherOrigin loads the SDK into an app served from another
// origin: allowed with --allow-origin, refused otherwise.
func TestSDKFromAnotherOrigin(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(appPage))
	}))
	defer app.Close()
	blocked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(appPage))
	}))
	defer blocked.Close()
	e := newEnv(t, app.URL)

	open := func(base string) (context.Context, context.CancelFunc, client.SessionCredentials) {
		cred, err := e.admin.CreateSession(context.Background(), "user:app")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := e.tab(t, base+"/#daemon="+e.srv.URL+"&session="+cred.SessionID+"&token="+cred.SessionToken)
		return ctx, cancel, cred
	}
	ctx, cancel, cred := open(app.URL)
	defer cancel()
	poll(t, ctx, `window.status === "open"`)
	e.waitTools(t, cred.SessionID, "app.highlight")
	resp, err := e.call("app.highlight", cred.SessionID, `{"text":"hello"}`)
	if err != nil || string(resp.Result) != `{"highlighted":"hello"}` {
		t.Fatalf("call into the app on another origin: %s %v", resp.Result, err)
	}
	if got := eval[string](t, ctx, `document.getElementById("out").textContent`); got != "hello" {
		t.Fatalf("page shows %q", got)
	}

	bctx, bcancel, bcred := open(blocked.URL)
	defer bcancel()
	poll(t, bctx, `window.errors.length > 0`) // the daemon refuses this origin
	if tools, _ := e.admin.SessionTools(context.Background(), bcred.SessionID); len(tools) != 0 {
		t.Fatalf("a page from an origin that is not allowed advertised %v", tools)
	}
}

// appPage is a stand-in for any web app: it imports the SDK from the daemon
// and mounts one tool. Credentials come in the fragment (a real app gets
// them from its backend).
const appPage = `<!doctype html><meta charset="utf-8"><title>app</title><p id="out"></p>
<script type="module">
const p = new URLSearchParams(location.hash.slice(1));
window.errors = [];
let connect;
try {
  ({ connect } = await import(p.get("daemon") + "/sdk/switchboard.js"));
} catch (e) {
  window.errors.push("import: " + e.message);
  throw e;
}
const sb = connect({ url: p.get("daemon"), sessionId: p.get("session"), sessionToken: p.get("token") });
sb.on("status", (s) => { window.status = s; });
sb.on("error", (e) => window.errors.push(String(e.code || e.message)));
sb.registerTool({ name: "app.highlight", description: "Highlight text on the page.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler: ({ text }) => { document.getElementById("out").textContent = text; return { highlighted: text }; } });
</script>`

// startChromium starts headless Chromium with the flags newEnv uses and
// logs the page console when the test fails.
func startChromium(t *testing.T, e *env, flags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	opts = append(opts, flags...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		if t.Failed() {
			e.mu.Lock()
			t.Logf("browser console:\n%s", strings.Join(e.console, "\n"))
			e.mu.Unlock()
		}
	})
	return bctx
}
