package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// listAll pages through tools/list.
func listAll(t *testing.T, cs *mcp.ClientSession) ([]*mcp.Tool, int) {
	t.Helper()
	var tools []*mcp.Tool
	pages := 0
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			return tools, pages
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

func byName(tools []*mcp.Tool) map[string]*mcp.Tool {
	m := map[string]*mcp.Tool{}
	for _, t := range tools {
		m[t.Name] = t
	}
	return m
}

func TestListFull(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	read := tool("tasks.list", "read")
	read.OutputSchema = json.RawMessage(`{"type":"array"}`)
	mutate := tool("tasks.delete", "mutate")
	mutate.Pinned = true
	ui := tool("view.zoom", "ui")
	ui.UI = &switchboard.UIMeta{Title: "Zoom the view", RendererID: "zoom-slider", DisplayGroup: "View", Icon: "https://app.example/icons/zoom.svg",
		Details: json.RawMessage(`{"min":0.5,"max":4}`)}
	read.UI = &switchboard.UIMeta{Icon: "list"}
	long := tool("docs.explain", "read")
	long.Description = strings.Repeat("Explains a part of the docs in great detail. ", 150) // ~6.7 KB
	e.register(read, mutate, ui, long)

	cs := e.connect(adminToken, nil)
	tools, _ := listAll(t, cs)
	got := byName(tools)
	if len(got) != 4 {
		t.Fatalf("listed %d tools, want the 4 registered (full mode below the threshold): %v", len(got), keys(got))
	}
	if _, ok := got[toolSearch]; ok {
		t.Error("meta tools listed in full mode")
	}
	lt := got["tasks-list"]
	if lt == nil || !lt.Annotations.ReadOnlyHint || lt.OutputSchema == nil {
		t.Fatalf("tasks-list: %+v", lt)
	}
	if in, _ := json.Marshal(lt.InputSchema); string(in) != `{"properties":{"x":{"type":"integer"}},"type":"object"}` {
		t.Errorf("input schema %s", in)
	}
	del := got["tasks-delete"]
	if del.Annotations.ReadOnlyHint || del.Annotations.DestructiveHint == nil || !*del.Annotations.DestructiveHint {
		t.Errorf("mutate annotations %+v", del.Annotations)
	}
	if del.Meta[metaAlwaysLoad] != true {
		t.Errorf("pinned tool meta %v", del.Meta)
	}
	if lt.Meta[metaAlwaysLoad] != nil {
		t.Errorf("unpinned tool has alwaysLoad")
	}
	if m, _ := json.Marshal(got["view-zoom"].Meta[metaUI]); string(m) != `{"details":{"max":4,"min":0.5},"displayGroup":"View","icon":"https://app.example/icons/zoom.svg","rendererId":"zoom-slider","title":"Zoom the view"}` ||
		got["view-zoom"].Title != "Zoom the view" ||
		len(got["view-zoom"].Icons) != 1 || got["view-zoom"].Icons[0].Source != "https://app.example/icons/zoom.svg" {
		t.Errorf("ui hints: _meta %s, icons %+v", m, got["view-zoom"].Icons)
	}
	if lt.Icons != nil || lt.Meta[metaUI] == nil {
		t.Errorf("an icon name is not an icon src: %+v %v", lt.Icons, lt.Meta)
	}
	z := got["view-zoom"].Annotations
	if z.DestructiveHint == nil || *z.DestructiveHint || !z.IdempotentHint {
		t.Errorf("ui annotations %+v", z)
	}
	d := got["docs-explain"].Description
	if len(d) > MaxDescriptionBytes || !strings.HasSuffix(d, "switchboard_describe gives the full text)") {
		t.Errorf("long description: %d bytes, ends %q", len(d), d[max(0, len(d)-60):])
	}
}

func TestListDeferredAndModes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	var tools []switchboard.Tool
	for i := range 40 {
		tl := tool(fmt.Sprintf("bulk.op_%02d", i), "read")
		tl.Pinned = i == 7
		tools = append(tools, tl)
	}
	e.register(tools...)

	listed, _ := listAll(t, e.connect(adminToken, nil))
	got := byName(listed)
	want := []string{toolSearch, toolDescribe, toolCall, "bulk-op_07"}
	if len(got) != len(want) {
		t.Fatalf("deferred listing %v, want %v", keys(got), want)
	}
	for _, n := range want {
		if got[n] == nil || got[n].Meta[metaAlwaysLoad] != true {
			t.Errorf("%s missing or not always-load: %+v", n, got[n])
		}
	}

	// The search tool's description names the groups of what the caller
	// sees, and a regex search on a namespace lists exactly its tools.
	if d := got[toolSearch].Description; !strings.Contains(d, "The catalog holds 40 tools.") ||
		!strings.Contains(d, "\n- bulk (40 tools): bulk-op_00, bulk-op_01, bulk-op_02, …") {
		t.Errorf("deferred search description:\n%s", d)
	}
	var page searchResult
	structured(t, call(t, e.connect(adminToken, nil), toolSearch, map[string]any{"query": `^bulk\.op_0`, "regex": true, "limit": 50}), &page)
	if len(page.Items) != 10 || page.Items[0].Name != "bulk-op_00" {
		t.Errorf("regex search: %+v", page.Items)
	}
	if res := call(t, e.connect(adminToken, nil), toolSearch, map[string]any{"query": `(a*)*(`, "regex": true}); !res.IsError || !strings.HasPrefix(text(t, res), "INVALID_INPUT") {
		t.Errorf("a broken regex: %s", text(t, res))
	}

	// A client may choose its mode in the URL; the whole session keeps it.
	perClient := e.connectPath(adminToken, "/mcp?mode=full", nil)
	for range 2 {
		if listed, _ := listAll(t, perClient); len(listed) != 40 {
			t.Errorf("?mode=full: %d tools", len(listed))
		}
	}

	full := newEnvSharing(t, e, Options{Mode: ModeFull})
	if listed, _ := listAll(t, full.connect(adminToken, nil)); len(listed) != 40 {
		t.Errorf("forced full: %d tools", len(listed))
	}
	lowThreshold := newEnvSharing(t, e, Options{Threshold: 50})
	if listed, _ := listAll(t, lowThreshold.connect(adminToken, nil)); len(listed) != 40 {
		t.Errorf("threshold 50: %d tools", len(listed))
	}
	deferred := newEnvSharing(t, e, Options{Mode: ModeDeferred, Threshold: 1000})
	if listed, _ := listAll(t, deferred.connect(adminToken, nil)); len(listed) != 4 {
		t.Errorf("forced deferred: %d tools", len(listed))
	}
}

func TestListPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Mode: ModeFull})
	var tools []switchboard.Tool
	for i := range listPageSize + 1 {
		tools = append(tools, tool(fmt.Sprintf("many.op_%04d", i), "read"))
	}
	e.register(tools...)
	listed, pages := listAll(t, e.connect(adminToken, nil))
	if len(listed) != listPageSize+1 || pages != 2 {
		t.Fatalf("%d tools in %d pages", len(listed), pages)
	}
	if len(byName(listed)) != len(listed) {
		t.Error("a tool was listed twice across pages")
	}
}

// A scoped token sees only its tools. Agent tokens themselves land with
// issue 7; here Auth hands out a principal with scopes, as they
// will.
func TestScopedPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: authFunc(func(r *http.Request) (switchboard.Principal, error) {
		if r.Header.Get("Authorization") == "Bearer agent" {
			return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", Allow: []string{"tasks.*"}, Deny: []string{"tasks.delete"}}, nil
		}
		return adminOnly(r)
	})})
	e.register(tool("tasks.list", "read"), tool("tasks.delete", "mutate"), tool("billing.refund", "mutate"))
	agent := e.connect("agent", nil)
	listed, _ := listAll(t, agent)
	if got := byName(listed); len(got) != 1 || got["tasks-list"] == nil {
		t.Fatalf("agent sees %v", keys(got))
	}
	var found searchResult
	structured(t, call(t, agent, toolSearch, map[string]any{"query": ""}), &found)
	if len(found.Items) != 1 || found.Items[0].Name != "tasks-list" {
		t.Fatalf("agent search: %+v", found)
	}
	if res := call(t, agent, toolCall, map[string]any{"name": "billing-refund"}); !res.IsError || !strings.HasPrefix(text(t, res), "TOOL_NOT_FOUND") {
		t.Fatalf("agent calling out of scope: %s", text(t, res))
	}
	if listed, _ := listAll(t, e.connect(adminToken, nil)); len(listed) != 3 {
		t.Fatalf("admin sees %d tools", len(listed))
	}
}

