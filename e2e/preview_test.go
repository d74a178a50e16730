package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/preview"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/sqlite"
)

// previewEnv is newEnv with the sandboxed preview origin on a listener of
// its own (127.0.0.2 where the loopback network has it: another host, so
// not even the app's cookies reach it), the canvas policy open with code
// preview allowed, and a count of requests that reach the daemon from a
// preview (their Origin is the sandbox's opaque "null" or the preview's).
func previewEnv(t *testing.T) (*env, *preview.Server, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0") // another port is still another origin
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var escaped atomic.Int64
	var dp atomic.Pointer[daemon.Daemon] // set before the first request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o == "null" || strings.HasPrefix(o, "http://"+ln.Addr().String()) || strings.Contains(r.URL.RawQuery, "probe") {
			escaped.Add(1)
		}
		dp.Load().Handler().ServeHTTP(w, r)
	}))
	pv := preview.New("http://"+ln.Addr().String(), &preview.Options{FrameAncestors: []string{srv.URL}})
	ps := &httptest.Server{Listener: ln, Config: &http.Server{Handler: pv.Handler()}}
	ps.Start()
	d, err := daemon.New(ctx, daemon.Options{
		Store: st, AdminToken: adminToken, Demo: true, DemoKey: demoKey, Session: session.Options{Heartbeat: heartbeat},
		Canvas:   panel.CanvasPolicy{Preset: panel.CanvasOpen, AllowCodePreview: ptr(true)},
		Previews: pv, PreviewOrigin: pv.Origin(),
	})
	if err != nil {
		t.Fatal(err)
	}
	dp.Store(d)
	e := &env{t: t, d: d, srv: srv, admin: client.New(srv.URL, adminToken, nil)}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		d.Close()
		srv.Close()
		ps.Close()
		st.Close()
	})
	e.browser = startChromium(t, e)
	return e, pv, &escaped
}

func ptr[T any](v T) *T { return &v }

// probeCode is the agent's "widget": it tries every way out of the preview
// and reports what happened to the parent (postMessage is the one channel
// a sandboxed frame keeps; the SDK ignores it).
const probeCode = `<p id=w>widget</p><script>
const r = {};
const t = (k, f) => { try { r[k] = "ok:" + String(f()); } catch (e) { r[k] = "blocked:" + e.name; } };
t("parentDOM", () => parent.document.title);
t("parentSecret", () => parent.sbSecret);
t("cookie", () => document.cookie);
t("localStorage", () => localStorage.getItem("sb_secret"));
t("sessionStorage", () => sessionStorage.length);
t("origin", () => self.origin);
t("topNav", () => { top.location.href = "https://evil.test/"; return "assigned"; });
t("open", () => window.open("https://evil.test/") === null ? "null" : "opened");
new Image().src = "API/api/v1/tools?probe=img";
fetch("API/api/v1/tools?probe=fetch", {headers: {"Authorization": "Bearer x"}})
  .then((x) => { r.fetch = "ok:" + x.status; }, (e) => { r.fetch = "blocked:" + e.name; })
  .finally(() => parent.postMessage({probe: r}, "*"));
</script>`

func previewSpec(code string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"v": 1, "root": "body", "nodes": map[string]any{
		"body": map[string]any{"type": "panel-body", "props": map[string]any{"title": "Widget"}, "children": []string{"p"}},
		"p":    map[string]any{"type": "preview", "props": map[string]any{"title": "Probe", "code": code, "height": 120}},
	}})
	return b
}

