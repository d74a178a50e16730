package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// mcpAppsDist is where e2e/testdata/mcpapps-host/build.sh puts the host
// page: the official TypeScript MCP client and the official ext-apps
// AppBridge, bundled with esbuild.
var mcpAppsDist = filepath.Join("testdata", "mcpapps-host", "dist")

// apolloSpec is the panel the agent composes: the demo's apollo project
// as a form whose save updates it through the projects adapter.
const apolloSpec = `{"v": 1, "root": "body",
 "sources": {"project": {"kind": "adapter", "adapter": "projects", "query": {"where": {"id": "apollo"}}}},
 "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Apollo"}, "children": ["intro", "form"]},
  "intro": {"type": "text", "props": {"text": "<b>not bold</b>: edit and save"}},
  "form": {"type": "field-form", "props": {"bind": "project", "submit": "save", "submitLabel": "Save", "fields": [
    {"path": "owner", "label": "Owner", "kind": "text"},
    {"path": "budget", "label": "Budget", "kind": "number"}]}}},
 "actions": {"save": {"kind": "mutate", "source": "project", "op": "update"}}}`

// TestMCPAppsHostInChromium: an MCP Apps host built from the official
// packages renders a panel an agent composed through /mcp; the person
// edits and saves it inside the host's sandboxed iframe, the save waits for
// and honours the approval, and the view cannot reach the host page.
func TestMCPAppsHostInChromium(t *testing.T) {
	if _, err := os.Stat(filepath.Join(mcpAppsDist, "host.js")); err != nil {
		t.Skipf("skipping the MCP Apps host test: the host page is not built (%v); build it with e2e/testdata/mcpapps-host/build.sh (needs node and npm)", err)
	}
	e := newEnv(t)
	ctx := context.Background()

	// The demo tab shows panels: an agent's panel lands there too.
	demo, cancelDemo := e.tab(t, e.srv.URL+"/demo/")
	defer cancelDemo()
	e.connected(t, demo, demoTools...)
	poll(t, demo, `!!window.switchboardPanels`)

	page, hostURL, probes := openMCPAppsHost(t, e)

	t.Run("the extension is advertised and the view tool is kept from the model", func(t *testing.T) {
		got := eval[string](t, page, `JSON.stringify(window.mcpHost.serverExtensions)`)
		if got != `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}` {
			t.Fatalf("extensions %s", got)
		}
		if !eval[bool](t, page, `window.mcpHost.tools.some(t => t.name === "switchboard_panel_view") && !window.mcpHost.modelTools.includes("switchboard_panel_view") && window.mcpHost.modelTools.includes("panel-compose")`) {
			t.Fatal("visibility: " + eval[string](t, page, `JSON.stringify(window.mcpHost.modelTools)`))
		}
	})

	// The agent composes (the host calls the tool as its model asked). The
	// canvas policy's default asks the person before an agent's panel shows.
	eval[bool](t, page, `(window.composed = window.mcpHost.callAndShow("panel-compose", {spec: `+apolloSpec+`}), true)`)
	approve(t, e, "panel.compose")
	composed := eval[string](t, page, `window.composed.then(r => r.content[0].text)`)
	var v struct{ InstanceID string }
	if err := json.Unmarshal([]byte(composed), &v); err != nil || v.InstanceID == "" {
		t.Fatalf("compose: %s", composed)
	}
	poll(t, page, `window.mcpHost.views[0]?.initialized === true`)

	frame := viewFrame(t, e, page)
	poll(t, frame, `document.querySelector('[data-sb-path="owner"]')?.value === "Alex Doe"`)

	t.Run("the view is the safe renderer: text stays text, and the panel is marked as the agent's", func(t *testing.T) {
		if got := eval[string](t, frame, `(() => { const p = document.querySelector('[data-sb-node="intro"]'); return p.children.length + "|" + p.textContent })()`); got != "0|<b>not bold</b>: edit and save" {
			t.Fatalf("text node: %q", got)
		}
		if got := eval[string](t, frame, `document.querySelector(".sb-badge").textContent`); !strings.HasPrefix(got, "Composed by") {
			t.Fatalf("badge %q", got)
		}
	})

	t.Run("nothing in the view reaches the host page or the network", func(t *testing.T) {
		probe := `(async () => {
			const out = {};
			const tryIt = async (k, f) => { try { out[k] = "ok:" + String(await f()) } catch (e) { out[k] = "blocked:" + e.name } };
			await tryIt("parentDOM", () => window.parent.document.querySelector("#chat").dataset.secret);
			await tryIt("topLocation", () => window.top.location.href);
			await tryIt("cookie", () => document.cookie);
			await tryIt("localStorage", () => localStorage.length);
			await tryIt("fetch", () => fetch("` + hostURL + `/probe").then(r => r.status));
			await tryIt("image", () => new Promise((res, rej) => { const i = new Image(); i.onload = () => res("loaded"); i.onerror = () => rej(new TypeError("blocked")); i.src = "` + hostURL + `/probe?img"; }));
			out.origin = self.origin;
			return JSON.stringify(out);
		})()`
		var p map[string]string
		if err := json.Unmarshal([]byte(eval[string](t, frame, probe)), &p); err != nil {
			t.Fatal(err)
		}
		t.Logf("probe: %v", p)
		for _, k := range []string{"parentDOM", "topLocation", "cookie", "localStorage", "fetch", "image"} {
			if !strings.HasPrefix(p[k], "blocked:") {
				t.Errorf("%s: %q, want blocked", k, p[k])
			}
		}
		if p["origin"] != "null" {
			t.Errorf("the view's origin is %q, want the opaque origin", p["origin"])
		}
		if n := probes.Load(); n != 0 {
			t.Errorf("%d requests from the view reached the server", n)
		}
	})

	t.Run("the view refuses unknown methods and oversized messages from the host", func(t *testing.T) {
		got := eval[string](t, page, `window.mcpHost.postRaw(0, {jsonrpc: "2.0", id: "x1", method: "evil/run", params: {}}).then(JSON.stringify)`)
		if !strings.Contains(got, `"code":-32601`) {
			t.Errorf("unknown method: %s", got)
		}
		got = eval[string](t, page, `window.mcpHost.postRaw(0, {jsonrpc: "2.0", id: "x2", method: "ping", params: {pad: "x".repeat(2 << 20)}}).then(JSON.stringify)`)
		if !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "over") {
			t.Errorf("oversized: %s", got)
		}
		poll(t, page, `window.mcpHost.logs.filter(l => String(l.data).startsWith("refused a message from the host")).length >= 2`)
	})

	t.Run("edits go through panel.fill and the save waits for the approval", func(t *testing.T) {
		// The person selects the owner field's text and types over it.
		eval[bool](t, frame, `(() => { const i = document.querySelector('[data-sb-path="owner"]'); i.focus(); i.select(); return true })()`)
		do(t, frame, chromedp.KeyEvent("Kim Park"))
		poll(t, page, `window.mcpHost.calls.some(c => c.name === "panel-fill" && c.arguments.values?.owner === "Kim Park")`)
		waitDaemon(t, "the fill", func() bool {
			sn, err := e.d.Panels.Snapshot(ctx, v.InstanceID)
			return err == nil && sn.Values["project"]["owner"] == "Kim Park"
		})
		// Every call the view made was marked as the view's, for its instance.
		if !eval[bool](t, page, `window.mcpHost.calls.every(c => c.meta?.["switchboard/view"] === "`+v.InstanceID+`" && c.arguments.instanceId === "`+v.InstanceID+`")`) {
			t.Fatal("calls: " + eval[string](t, page, `JSON.stringify(window.mcpHost.calls)`))
		}

		do(t, frame, chromedp.Click(chromedp.CSS(`[data-sb-action="save"]`)))
		poll(t, frame, `document.querySelector('[data-sb-action-status="save"]')?.textContent === "Waiting for your approval…"`)
		approve(t, e, "data.projects.update", func() {
			// Nothing is saved before the person approves.
			if rec := apollo(t, e); rec["owner"] != "Alex Doe" {
				t.Fatalf("saved before the approval: %v", rec)
			}
		})
		poll(t, frame, `document.querySelector('[data-sb-action-status="save"]')?.textContent === "Done."`)
		if rec := apollo(t, e); rec["owner"] != "Kim Park" {
			t.Fatalf("stored %v", rec)
		}
		// The demo tab shows the same instance, saved.
		poll(t, demo, `document.querySelector('[data-sb-instance="`+v.InstanceID+`"] [data-sb-path="owner"]')?.value === "Kim Park"`)
	})

	// SWITCHBOARD_CHAT_SHOTS=$PWD/docs/chat refreshes docs/chat/mcp-apps-host.png.
	shot(t, page, "mcp-apps-host")
}

