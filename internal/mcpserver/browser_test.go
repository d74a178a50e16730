package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

func navTool() switchboard.Tool {
	return switchboard.Tool{
		Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		Surface:      switchboard.SurfaceBrowser,
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"},"tab":{"type":"string"}},"required":["page"]}`),
	}
}

// goTo answers nav.goto with the page and the tab that ran it.
func goTo(tab string) func(context.Context, switchboard.BrowserActionRequest) (json.RawMessage, error) {
	return func(_ context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error) {
		var in struct{ Page string }
		_ = json.Unmarshal(req.Input, &in)
		if in.Page == "missing" {
			return nil, switchboard.Errorf(switchboard.CodeNotFound, "no page %q", in.Page)
		}
		return json.Marshal(map[string]string{"page": in.Page, "tab": tab})
	}
}

func TestBrowserToolOverMCP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{ProgressInterval: 5 * time.Millisecond})
	progress := make(chan *mcp.ProgressNotificationParams, 100)
	cs := e.connect(adminToken, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		progress <- r.Params
	}})
	// The tab waits until the client has heard that the call is waiting on
	// it, so the progress relay is exercised without timing assumptions.
	tab := e.tab(func(ctx context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error) {
		if strings.Contains(string(req.Input), "reports") { // the call made with a progress token
			for range 2 {
				if p := <-progress; p.ProgressToken != "nav-1" || p.Message == "" {
					t.Errorf("progress %+v", p)
				}
			}
		}
		return goTo("the tab")(ctx, req)
	}, navTool())

	listed, _ := listAll(t, cs)
	nav := byName(listed)["nav-goto"]
	if nav == nil {
		t.Fatalf("live browser tool not listed: %v", keys(byName(listed)))
	}
	schema, _ := json.Marshal(nav.InputSchema)
	if !strings.Contains(string(schema), `"sessionId"`) || !strings.Contains(nav.Description, "browser tab") {
		t.Errorf("browser tool listing: %s / %q", schema, nav.Description)
	}

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nav-goto", Arguments: map[string]any{"page": "reports"}, Meta: mcp.Meta{"progressToken": "nav-1"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	var out struct{ Page, Tab string }
	structured(t, res, &out)
	if out.Page != "reports" || out.Tab != "the tab" {
		t.Fatalf("result %+v", out)
	}
	if d := e.ledgered("nav.goto"); d.Status != switchboard.StatusSucceeded || d.SessionID != tab.ID {
		t.Fatalf("ledger %+v", d)
	}

	// The tab's own failure comes back as a tool error with its code.
	res = call(t, cs, "nav-goto", map[string]any{"page": "missing"})
	if !res.IsError || !strings.HasPrefix(text(t, res), "NOT_FOUND: ") {
		t.Fatalf("tab error: %s", text(t, res))
	}
}

// With two tabs, a call must say which; once it has, the MCP session stays
// on that tab.
func TestBrowserToolTargeting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	// Each tab answers with its own label; ids are mapped to labels after.
	tabA, tabB := e.tab(goTo("A"), navTool()), e.tab(goTo("B"), navTool())
	label := map[string]string{tabA.ID: "A", tabB.ID: "B"}
	a, b := tabA.ID, tabB.ID
	cs := e.connect(adminToken, nil)

	res := call(t, cs, "nav-goto", map[string]any{"page": "home"})
	var te toolError
	structured(t, res, &te)
	if !res.IsError || te.Error.Code != switchboard.CodeInvalidInput || !strings.Contains(text(t, res), "sessionId") {
		t.Fatalf("ambiguous call: %s", text(t, res))
	}
	var out struct{ Tab string }
	structured(t, call(t, cs, "nav-goto", map[string]any{"page": "home", "sessionId": b}), &out)
	if out.Tab != label[b] {
		t.Fatalf("explicit sessionId ran in %s, want %s", out.Tab, label[b])
	}
	structured(t, call(t, cs, "nav-goto", map[string]any{"page": "next"}), &out)
	if out.Tab != label[b] {
		t.Fatalf("follow-up call ran in %s, want the bound tab %s", out.Tab, label[b])
	}
	// switchboard_call takes sessionId as its own argument.
	structured(t, call(t, cs, toolCall, map[string]any{"name": "nav.goto", "arguments": map[string]any{"page": "x"}, "sessionId": a}), &out)
	if out.Tab != label[a] {
		t.Fatalf("switchboard_call ran in %s, want %s", out.Tab, label[a])
	}
}

// Cancelling a browser call ends it as CANCELLED and tells the tab.
func TestCancelBrowserCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	received, told := make(chan struct{}), make(chan struct{})
	e.tab(func(ctx context.Context, _ switchboard.BrowserActionRequest) (json.RawMessage, error) {
		close(received)
		<-ctx.Done() // client.Tab cancels the handler on browser.action.cancel
		close(told)
		return nil, ctx.Err()
	}, navTool())
	cs := e.connect(adminToken, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nav-goto", Arguments: map[string]any{"page": "slow"}})
		errc <- err
	}()
	<-received
	cancel()
	<-errc
	<-told
	if d := e.ledgered("nav.goto"); d.Status != switchboard.StatusCancelled || d.Code != switchboard.CodeCancelled {
		t.Fatalf("ledger %+v", d)
	}
}

// A tab that goes away mid-call fails the call with SESSION_GONE; its tools
// leave the listing and clients hear list_changed.
func TestTabClosing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	changed := make(chan struct{}, 10)
	cs := e.connect(adminToken, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	received := make(chan struct{})
	tab := e.tab(func(ctx context.Context, _ switchboard.BrowserActionRequest) (json.RawMessage, error) {
		close(received)
		<-ctx.Done()
		return nil, ctx.Err()
	}, navTool())
	if listed, _ := listAll(t, cs); byName(listed)["nav-goto"] == nil {
		t.Fatal("nav-goto not listed")
	}
	resc := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nav-goto", Arguments: map[string]any{"page": "a"}})
		resc <- res
	}()
	<-received
	if err := tab.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	res := <-resc
	if res == nil || !res.IsError || !strings.HasPrefix(text(t, res), "SESSION_GONE: ") {
		t.Fatalf("call on a closing tab: %+v", res)
	}
	// Notifications of the tab's arrival may still be queued: re-list on
	// each until the one for its departure has been seen.
	for i := 0; ; i++ {
		<-changed
		if listed, _ := listAll(t, cs); byName(listed)["nav-goto"] == nil {
			break
		}
		if i == 10 {
			t.Fatal("nav-goto still listed after its tab closed")
		}
	}
}

func TestBrowserTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	nav := navTool()
	nav.TimeoutMs = 50
	e.tab(func(ctx context.Context, _ switchboard.BrowserActionRequest) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, nav)
	res := call(t, e.connect(adminToken, nil), "nav-goto", map[string]any{"page": "a"})
	if !res.IsError || !strings.HasPrefix(text(t, res), "TIMEOUT: ") {
		t.Fatalf("%s", text(t, res))
	}
}
