package daemon_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/sqlite"
)

// A plain daemon (no host panel, no EnablePanels, no --demo) offers an
// agent the panel tools it can serve while a tab whose panel renderer
// attached is connected — over the HTTP listing and MCP alike, and MCP
// clients hear list_changed — and none once that tab is gone. panel.open
// waits for a host panel.
func TestPanelToolsOfferedWhileATabShowsPanels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	p := &panelDaemon{d: d, srv: srv}
	tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	agent := tok.Token

	overHTTP := func() map[string]bool {
		t.Helper()
		code, body := p.do(t, agent, "GET", "/api/v1/tools", "")
		if code != 200 {
			t.Fatalf("GET /api/v1/tools: %d %v", code, body)
		}
		names := map[string]bool{}
		for _, tl := range body["tools"].([]any) {
			names[tl.(map[string]any)["name"].(string)] = true
		}
		return names
	}
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{agent}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	overMCP := func() map[string]bool {
		t.Helper()
		names := map[string]bool{}
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names[tl.Name] = true
		}
		return names
	}
	served := []string{panel.ToolCompose, panel.ToolPatch, panel.ToolClose, panel.ToolDescribe, panel.ToolList,
		panel.ToolReadState, panel.ToolFill, panel.ToolRunAction, "document.export"}
	mcpName := func(n string) string { // names.go: "." ↔ "-"
		b := []byte(n)
		for i := range b {
			if b[i] == '.' {
				b[i] = '-'
			}
		}
		return string(b)
	}
	expect := func(when string, offered bool) {
		t.Helper()
		h, m := overHTTP(), overMCP()
		for _, n := range served {
			if h[n] != offered || m[mcpName(n)] != offered {
				t.Fatalf("%s: %s over HTTP %v, over MCP %v; want %v (HTTP lists %v)", when, n, h[n], m[mcpName(n)], offered, h)
			}
		}
		if h[panel.ToolOpen] || m[mcpName(panel.ToolOpen)] {
			t.Fatalf("%s: panel.open is offered without a host panel", when)
		}
	}

	expect("no tab", false)
	if code, body := p.call(t, agent, panel.ToolCompose, map[string]any{"spec": map[string]any{}}); code != 404 || panelErrCode(body) != "TOOL_NOT_FOUND" {
		t.Fatalf("compose with no tab: %d %v", code, body)
	}

	tab, err := d.Sessions.Create(ctx, "user:7")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.Sessions.Attach(ctx, tab.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	expect("a tab without a renderer", false)
	drainSignals(changed)
	if code, body := p.do(t, tab.SessionToken, "GET", "/api/v1/sessions/"+tab.SessionID+"/panels", ""); code != 200 {
		t.Fatalf("attach the renderer: %d %v", code, body)
	}
	awaitChanged(t, changed, "the renderer attached")
	expect("a tab showing panels", true)
	if code, body := p.call(t, agent, panel.ToolDescribe, map[string]any{"noExamples": true}); code != 200 {
		t.Fatalf("describe with a tab: %d %v", code, body)
	}

	drainSignals(changed)
	conn.Close()
	awaitChanged(t, changed, "the tab left")
	expect("the tab gone", false)

	// A host panel offers them all, and panel.open, with or without a tab.
	if err := d.RegisterPanel(ctx, notePanel(t, "note", "")); err != nil {
		t.Fatal(err)
	}
	if h := overHTTP(); !h[panel.ToolOpen] || !h[panel.ToolCompose] {
		t.Fatalf("with a host panel the agent lists %v", h)
	}
}

func drainSignals(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// awaitChanged waits for an MCP list_changed notification; the bound only
// keeps a lost notification from hanging the test.
func awaitChanged(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no tools/list_changed after %s", what)
	}
}