// TestPreviewSandboxInChromium: code in a preview runs, but cannot read the
// parent's DOM, cookies or storage, cannot reach the daemon's API, cannot
// navigate the top window; the open surface shows its indicator; with
// allowCodePreview off the node is refused with SPEC_UNSAFE.
func TestPreviewSandboxInChromium(t *testing.T) {
	e, pv, escaped := previewEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	poll(t, ctx, `!!window.switchboardPanels`)
	eval[bool](t, ctx, `window.switchboardPanels.ready.then(() => true)`)
	eval[bool](t, ctx, `(() => {
		document.cookie = "sb_secret=cookie-value; path=/";
		localStorage.setItem("sb_secret", "storage-value");
		window.sbSecret = "dom-value";
		window.previewReports = [];
		window.addEventListener("message", (ev) => { if (ev.data && ev.data.probe) window.previewReports.push({origin: ev.origin, probe: ev.data.probe}); });
		return true })()`)

	t.Run("the open surface shows its indicator; one setting switches it", func(t *testing.T) {
		poll(t, ctx, `document.querySelector('[data-sb-canvas="open"]')?.textContent.startsWith("Open canvas")`)
		put := func(body string) {
			req, _ := http.NewRequest("PUT", e.srv.URL+"/api/v1/canvas", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("PUT /api/v1/canvas %s: %v %v", body, resp, err)
			}
			resp.Body.Close()
		}
		put(`{"preset": "guarded"}`)
		poll(t, ctx, `!document.querySelector('[data-sb-canvas]')`)
		put(`{"preset": "open"}`)
		poll(t, ctx, `!!document.querySelector('[data-sb-canvas="open"]')`)
	})

	t.Run("a draft shows its badge until the user pins it", func(t *testing.T) {
		if _, err := e.d.Panels.SetHostCanvas(panel.CanvasPolicy{AutoPin: ptr(false)}); err != nil {
			t.Fatal(err)
		}
		spec := json.RawMessage(`{"v": 1, "root": "t", "nodes": {"t": {"type": "text", "props": {"text": "a draft"}}}}`)
		v := panelCall[struct{ InstanceID string }](t, e, panel.ToolCompose, map[string]any{"spec": spec})
		frame := `[data-sb-instance="` + v.InstanceID + `"]`
		poll(t, ctx, `(() => { const d = document.querySelector('`+frame+` [data-sb-draft]'); return !!d && !d.hidden })()`)
		click(t, ctx, frame+` .sb-pin`)
		poll(t, ctx, `document.querySelector('`+frame+` [data-sb-draft]').hidden && document.querySelector('`+frame+` .sb-pin').hidden`)
		if sn, err := e.d.Panels.Snapshot(context.Background(), v.InstanceID); err != nil || !sn.Pinned {
			t.Fatalf("pinned in the daemon: %v %v", sn.Pinned, err)
		}
		if _, err := e.d.Panels.SetHostCanvas(panel.CanvasPolicy{}); err != nil {
			t.Fatal(err)
		}
	})

	code := strings.ReplaceAll(probeCode, "API", e.srv.URL)
	v := panelCall[struct{ InstanceID string }](t, e, panel.ToolCompose, map[string]any{"spec": previewSpec(code)})
	sel := `[data-sb-instance="` + v.InstanceID + `"] iframe`
	poll(t, ctx, `!!document.querySelector('`+sel+`')`)

	t.Run("the iframe is sandboxed and on the preview origin", func(t *testing.T) {
		got := eval[string](t, ctx, `(() => { const f = document.querySelector('`+sel+`');
			return [f.getAttribute("sandbox"), new URL(f.src).origin, String(f.contentDocument), String(f.hasAttribute("srcdoc"))].join("|") })()`)
		if want := "allow-scripts|" + pv.Origin() + "|null|false"; got != want {
			t.Fatalf("iframe %q, want %q", got, want)
		}
		resp, err := http.Get(eval[string](t, ctx, `document.querySelector('`+sel+`').src`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "connect-src 'none'", "sandbox allow-scripts", "frame-ancestors " + e.srv.URL} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if resp.Header.Get("Set-Cookie") != "" {
			t.Error("the preview origin sets a cookie")
		}
	})

	t.Run("code in the preview cannot get out", func(t *testing.T) {
		poll(t, ctx, `window.previewReports.length > 0`)
		var rep struct {
			Origin string            `json:"origin"`
			Probe  map[string]string `json:"probe"`
		}
		raw := eval[string](t, ctx, `JSON.stringify(window.previewReports[0])`)
		if err := json.Unmarshal([]byte(raw), &rep); err != nil {
			t.Fatal(err)
		}
		t.Logf("probe: %s", raw)
		if rep.Origin != "null" {
			t.Errorf("the preview's messages come from %q, want the opaque origin null", rep.Origin)
		}
		p := rep.Probe
		for _, k := range []string{"parentDOM", "parentSecret", "cookie", "localStorage", "sessionStorage", "topNav", "fetch"} {
			if !strings.HasPrefix(p[k], "blocked:") {
				t.Errorf("%s: %q, want blocked", k, p[k])
			}
		}
		if p["origin"] != "ok:null" {
			t.Errorf("self.origin %q", p["origin"])
		}
		if p["open"] == "ok:opened" {
			t.Errorf("window.open opened a window")
		}
		for k, v := range p {
			for _, secret := range []string{"cookie-value", "storage-value", "dom-value"} {
				if strings.Contains(v, secret) {
					t.Errorf("%s read the parent's %s", k, secret)
				}
			}
		}
		if got := eval[string](t, ctx, `location.href`); got != e.srv.URL+"/demo/" {
			t.Errorf("the top window navigated to %s", got)
		}
		if n := escaped.Load(); n != 0 {
			t.Errorf("%d requests from the preview reached the daemon", n)
		}
	})

	t.Run("with allowCodePreview off the node is refused", func(t *testing.T) {
		if _, err := e.d.Panels.SetHostCanvas(panel.CanvasPolicy{AllowCodePreview: ptr(false)}); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"spec": previewSpec("<b>x</b>")})
		_, err := e.call(panel.ToolCompose, "", string(b))
		if switchboard.CodeOf(err) != switchboard.CodeSpecUnsafe || !strings.Contains(err.Error(), "allowCodePreview") {
			t.Fatalf("want SPEC_UNSAFE: %v", err)
		}
	})
}
