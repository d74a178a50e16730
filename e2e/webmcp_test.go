package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/session"
)

// webmcpPage is a stock WebMCP page: its tools use only
// document.modelContext (loaded first with /sdk/modelcontext.js, which is
// the browser's own API or the polyfill); switchboard is one more module
// that connects the tab. Credentials come in the fragment (a real app gets
// them from its backend).
const webmcpPage = `<!doctype html><meta charset="utf-8"><title>webmcp</title><p id="out"></p>
<script type="module" src="{{DAEMON}}/sdk/modelcontext.js"></script>
<script type="module">
const mc = document.modelContext;
window.cartOff = new AbortController();
window.registered = [];
window.refusedByBrowser = [];
const reg = (tool, opts) => mc.registerTool(tool, opts).then(() => window.registered.push(tool.name),
  (e) => window.refusedByBrowser.push(tool.name + ": " + e.name));
const obj = (props = {}) => ({ type: "object", properties: props });
reg({ name: "searchFlights", title: "Search flights", description: "Search flights to a city.",
  inputSchema: { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
  annotations: { readOnlyHint: true, untrustedContentHint: true },
  execute: async ({ to }) => ({ flights: [to + "-1", to + "-2"] }) });
reg({ name: "cart.show", description: "Show the cart.", inputSchema: obj(),
  annotations: { readOnlyHint: true }, execute: () => "2 items" }, { signal: window.cartOff.signal });
reg({ name: "view.highlight", description: "Highlight text on the page.", inputSchema: obj({ text: { type: "string" } }),
  execute: ({ text }) => { document.getElementById("out").textContent = text; return { highlighted: text }; } });
// Not read-only and not declared view-state-only: refused by switchboard.
reg({ name: "orders.place", description: "Place the order.", inputSchema: obj(), execute: () => ({ placed: true }) });
// Bad tools: each is refused or bounded alone.
reg({ name: "view.hang", description: "Never answers.", inputSchema: obj(), annotations: { readOnlyHint: true }, execute: () => new Promise(() => {}) });
reg({ name: "view.throws", description: "Throws.", inputSchema: obj(), annotations: { readOnlyHint: true }, execute: () => { throw new Error("boom"); } });
reg({ name: "view.cycle", description: "Returns a cycle.", inputSchema: obj(), annotations: { readOnlyHint: true }, execute: () => { const o = {}; o.o = o; return o; } });
reg({ name: "view.fn", description: "Returns a function.", inputSchema: obj(), annotations: { readOnlyHint: true }, execute: () => () => 1 });
reg({ name: "view.bad_schema", description: "A schema that is not JSON Schema.", inputSchema: obj({ n: { type: "nmber" } }),
  annotations: { readOnlyHint: true }, execute: () => 1 });
reg({ name: "view.huge", description: "A 5 MB schema.", inputSchema: obj({ n: { type: "string", description: "x".repeat(5 << 20) } }),
  annotations: { readOnlyHint: true }, execute: () => 1 });
</script>
<script type="module">
const p = new URLSearchParams(location.hash.slice(1));
const { connect } = await import("{{DAEMON}}/sdk/switchboard.js");
window.errors = [];
const sb = connect({ url: "{{DAEMON}}", sessionId: p.get("session"), sessionToken: p.get("token"),
  handlerTimeoutMs: 1000, webmcp: { viewStateOnly: ["view.highlight", "flights.search_form"] } });
sb.on("status", (s) => { window.status = s; });
sb.on("error", (e) => window.errors.push(String(e.code) + " " + e.message.slice(0, 200)));
window.sb = sb;
</script>`

