package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/sqlite"
)

// notePanel is a host panel over its own state, shown in slot.
func notePanel(t *testing.T, id, slot string) panel.Def {
	t.Helper()
	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.BodyWith(panelspec.BodyProps{Title: "Note"}, b.FormSubmit("note", "keep",
		panelspec.TextField("title", "Title").Required(), panelspec.NumberField("stars", "Stars").Range(0, 5)))
	b.Source("note", panelspec.StateSource("/note"))
	b.State("note", map[string]any{"title": "Draft", "stars": 1})
	b.Action("keep", panelspec.Mutate("note", panelspec.OpUpdate))
	spec, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return panel.Def{ID: id, Title: "Note " + id, Description: "A note kept in the panel.", Slot: slot, Spec: spec}
}

// panelDaemon is a daemon with two note panels (main and sidebar) and a
// connected tab showing panels.
type panelDaemon struct {
	d     *daemon.Daemon
	srv   *httptest.Server
	tab   session.Created
	token func(scope.TokenRequest) string
}

func newPanelDaemon(t *testing.T) *panelDaemon {
	t.Helper()
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
	for _, def := range []panel.Def{notePanel(t, "note", ""), notePanel(t, "board.note", "sidebar")} {
		if err := d.RegisterPanel(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	tab, err := d.Sessions.Create(ctx, "user:7")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.Sessions.Attach(ctx, tab.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	pd := &panelDaemon{d: d, srv: srv, tab: tab, token: func(r scope.TokenRequest) string {
		tok, err := d.Tokens.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}}
	if code, body := pd.do(t, tab.SessionToken, "GET", "/api/v1/sessions/"+tab.SessionID+"/panels", ""); code != 200 {
		t.Fatalf("attach the tab: %d %v", code, body)
	}
	return pd
}

// do sends a request with bearer tok and decodes the JSON answer.
func (p *panelDaemon) do(t *testing.T, tok, method, path, body string) (int, map[string]any) {
	t.Helper()
	return bearerJSON(t, p.srv.URL, tok, method, path, body)
}

// bearerJSON sends a request to base with bearer tok and decodes the JSON
// answer.
func bearerJSON(t *testing.T, base, tok, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// call runs a tool over POST /tools/{name}/call.
func (p *panelDaemon) call(t *testing.T, tok, tool string, input any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"input": input})
	return p.do(t, tok, "POST", "/api/v1/tools/"+tool+"/call", string(b))
}

func (p *panelDaemon) open(t *testing.T, tok, id string) string {
	t.Helper()
	code, body := p.call(t, tok, panel.ToolOpen, map[string]any{"panel": id, "sessionId": p.tab.SessionID})
	if code != 200 {
		t.Fatalf("open %s: %d %v", id, code, body)
	}
	return body["result"].(map[string]any)["instanceId"].(string)
}

func panelErrCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// Over HTTP: a second agent's edit of a leased panel is 409 LEASE_HELD
// naming the holder and the expiry; the user's edit in the tab wins and
// ends the lease.
func TestHTTPPanelLeases(t *testing.T) {
	t.Parallel()
	p := newPanelDaemon(t)
	planner := p.token(scope.TokenRequest{Agent: "planner"})
	writer := p.token(scope.TokenRequest{Agent: "writer"})
	id := p.open(t, planner, "note")

	if code, body := p.call(t, planner, panel.ToolFill, map[string]any{"instanceId": id, "values": map[string]any{"title": "Plan"}}); code != 200 {
		t.Fatalf("planner's fill: %d %v", code, body)
	}
	code, body := p.call(t, writer, panel.ToolFill, map[string]any{"instanceId": id, "values": map[string]any{"title": "Mine"}})
	if code != http.StatusConflict || panelErrCode(body) != "LEASE_HELD" {
		t.Fatalf("writer's fill: %d %v, want 409 LEASE_HELD", code, body)
	}
	details := body["error"].(map[string]any)["details"].(map[string]any)
	if !strings.HasPrefix(details["agentId"].(string), "agt_") || details["principal"] != "agent:planner" || details["expiresAt"] == nil || details["instanceId"] != id {
		t.Fatalf("LEASE_HELD details: %v", details)
	}
	if body["invocationId"] == nil {
		t.Fatalf("the refused call is recorded: %v", body)
	}
	code, body = p.call(t, writer, panel.ToolRunAction, map[string]any{"instanceId": id, "action": "keep"})
	if code != http.StatusConflict || panelErrCode(body) != "LEASE_HELD" {
		t.Fatalf("writer's action: %d %v", code, body)
	}

	code, body = p.call(t, writer, panel.ToolReadState, map[string]any{"panelId": id})
	st, _ := body["result"].(map[string]any)
	if code != 200 || st["lease"].(map[string]any)["agentId"] != details["agentId"] {
		t.Fatalf("read_state: %d %v", code, body)
	}
	code, body = p.call(t, writer, panel.ToolList, map[string]any{})
	inst := body["result"].(map[string]any)["instances"].([]any)[0].(map[string]any)
	if code != 200 || inst["lease"].(map[string]any)["principal"] != "agent:planner" {
		t.Fatalf("panel.list: %d %v", code, body)
	}

	// The user types in the tab: kept, and the lease is over.
	code, body = p.do(t, p.tab.SessionToken, "PUT", "/api/v1/sessions/"+p.tab.SessionID+"/panels/"+id+"/values", `{"values": {"title": "User's"}}`)
	if code != 200 || len(body["applied"].([]any)) != 1 {
		t.Fatalf("the user's edit: %d %v", code, body)
	}
	code, body = p.call(t, writer, panel.ToolReadState, map[string]any{"panelId": id})
	st = body["result"].(map[string]any)
	if code != 200 || st["lease"] != nil || st["values"].(map[string]any)["note"].(map[string]any)["title"] != "User's" {
		t.Fatalf("after the user's edit: %d %v", code, body)
	}
	code, body = p.call(t, writer, panel.ToolFill, map[string]any{"instanceId": id, "values": map[string]any{"title": "Mine", "stars": 4}})
	res, _ := body["result"].(map[string]any)
	if code != 200 || len(res["skipped"].([]any)) != 1 || res["lease"].(map[string]any)["principal"] != "agent:writer" {
		t.Fatalf("writer after the user's edit: %d %v", code, body)
	}
	// The tab closes the panel whatever the lease.
	if code, body := p.do(t, p.tab.SessionToken, "DELETE", "/api/v1/sessions/"+p.tab.SessionID+"/panels/"+id, ""); code != 204 {
		t.Fatalf("the tab's close: %d %v", code, body)
	}
}

// Panel scopes hold on every transport that reaches the panel tools: the
// HTTP call route and MCP answer the same, from the same check.
func TestPanelScopesOnEveryTransport(t *testing.T) {
	t.Parallel()
	p := newPanelDaemon(t)
	admin := mcpToken
	note := p.open(t, admin, "note")
	board := p.open(t, admin, "board.note")
	concierge := p.token(scope.TokenRequest{Agent: "concierge",
		Allow:      []string{panel.ToolList, panel.ToolReadState, panel.ToolOpen, panel.ToolFill},
		PanelScope: switchboard.PanelScope{Panels: []string{"note"}, Slots: []string{"main"}}})

	t.Run("HTTP", func(t *testing.T) {
		code, body := p.call(t, concierge, panel.ToolList, map[string]any{})
		res := body["result"].(map[string]any)
		if code != 200 || len(res["panels"].([]any)) != 1 || len(res["instances"].([]any)) != 1 ||
			res["instances"].([]any)[0].(map[string]any)["instanceId"] != note {
			t.Fatalf("list: %d %v", code, body)
		}
		if code, body := p.call(t, concierge, panel.ToolFill, map[string]any{"instanceId": board, "values": map[string]any{"title": "x"}}); code != 404 || panelErrCode(body) != "NOT_FOUND" {
			t.Fatalf("fill out of scope: %d %v", code, body)
		}
		if code, body := p.call(t, concierge, panel.ToolRunAction, map[string]any{"instanceId": note, "action": "keep"}); code != 404 || panelErrCode(body) != "TOOL_NOT_FOUND" {
			t.Fatalf("run_action: %d %v", code, body)
		}
		if code, body := p.call(t, concierge, panel.ToolFill, map[string]any{"instanceId": note, "values": map[string]any{"title": "Concierge"}}); code != 200 {
			t.Fatalf("fill in scope: %d %v", code, body)
		}
		code, body = p.do(t, admin, "GET", "/api/v1/tokens", "")
		items := body["items"].([]any)
		if code != 200 || !strings.Contains(mustJSON(t, items), `"panels":["note"],"slots":["main"]`) {
			t.Fatalf("the token listing shows the panel scope: %d %v", code, items)
		}
	})

	t.Run("MCP", func(t *testing.T) {
		c := mcp.NewClient(&mcp.Implementation{Name: "concierge", Version: "1"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: p.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{concierge}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		names := map[string]bool{}
		for tool, err := range cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names[tool.Name] = true
		}
		if names["panel-run_action"] || !names["panel-fill"] || !names["panel-read_state"] {
			t.Fatalf("MCP lists %v", names)
		}
		callMCP := func(name string, args map[string]any) *mcp.CallToolResult {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		text := func(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }
		if r := callMCP("panel-fill", map[string]any{"instanceId": board, "values": map[string]any{"title": "x"}}); !r.IsError || !strings.HasPrefix(text(r), "NOT_FOUND: ") {
			t.Fatalf("fill out of scope over MCP: %s", text(r))
		}
		// An unlisted tool is MCP's "unknown tool", as for any name.
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "panel-run_action", Arguments: map[string]any{"instanceId": note, "action": "keep"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Fatalf("run_action over MCP: %v", err)
		}
		r := callMCP("panel-list", map[string]any{})
		if r.IsError || strings.Contains(text(r), board) || strings.Contains(text(r), "board.note") || !strings.Contains(text(r), note) {
			t.Fatalf("list over MCP: %s", text(r))
		}
		// The concierge holds the note's lease from its HTTP fill: another
		// agent over MCP meets LEASE_HELD.
		other := p.token(scope.TokenRequest{Agent: "other"})
		c2 := mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, nil)
		cs2, err := c2.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: p.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{other}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs2.Close()
		res, err := cs2.CallTool(t.Context(), &mcp.CallToolParams{Name: "panel-fill", Arguments: map[string]any{"instanceId": note, "values": map[string]any{"stars": 2}}})
		if err != nil || !res.IsError || !strings.HasPrefix(text(res), "LEASE_HELD: ") || !strings.Contains(text(res), "agent:concierge") {
			t.Fatalf("a leased panel over MCP: %v %s", err, text(res))
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The digest lists only the panels the reader's panel scope admits: a
// panel outside it is not there, as in panel.list.
func TestDigestPanelScope(t *testing.T) {
	t.Parallel()
	p := newPanelDaemon(t)
	note := p.open(t, mcpToken, "note")
	board := p.open(t, mcpToken, "board.note")
	report := mustJSON(t, map[string]any{"contexts": []any{map[string]any{"id": "page", "kind": "page", "label": "Notes", "attention": "focused",
		"panels": []any{
			map[string]any{"id": note, "type": "note", "title": "Note", "origin": "host"},
			map[string]any{"id": board, "type": "board.note", "title": "Board note", "origin": "host"},
			map[string]any{"id": "widget-1", "type": "widget", "title": "A page's own widget", "origin": "host"},
		}}}})
	if code, body := p.do(t, p.tab.SessionToken, "PUT", "/api/v1/sessions/"+p.tab.SessionID+"/context", report); code/100 != 2 {
		t.Fatalf("report: %d %v", code, body)
	}
	panelsSeen := func(tok string) []string {
		t.Helper()
		code, body := p.do(t, tok, "GET", "/api/v1/digest", "")
		if code != 200 {
			t.Fatalf("digest: %d %v", code, body)
		}
		var ids []string
		for _, c := range body["contexts"].([]any) {
			for _, pn := range c.(map[string]any)["panels"].([]any) {
				ids = append(ids, pn.(map[string]any)["id"].(string))
			}
		}
		return ids
	}
	if got := panelsSeen(mcpToken); len(got) != 3 {
		t.Fatalf("the user sees every panel: %v", got)
	}
	viewer := p.token(scope.TokenRequest{Agent: "viewer", PanelScope: switchboard.PanelScope{Panels: []string{"note"}}})
	if got := panelsSeen(viewer); len(got) != 1 || got[0] != note {
		t.Fatalf("a panel-scoped agent sees %v, want only %s", got, note)
	}
	unlimited := p.token(scope.TokenRequest{Agent: "unlimited"})
	if got := panelsSeen(unlimited); len(got) != 3 {
		t.Fatalf("an agent without a panel scope sees %v", got)
	}
}