// TestMCPAppsHostWithoutATab: with no tab of the app open anywhere, the
// MCP Apps host alone shows the panel its agent composed (in the agent's
// chat surface), and the person edits and saves it there: the compose and
// the save each ask for approval and run once approved, and the backend's
// mutate runs exactly once.
func TestMCPAppsHostWithoutATab(t *testing.T) {
	if _, err := os.Stat(filepath.Join(mcpAppsDist, "host.js")); err != nil {
		t.Skipf("skipping the MCP Apps host test: the host page is not built (%v); build it with e2e/testdata/mcpapps-host/build.sh (needs node and npm)", err)
	}
	e := newEnv(t)
	ctx := context.Background()
	page, _, _ := openMCPAppsHost(t, e)
	if n := len(e.d.Sessions.PanelTabsElsewhere()); n != 0 || e.d.Sessions.ShowsPanels() {
		t.Fatalf("a tab shows panels (%d elsewhere)", n)
	}

	eval[bool](t, page, `(window.composed = window.mcpHost.callAndShow("panel-compose", {spec: `+apolloSpec+`}), true)`)
	approve(t, e, "panel.compose")
	composed := eval[string](t, page, `window.composed.then(r => r.content[0].text)`)
	var v struct{ InstanceID, SessionID string }
	if err := json.Unmarshal([]byte(composed), &v); err != nil || v.InstanceID == "" {
		t.Fatalf("compose: %s", composed)
	}
	if !strings.HasPrefix(v.SessionID, "chat_") {
		t.Fatalf("the panel went to %q, not the host's chat surface", v.SessionID)
	}
	poll(t, page, `window.mcpHost.views[0]?.initialized === true`)
	frame := viewFrame(t, e, page)
	poll(t, frame, `document.querySelector('[data-sb-path="owner"]')?.value === "Alex Doe"`)

	eval[bool](t, frame, `(() => { const i = document.querySelector('[data-sb-path="owner"]'); i.focus(); i.select(); return true })()`)
	do(t, frame, chromedp.KeyEvent("Sam Lee"))
	waitDaemon(t, "the fill", func() bool {
		sn, err := e.d.Panels.Snapshot(ctx, v.InstanceID)
		return err == nil && sn.Values["project"]["owner"] == "Sam Lee"
	})
	do(t, frame, chromedp.Click(chromedp.CSS(`[data-sb-action="save"]`)))
	poll(t, frame, `document.querySelector('[data-sb-action-status="save"]')?.textContent === "Waiting for your approval…"`)
	approve(t, e, "data.projects.update", func() {
		if rec := apollo(t, e); rec["owner"] != "Alex Doe" {
			t.Fatalf("saved before the approval: %v", rec)
		}
	})
	poll(t, frame, `document.querySelector('[data-sb-action-status="save"]')?.textContent === "Done."`)
	if rec := apollo(t, e); rec["owner"] != "Sam Lee" {
		t.Fatalf("stored %v", rec)
	}
	// The backend's mutate ran once: one call of it in the ledger, succeeded.
	var calls []switchboard.ActivityEntry
	page1, err := e.admin.Activity(ctx, client.ActivityQuery{Verb: "tool.call", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range page1.Items {
		if en.Target == "data.projects.update" {
			calls = append(calls, en)
		}
	}
	if len(calls) != 1 || !strings.Contains(string(calls[0].Details), "succeeded") {
		t.Fatalf("data.projects.update in the ledger: %+v", calls)
	}
}

// openMCPAppsHost serves the host page beside the daemon (one origin, as
// a desktop host talks to its server) and opens it, connected to /mcp
// with an agent token (agent:chat-host); probes counts anything that
// reaches hostURL/probe.
func openMCPAppsHost(t *testing.T, e *env) (page context.Context, hostURL string, probes *atomic.Int32) {
	t.Helper()
	probes = new(atomic.Int32)
	mux := http.NewServeMux()
	mux.Handle("GET /mcpapps-host/", http.StripPrefix("/mcpapps-host/", http.FileServer(http.Dir(mcpAppsDist))))
	mux.HandleFunc("/probe", func(w http.ResponseWriter, r *http.Request) { probes.Add(1) })
	mux.Handle("/", e.d.Handler())
	hostSrv := httptest.NewServer(mux)
	t.Cleanup(hostSrv.Close)

	tok, err := e.admin.CreateToken(context.Background(), client.TokenRequest{Agent: "chat-host"})
	if err != nil {
		t.Fatal(err)
	}
	page, cancel := e.tab(t, hostSrv.URL+"/mcpapps-host/index.html#token="+tok.Token)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("host calls: %s\nhost logs: %s", eval[string](t, page, `JSON.stringify(window.mcpHost.calls)`), eval[string](t, page, `JSON.stringify(window.mcpHost.logs)`))
		}
	})
	do(t, page, chromedp.EmulateViewport(900, 900))
	poll(t, page, `window.mcpHost && (window.mcpHost.ready || !!window.mcpHost.error)`)
	if msg := eval[string](t, page, `window.mcpHost.error`); msg != "" {
		t.Fatalf("host: %s", msg)
	}
	return page, hostSrv.URL, probes
}

