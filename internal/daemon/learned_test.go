package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// learningDaemon is a daemon on SQLite with two read tools, image.resize
// and deck.export, the admin's client and an agent token (agent
// "designer").
func learningDaemon(t *testing.T) (*daemon.Daemon, switchboard.Store, *httptest.Server, *client.Client, client.TokenCreated) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	token := daemon.NewSecret()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for name, desc := range map[string]string{"image.resize": "Resize an image.", "deck.export": "Export a deck as a PDF file."} {
		tl := switchboard.Tool{Name: name, Description: desc, Class: switchboard.ClassRead, InputSchema: json.RawMessage(`{"type":"object"}`)}
		if err := d.RegisterFunc(ctx, tl, func(context.Context, json.RawMessage) (any, error) { return map[string]string{}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	admin := client.New(srv.URL, token, nil)
	tok, err := admin.CreateToken(ctx, client.TokenRequest{Agent: "designer"})
	if err != nil {
		t.Fatal(err)
	}
	return d, st, srv, admin, tok
}

// Learned search through the HTTP API: an agent token's search followed by
// a successful call teaches the tool the scrubbed query; GET
// /tools/{name}/learned shows it to the admin only, DELETE forgets it, and
// the catalog stops finding the tool by those words.
func TestLearnedThroughTheAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, st, srv, admin, tok := learningDaemon(t)
	agent := client.New(srv.URL, tok.Token, nil)
	finds := func(q string) bool {
		t.Helper()
		res, err := admin.SearchTools(ctx, switchboard.SearchQuery{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Items) > 0 && res.Items[0].Name == "image.resize"
	}
	if finds("brand colours") {
		t.Fatal("brand colours finds image.resize before anything was learned")
	}

	if _, err := agent.SearchTools(ctx, switchboard.SearchQuery{Query: "match the brand colours for ann@example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.CallTool(ctx, "image.resize", nil, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	d.Registry.WaitLearned()

	l, err := admin.ToolLearned(ctx, "image.resize")
	if err != nil {
		t.Fatal(err)
	}
	if !l.Enabled || len(l.Queries) != 1 || l.Queries[0].Query != "match the brand colours for" || l.Queries[0].Callers != 1 {
		t.Fatalf("learned = %+v", l)
	}
	if !finds("brand colours") {
		t.Fatal("brand colours does not find image.resize after it was learned")
	}
	if _, err := agent.ToolLearned(ctx, "image.resize"); switchboard.CodeOf(err) != switchboard.CodeForbidden {
		t.Fatalf("an agent reads what a tool learned: %v", err)
	}
	if _, err := admin.ToolLearned(ctx, "image.nope"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("learned of an unknown tool: %v", err)
	}

	// Retention past the example's last use: searches stop ranking by it
	// at once, not at the next reload.
	later := time.Now().Add(2 * daemon.DefaultRetainSearchExamples)
	d.SweepRetention(ctx, st, daemon.RetentionOptions{Now: func() time.Time { return later }})
	if finds("brand colours") {
		t.Fatal("brand colours still finds image.resize after retention deleted what it learned")
	}
	if l, err := admin.ToolLearned(ctx, "image.resize"); err != nil || len(l.Queries) != 0 {
		t.Fatalf("after retention: %+v, %v", l, err)
	}
	// Learned again, for the forget below.
	if _, err := agent.SearchTools(ctx, switchboard.SearchQuery{Query: "match the brand colours for ann@example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.CallTool(ctx, "image.resize", nil, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	d.Registry.WaitLearned()
	if !finds("brand colours") {
		t.Fatal("brand colours does not find image.resize after it was learned again")
	}

	n, err := admin.ForgetToolLearned(ctx, "image.resize")
	if err != nil || n != 1 {
		t.Fatalf("forget = %d, %v", n, err)
	}
	if l, err := admin.ToolLearned(ctx, "image.resize"); err != nil || len(l.Queries) != 0 {
		t.Fatalf("after forget: %+v, %v", l, err)
	}
	if finds("brand colours") {
		t.Fatal("brand colours still finds image.resize after forget")
	}
}

// Learned search through MCP: an agent's switchboard_search followed by a
// successful call (through switchboard_call or by the tool's MCP name)
// teaches the tool, in both revisions. A 2026-07-28 client has no session
// (each request's server session is its own), so its search counts for
// its next calls; a 2025-11-25 session's search counts only for calls in
// that session.
func TestLearnedThroughMCP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _, srv, admin, tok := learningDaemon(t)
	connect := func(version string) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok.Token}}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, name string, args map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	learned := func(tool string) []string {
		t.Helper()
		d.Registry.WaitLearned()
		l, err := admin.ToolLearned(ctx, tool)
		if err != nil {
			t.Fatal(err)
		}
		var qs []string
		for _, q := range l.Queries {
			qs = append(qs, q.Query)
		}
		return qs
	}

	sessionless := connect("") // the SDK's latest revision
	call(sessionless, "switchboard_search", map[string]any{"query": "match the brand colours"})
	call(sessionless, "switchboard_call", map[string]any{"name": "image.resize", "arguments": map[string]any{}})
	if got := learned("image.resize"); len(got) != 1 || got[0] != "match the brand colours" {
		t.Fatalf("after switchboard_call: learned %q", got)
	}
	call(sessionless, "switchboard_search", map[string]any{"query": "slides for the board meeting"})
	call(sessionless, "deck-export", map[string]any{})
	if got := learned("deck.export"); len(got) != 1 || got[0] != "slides for the board meeting" {
		t.Fatalf("after a call by MCP name: learned %q", got)
	}

	a, b := connect("2025-11-25"), connect("2025-11-25")
	call(a, "switchboard_search", map[string]any{"query": "shrink the picture"})
	call(b, "image-resize", map[string]any{})
	if got := learned("image.resize"); len(got) != 1 {
		t.Fatalf("a call in another MCP session learned from this one's search: %q", got)
	}
	call(a, "image-resize", map[string]any{})
	if got := learned("image.resize"); len(got) != 2 {
		t.Fatalf("a call in the searching MCP session: learned %q", got)
	}
}