// formPage declares its tool as a form (WebMCP's declarative form) and
// answers an agent's submission with respondWith.
const formPage = `<!doctype html><meta charset="utf-8"><title>form</title>
<form toolname="flights.search_form" tooldescription="Search flights to a city." toolautosubmit>
  <input name="to" toolparamdescription="The destination city" required>
  <select name="cabin" toolparamdescription="The cabin"><option>economy</option><option>business</option></select>
  <button>Search</button>
</form><p id="out"></p>
<script type="module" src="{{DAEMON}}/sdk/modelcontext.js"></script>
<script type="module">
const form = document.querySelector("form");
form.addEventListener("submit", (e) => {
  e.preventDefault();
  const data = Object.fromEntries(new FormData(form));
  document.getElementById("out").textContent = data.to + "/" + data.cabin;
  if (e.agentInvoked) e.respondWith(Promise.resolve({ searched: data }));
});
const p = new URLSearchParams(location.hash.slice(1));
const { connect } = await import("{{DAEMON}}/sdk/switchboard.js");
window.errors = [];
const sb = connect({ url: "{{DAEMON}}", sessionId: p.get("session"), sessionToken: p.get("token"),
  webmcp: { viewStateOnly: ["flights.search_form"] } });
sb.on("status", (s) => { window.status = s; });
sb.on("error", (e) => window.errors.push(String(e.code) + " " + e.message.slice(0, 200)));
window.sb = sb;
</script>`

// webmcpApp serves a page from its own origin, with the daemon's URL filled in.
func webmcpApp(t *testing.T, page string) (*httptest.Server, func(daemon string)) {
	var mu sync.Mutex
	var body string
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(app.Close)
	return app, func(daemon string) {
		mu.Lock()
		body = strings.ReplaceAll(page, "{{DAEMON}}", daemon)
		mu.Unlock()
	}
}

// webmcpModes are the two ways a page gets document.modelContext: Chromium's
// own (behind the WebMCP feature flag in Chromium 156) and the polyfill.
var webmcpModes = []struct {
	name  string
	flags []chromedp.ExecAllocatorOption
}{
	{"native", []chromedp.ExecAllocatorOption{chromedp.Flag("enable-features", "WebMCP")}},
	{"polyfill", nil},
}

// cliDir holds the CLI binary cliBinary builds; TestMain removes it.
var cliDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if cliDir != "" {
		os.RemoveAll(cliDir)
	}
	os.Exit(code)
}

// cliBinary builds the switchboard CLI once for the tests that drive it.
var cliBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sb-cli-")
	if err != nil {
		return "", err
	}
	cliDir = dir
	bin := filepath.Join(dir, "switchboard")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/switchboardhq/switchboard/cmd/switchboard").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// cli runs the switchboard CLI against env e's daemon.