// What an agent may not see (outside its scope, user-only, a tab's tool
// outside its scope) reads exactly like a name that does not exist, on
// every MCP path: tools/list (full and deferred), tools/call,
// switchboard_search, switchboard_describe and switchboard_call. The
// registry decides (registry.Visible); this pins that MCP asks it.
func TestHiddenReadsAsUnknown(t *testing.T) {
	t.Parallel()
	auth := func(r *http.Request) (switchboard.Principal, error) {
		if r.Header.Get("Authorization") == "Bearer agent" {
			return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", Allow: []string{"tasks.*", "nav.*"}, Deny: []string{"nav.secret"}}, nil
		}
		return adminOnly(r)
	}
	e := newEnv(t, Options{Auth: authFunc(auth)})
	purge := tool("tasks.purge", "mutate")
	purge.Approval, purge.Pinned = switchboard.ApprovalUserOnly, true
	e.register(tool("tasks.list", "read"), purge, tool("billing.refund", "mutate"))
	secret := navTool()
	secret.Name = "nav.secret"
	e.tab(goTo("tab"), navTool(), secret)

	for _, mode := range []Mode{ModeFull, ModeDeferred} {
		srv := newEnvSharing(t, e, Options{Mode: mode, Auth: authFunc(auth)})
		listed, _ := listAll(t, srv.connect("agent", nil))
		got := byName(listed)
		for _, hidden := range []string{"tasks-purge", "billing-refund", "nav-secret"} {
			if got[hidden] != nil {
				t.Errorf("%q listing shows the agent %s", mode, hidden)
			}
		}
		if mode == ModeFull && (got["tasks-list"] == nil || got["nav-goto"] == nil || len(got) != 2) {
			t.Errorf("full listing for the agent: %v", keys(got))
		}
		if admin := byName(first(listAll(t, srv.connect(adminToken, nil)))); admin["tasks-purge"] == nil {
			t.Errorf("%q listing hides tasks.purge from the user: %v", mode, keys(admin))
		}
	}

	agent := e.connect("agent", nil)
	var found searchResult
	structured(t, call(t, agent, toolSearch, map[string]any{"query": ""}), &found)
	var hits []string
	for _, h := range append(found.Items, found.OpenTabTools...) {
		hits = append(hits, h.Name)
	}
	if strings.Join(hits, ",") != "tasks-list,nav-goto" {
		t.Errorf("agent search finds %v", hits)
	}

	// Each way of naming a tool answers a hidden one as it answers "nope".
	same := func(what, hidden, got, unknown string) {
		t.Helper()
		if strings.ReplaceAll(got, hidden, "nope") != unknown {
			t.Errorf("%s %s: %q; an unknown name gets %q", what, hidden, got, unknown)
		}
	}
	direct := func(name string) string {
		_, err := agent.CallTool(t.Context(), &mcp.CallToolParams{Name: name})
		if err == nil {
			t.Fatalf("tools/call %s succeeded", name)
		}
		return err.Error()
	}
	meta := func(tool, name string) string {
		res := call(t, agent, tool, map[string]any{"name": name})
		if !res.IsError {
			t.Fatalf("%s %s succeeded", tool, name)
		}
		return text(t, res)
	}
	unknownDirect, unknownDescribe, unknownCall := direct("nope"), meta(toolDescribe, "nope"), meta(toolCall, "nope")
	if !strings.Contains(unknownDirect, "unknown tool") || !strings.HasPrefix(unknownCall, "TOOL_NOT_FOUND") || !strings.HasPrefix(unknownDescribe, "TOOL_NOT_FOUND") {
		t.Fatalf("unknown name: %q, %q, %q", unknownDirect, unknownDescribe, unknownCall)
	}
	for _, hidden := range []string{"tasks-purge", "billing-refund", "nav-secret"} {
		same("tools/call", hidden, direct(hidden), unknownDirect)
		same(toolDescribe, hidden, meta(toolDescribe, hidden), unknownDescribe)
		same(toolCall, hidden, meta(toolCall, hidden), unknownCall)
	}
}

func first[A, B any](a A, _ B) A { return a }

func keys(m map[string]*mcp.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