// viewFrame attaches to the view's iframe (Chromium runs a sandboxed frame
// in its own process, a target of its own) and returns a context that
// drives it like a page.
func viewFrame(t *testing.T, e *env, page context.Context) context.Context {
	t.Helper()
	// Attached once the view is at rest: chromedp walks a target's
	// document as it attaches without holding the lock its DOM event
	// handler takes, so a view still building its DOM races inside
	// chromedp (seen under -race); a view at rest sends no events. At rest
	// is after its panel load (its first tool call) was answered and the
	// panel it rendered was measured: the first size alone comes before
	// the panel, whose render then raced an attach (CI, once).
	poll(t, page, `(v => v && v.height > 0 && v.answered >= 1 && v.answered === v.calls && v.sizedAt > v.answeredAt)(window.mcpHost.views.at(-1))`)
	deadline := time.Now().Add(stepTimeout)
	for {
		infos, err := chromedp.Targets(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Type == "iframe" && strings.HasPrefix(in.URL, "about:srcdoc") {
				fctx, cancel := chromedp.NewContext(page, chromedp.WithTargetID(target.ID(in.TargetID)))
				t.Cleanup(cancel)
				// Attach with the lasting context: cancelling the context of
				// the first run would detach it again.
				if err := chromedp.Do(fctx); err != nil {
					t.Fatalf("attach to the view: %v", err)
				}
				return fctx
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no iframe target among %d targets", len(infos))
		}
		time.Sleep(10 * time.Millisecond) // polling the browser's target list; no event is exposed here
	}
}

// approve waits for the one pending approval, checks it is the host
// agent's call of tool, runs before, and approves it as the person would.
func approve(t *testing.T, e *env, tool string, before ...func()) {
	t.Helper()
	ctx := context.Background()
	var pending []switchboard.ApprovalRequest
	waitDaemon(t, "the approval request for "+tool, func() bool {
		pending, _ = e.admin.Approvals(ctx, client.ApprovalQuery{Status: "pending"})
		return len(pending) == 1
	})
	if pending[0].Tool != tool || pending[0].Agent != "agent:chat-host" {
		t.Fatalf("approval %+v, want %s by agent:chat-host", pending[0], tool)
	}
	for _, f := range before {
		f()
	}
	if _, err := e.admin.Decide(ctx, pending[0].ID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
}

func apollo(t *testing.T, e *env) map[string]any {
	t.Helper()
	res := panelCall[map[string]any](t, e, "data.projects.query", map[string]any{"query": map[string]any{"where": map[string]any{"id": "apollo"}}})
	return res["records"].([]any)[0].(map[string]any)
}