func (e *env) cli(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SWITCHBOARD_ADDR="+strings.TrimPrefix(e.srv.URL, "http://"), "SWITCHBOARD_TOKEN="+adminToken)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("switchboard %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// mcpAgent connects the official MCP Go SDK client to e's /mcp with an
// agent token; changed receives tools/list_changed notifications.
func (e *env) mcpAgent(t *testing.T, allow ...string) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	bg := context.Background()
	tok, err := e.admin.CreateToken(bg, client.TokenRequest{Agent: "claude", Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "webmcp-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}).Connect(bg, &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok.Token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

func mcpToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	return names
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("MCP call %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestWebMCPPageInChromium: a stock page registers its tools with
// document.modelContext only; connect() makes them the tab's browser
// tools, callable from the official MCP SDK client and from the CLI, with
// bad tools refused alone and bad calls bounded. Run with Chromium's own
// WebMCP (feature flag) and with the polyfill.
func TestWebMCPPageInChromium(t *testing.T) {
	for _, mode := range webmcpModes {
		t.Run(mode.name, func(t *testing.T) {
			app, setPage := webmcpApp(t, webmcpPage)
			e := newEnvFlags(t, session.Options{Heartbeat: heartbeat}, mode.flags, app.URL)
			setPage(e.srv.URL)
			bg := context.Background()
			cred, err := e.admin.CreateSession(bg, "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := e.tab(t, app.URL+"/#session="+cred.SessionID+"&token="+cred.SessionToken)
			defer cancel()
			poll(t, ctx, `window.status === "open"`)
			if got := eval[string](t, ctx, `window.sb.webmcp`); got != mode.name {
				t.Fatalf("the SDK bridged a %q document.modelContext, want %q", got, mode.name)
			}
			// The good tools (names that fit the grammar kept as they are,
			// searchFlights mapped) and the bounded ones; the rest refused.
			want := []string{"cart.show", "page.search_flights", "view.cycle", "view.fn", "view.hang", "view.highlight", "view.throws"}
			e.waitTools(t, cred.SessionID, want...)
			poll(t, ctx, `["EXEMPTION_VIOLATION", "SCHEMA_VIOLATION", "PAYLOAD_TOO_LARGE"].every((c) => window.errors.some((e) => e.startsWith(c)))`)
			t.Logf("refused by the browser: %v; reported by the SDK: %v",
				eval[[]string](t, ctx, `window.refusedByBrowser`), eval[[]string](t, ctx, `window.errors`))

			tools, err := e.admin.SessionTools(bg, cred.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools {
				switch tl.Name {
				case "page.search_flights":
					if tl.Class != "read" || tl.UI == nil || tl.UI.Title != "Search flights" || !strings.Contains(string(tl.UI.Details), `"untrustedContent":true`) {
						t.Errorf("searchFlights advertised as %+v (ui %+v)", tl, tl.UI)
					}
				case "view.highlight":
					if tl.Class != "ui" {
						t.Errorf("view.highlight (declared view-state-only) has class %s", tl.Class)
					}
				}
			}

			// The CLI lists the tab's tools and calls one.
			list := e.cli(t, "tools", "list", "--session", cred.SessionID)
			for _, n := range want {
				if !strings.Contains(list, n) {
					t.Errorf("tools list --session lacks %s:\n%s", n, list)
				}
			}
			out := e.cli(t, "tools", "call", "view.highlight", "--session", cred.SessionID, "--input", `{"text":"from the CLI"}`)
			if !strings.Contains(out, "from the CLI") {
				t.Errorf("CLI call answered %s", out)
			}
			poll(t, ctx, `document.getElementById("out").textContent === "from the CLI"`)

			// The official MCP client lists and calls them.
			cs, changed := e.mcpAgent(t, "page.*", "cart.*", "view.*")
			names := mcpToolNames(t, cs)
			for _, n := range []string{"page-search_flights", "cart-show", "view-highlight"} {
				if !slices.Contains(names, n) {
					t.Fatalf("MCP tools/list has %v, want %s among them", names, n)
				}
			}
			res := mcpCall(t, cs, "page-search_flights", map[string]any{"to": "Oslo", "sessionId": cred.SessionID})
			if res.IsError || !strings.Contains(resultText(res), "Oslo-2") {
				t.Fatalf("MCP call of searchFlights: %s (error %v)", resultText(res), res.IsError)
			}
			// The call is in the ledger, attributed to the agent, its result
			// marked as page content.
			waitDaemon(t, "the ledger entry of the MCP call", func() bool {
				page, err := e.admin.Activity(bg, client.ActivityQuery{Verb: "tool.call", Limit: 100})
				for _, en := range page.Items {
					if err == nil && en.Target == "page.search_flights" && strings.Contains(en.Actor, "claude") && strings.Contains(string(en.Provenance), "site-html") {
						return true
					}
				}
				return false
			})
			res = mcpCall(t, cs, "cart-show", map[string]any{})
			if res.IsError || !strings.Contains(resultText(res), "2 items") {
				t.Fatalf("MCP call of cart.show: %s", resultText(res))
			}

			// Bad calls end with a code, never hang.
			for tool, code := range map[string]string{"view.hang": "TIMEOUT", "view.throws": "INTERNAL"} {
				resp, err := e.call(tool, cred.SessionID, `{}`)
				if err == nil && (resp.Error == nil || string(resp.Error.Code) != code) {
					t.Errorf("%s answered %s %+v, want %s", tool, resp.Result, resp.Error, code)
				}
				if err != nil && !strings.Contains(err.Error(), code) {
					t.Errorf("%s: %v, want %s", tool, err, code)
				}
			}
			for _, tool := range []string{"view.cycle", "view.fn"} {
				resp, err := e.call(tool, cred.SessionID, `{}`)
				if err == nil && (resp.Error == nil || resp.Error.Code != "INTERNAL") {
					t.Errorf("%s answered %s %+v, want INTERNAL", tool, resp.Result, resp.Error)
				}
				if err != nil && !strings.Contains(err.Error(), "INTERNAL") {
					t.Errorf("%s: %v, want INTERNAL", tool, err)
				}
			}
			if got := eval[string](t, ctx, `window.status`); got != "open" {
				t.Fatalf("after the bad calls the tab is %s", got)
			}

			// Aborting the signal withdraws cart.show while the MCP agent lists.
			for len(changed) > 0 {
				<-changed
			}
			eval[bool](t, ctx, `(window.cartOff.abort(), true)`)
			e.waitTools(t, cred.SessionID, slices.DeleteFunc(slices.Clone(want), func(n string) bool { return n == "cart.show" })...)
			select {
			case <-changed:
			case <-time.After(stepTimeout):
				t.Fatal("the MCP agent heard no tools/list_changed after the page withdrew a tool")
			}
			if names := mcpToolNames(t, cs); slices.Contains(names, "cart-show") {
				t.Fatalf("MCP tools/list still has cart-show: %v", names)
			}
			cctx, ccancel := context.WithTimeout(bg, stepTimeout)
			defer ccancel()
			if res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "cart-show", Arguments: map[string]any{"sessionId": cred.SessionID}}); err == nil && !res.IsError {
				t.Fatalf("a withdrawn tool answered %s", resultText(res))
			}
		})
	}
}

// TestWebMCPFormInChromium: a declarative form tool (<form toolname>) is
// the tab's browser tool; an agent's call fills and submits the form, and
// the page's respondWith answer is the result.
func TestWebMCPFormInChromium(t *testing.T) {
	for _, mode := range webmcpModes {
		t.Run(mode.name, func(t *testing.T) {
			app, setPage := webmcpApp(t, formPage)
			e := newEnvFlags(t, session.Options{Heartbeat: heartbeat}, mode.flags, app.URL)
			setPage(e.srv.URL)
			cred, err := e.admin.CreateSession(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := e.tab(t, app.URL+"/#session="+cred.SessionID+"&token="+cred.SessionToken)
			defer cancel()
			poll(t, ctx, `window.status === "open"`)
			if got := eval[string](t, ctx, `window.sb.webmcp`); got != mode.name {
				t.Fatalf("the SDK bridged a %q document.modelContext, want %q", got, mode.name)
			}
			e.waitTools(t, cred.SessionID, "flights.search_form")
			tools, _ := e.admin.SessionTools(context.Background(), cred.SessionID)
			var schema map[string]any
			_ = json.Unmarshal(tools[0].InputSchema, &schema)
			if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "to" {
				t.Errorf("the form's schema: %s", tools[0].InputSchema)
			}

			cs, _ := e.mcpAgent(t, "flights.*")
			res := mcpCall(t, cs, "flights-search_form", map[string]any{"to": "Oslo", "cabin": "business"})
			if res.IsError || !strings.Contains(resultText(res), "business") {
				t.Fatalf("MCP call of the form tool: %s (error %v)", resultText(res), res.IsError)
			}
			poll(t, ctx, `document.getElementById("out").textContent === "Oslo/business"`)
			out := e.cli(t, "tools", "call", "flights.search_form", "--session", cred.SessionID, "--input", `{"to":"Rome"}`)
			if !strings.Contains(out, "Rome") {
				t.Errorf("CLI call of the form tool answered %s", out)
			}
			// Fields the call leaves out keep what the form holds.
			poll(t, ctx, `document.getElementById("out").textContent === "Rome/business"`)
		})
	}
}

// leavingFormPage declares a form tool with toolautosubmit and no submit
// listener: an agent's call submits the form and the page navigates away.
// It counts its loads, so the test sees the navigation happen.
const leavingFormPage = `<!doctype html><meta charset="utf-8"><title>leaving form</title>
<form toolname="flights.search" tooldescription="Search flights to a city." toolautosubmit>
  <input name="to" toolparamdescription="The destination city" required>
</form>
<script type="module" src="{{DAEMON}}/sdk/modelcontext.js"></script>
<script type="module">
sessionStorage.loads = (Number(sessionStorage.loads) || 0) + 1;
const p = new URLSearchParams(location.hash.slice(1));
const { connect } = await import("{{DAEMON}}/sdk/switchboard.js");
const sb = connect({ url: "{{DAEMON}}", sessionId: p.get("session"), sessionToken: p.get("token"),
  webmcp: { viewStateOnly: ["flights.search"] } });
sb.on("status", (s) => { window.status = s; });
</script>`

// TestWebMCPFormNavigatesInChromium: a form tool whose submission is not
// answered with respondWith navigates the page away; the agent's call fails
// with SESSION_GONE instead of succeeding with "undefined" or null.
func TestWebMCPFormNavigatesInChromium(t *testing.T) {
	for _, mode := range webmcpModes {
		t.Run(mode.name, func(t *testing.T) {
			app, setPage := webmcpApp(t, leavingFormPage)
			e := newEnvFlags(t, session.Options{Heartbeat: heartbeat}, mode.flags, app.URL)
			setPage(e.srv.URL)
			cred, err := e.admin.CreateSession(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := e.tab(t, app.URL+"/#session="+cred.SessionID+"&token="+cred.SessionToken)
			defer cancel()
			poll(t, ctx, `window.status === "open"`)
			e.waitTools(t, cred.SessionID, "flights.search")

			resp, err := e.call("flights.search", cred.SessionID, `{"to":"Oslo"}`)
			code := ""
			if resp.Error != nil {
				code = string(resp.Error.Code)
			}
			if err == nil && code == "" || resp.Status == "succeeded" {
				t.Fatalf("a call whose form navigated the page away succeeded: %s %s", resp.Status, resp.Result)
			}
			if !strings.Contains(code+" "+fmt.Sprint(err), "SESSION_GONE") {
				t.Fatalf("the call failed with %q (%v), want SESSION_GONE", code, err)
			}
			// The form's submission did load the page again.
			poll(t, ctx, `sessionStorage.loads === "2"`)
		})
	}
}

// duplicatesPage registers one WebMCP name twice, and two names that map to
// one switchboard name.
const duplicatesPage = `<!doctype html><meta charset="utf-8"><title>duplicates</title>
<script type="module" src="{{DAEMON}}/sdk/modelcontext.js"></script>
<script type="module">
const mc = document.modelContext;
window.rejected = [];
const ro = { readOnlyHint: true }, obj = { type: "object", properties: {} };
const reg = (name, answer) => mc.registerTool({ name, description: "d", inputSchema: obj, annotations: ro, execute: () => answer })
  .catch(() => window.rejected.push(name));
await reg("cart.show", "first");
await reg("cart.show", "second");
await reg("page.search_flights", "snake");
await reg("searchFlights", "camel");
const p = new URLSearchParams(location.hash.slice(1));
const { connect } = await import("{{DAEMON}}/sdk/switchboard.js");
window.errors = [];
const sb = connect({ url: "{{DAEMON}}", sessionId: p.get("session"), sessionToken: p.get("token") });
sb.on("status", (s) => { window.status = s; });
sb.on("error", (e) => window.errors.push(String(e.code) + " " + e.message.slice(0, 200)));
</script>`

// TestWebMCPDuplicateNamesInChromium: the same WebMCP name twice is
// rejected by registerTool itself (the browser's API and the polyfill
// alike); two names that map to one switchboard name leave the first
// registered in place and report CONFLICT.
func TestWebMCPDuplicateNamesInChromium(t *testing.T) {
	for _, mode := range webmcpModes {
		t.Run(mode.name, func(t *testing.T) {
			app, setPage := webmcpApp(t, duplicatesPage)
			e := newEnvFlags(t, session.Options{Heartbeat: heartbeat}, mode.flags, app.URL)
			setPage(e.srv.URL)
			cred, err := e.admin.CreateSession(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := e.tab(t, app.URL+"/#session="+cred.SessionID+"&token="+cred.SessionToken)
			defer cancel()
			poll(t, ctx, `window.status === "open" && window.errors.some((e) => e.startsWith("CONFLICT"))`)
			if got := eval[[]string](t, ctx, `window.rejected`); !slices.Equal(got, []string{"cart.show"}) {
				t.Errorf("registerTool rejected %v, want the second cart.show", got)
			}
			e.waitTools(t, cred.SessionID, "cart.show", "page.search_flights")
			for tool, want := range map[string]string{"cart.show": `"first"`, "page.search_flights": `"snake"`} {
				resp, err := e.call(tool, cred.SessionID, `{}`)
				if err != nil || string(resp.Result) != want {
					t.Errorf("%s answered %s (%v), want %s", tool, resp.Result, err, want)
				}
			}
		})
	}
}

// floodPage registers 10,000 WebMCP tools.
const floodPage = `<!doctype html><meta charset="utf-8"><title>flood</title>
<script type="module" src="{{DAEMON}}/sdk/modelcontext.js"></script>
<script type="module">
const regs = [];
for (let i = 0; i < 10000; i++) {
  regs.push(document.modelContext.registerTool({ name: "flood.t" + String(i).padStart(5, "0"), description: "Tool " + i + ".",
    inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ({ i }) }));
}
await Promise.allSettled(regs);
const p = new URLSearchParams(location.hash.slice(1));
const { connect } = await import("{{DAEMON}}/sdk/switchboard.js");
window.errors = [];
const sb = connect({ url: "{{DAEMON}}", sessionId: p.get("session"), sessionToken: p.get("token") });
sb.on("status", (s) => { window.status = s; });
sb.on("error", (e) => window.errors.push(String(e.code) + " " + e.message.slice(0, 200)));
</script>`

// TestWebMCPFloodInChromium: a page with 10,000 WebMCP tools advertises
// the daemon's per-tab maximum, reports the rest refused, and stays usable.
func TestWebMCPFloodInChromium(t *testing.T) {
	app, setPage := webmcpApp(t, floodPage)
	e := newEnvFlags(t, session.Options{Heartbeat: heartbeat}, nil, app.URL)
	setPage(e.srv.URL)
	cred, err := e.admin.CreateSession(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := e.tab(t, app.URL+"/#session="+cred.SessionID+"&token="+cred.SessionToken)
	defer cancel()
	poll(t, ctx, `window.status === "open" && window.errors.some((e) => e.startsWith("INVALID_INPUT"))`)
	want := make([]string, session.DefaultMaxTools)
	for i := range want {
		want[i] = fmt.Sprintf("flood.t%05d", i)
	}
	e.waitTools(t, cred.SessionID, want...)
	resp, err := e.call("flood.t00255", cred.SessionID, `{}`)
	if err != nil || string(resp.Result) != `{"i":255}` {
		t.Fatalf("a call to the 256th tool: %s %v", resp.Result, err)
	}
}
