package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// Issue 13 item 5: a tool a runtime binding contributes (Tool.Harness)
// is in that runtime's catalog only. The built-in loop (/runs) is offered
// the loop's tool, an AI SDK chat (/agent/chat) the aisdk one, an MCP
// client the mcp one; each sees the shared tool; a call of another
// runtime's tool is TOOL_NOT_FOUND exactly like an unknown name and runs
// nothing. The admin's listing shows every tool with its harness.
func TestHarnessToolsStayInTheirRuntime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := modeltest.NewOpenAI(t)
	token := daemon.NewSecret()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: token,
		Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	var runs atomic.Int32
	for name, harness := range map[string]string{"notes.shared": "", "notes.loop_only": "loop", "notes.chat_only": "aisdk", "notes.mcp_only": "mcp"} {
		tl := switchboard.Tool{Name: name, Description: "Read " + name + ".", Class: switchboard.ClassRead,
			InputSchema: json.RawMessage(`{"type":"object"}`), Harness: harness}
		if err := d.RegisterFunc(ctx, tl, func(context.Context, json.RawMessage) (any, error) {
			runs.Add(1)
			return map[string]string{"ran": name}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	bad := switchboard.Tool{Name: "notes.bad", Description: "Bad harness.", Class: switchboard.ClassRead, Harness: "Not A Name"}
	if err := d.RegisterFunc(ctx, bad, func(context.Context, json.RawMessage) (any, error) { return nil, nil }); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("a tool with harness %q: %v; want INVALID_INPUT", bad.Harness, err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	admin := client.New(srv.URL, token, nil)

	offered := func(n int) []string {
		var names []string
		tools, _ := m.Requests()[n]["tools"].([]any)
		for _, tl := range tools {
			f, _ := tl.(map[string]any)["function"].(map[string]any)
			name, _ := f["name"].(string)
			if strings.HasPrefix(name, "notes_") {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names
	}

	// The built-in loop: the model asks for the AI SDK's tool anyway.
	m.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "notes_chat_only", Args: `{}`}}}, modeltest.Turn{Text: "Done."})
	info, err := admin.StartRun(ctx, client.RunRequest{Input: "read the notes"})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.RunEvents(ctx, info.RunID, "", func(string, agui.Event) error { return nil }); err != nil {
		t.Fatal(err) // the stream ends with the run
	}
	if got, want := offered(0), []string{"notes_loop_only", "notes_shared"}; !slices.Equal(got, want) {
		t.Errorf("the loop run was offered %v; want %v", got, want)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the loop run's call of the aisdk tool ran it (%d runs)", n)
	}
	if res, _ := json.Marshal(m.Requests()[1]["messages"]); !strings.Contains(string(res), "TOOL_NOT_FOUND") {
		t.Errorf("the model was not told the aisdk tool is unknown to the loop: %s", res)
	}

	// An AI SDK chat.
	m.Push(modeltest.Turn{Text: "Hello."})
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/agent/chat", strings.NewReader(
		`{"id":"chat-h","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sseEvents(t, resp)
	if got, want := offered(2), []string{"notes_chat_only", "notes_shared"}; !slices.Equal(got, want) {
		t.Errorf("the AI SDK chat was offered %v; want %v", got, want)
	}

	// An MCP client with an agent token.
	tok, err := admin.CreateToken(ctx, client.TokenRequest{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "harness-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok.Token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mcpNames []string
	for _, tl := range list.Tools {
		if strings.HasPrefix(tl.Name, "notes") {
			mcpNames = append(mcpNames, tl.Name)
		}
	}
	slices.Sort(mcpNames)
	if want := []string{"notes-mcp_only", "notes-shared"}; !slices.Equal(mcpNames, want) {
		t.Errorf("MCP lists %v; want %v", mcpNames, want)
	}
	_, otherErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes-loop_only", Arguments: map[string]any{}})
	_, unknownErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes-nothing", Arguments: map[string]any{}})
	if otherErr == nil || unknownErr == nil ||
		strings.ReplaceAll(otherErr.Error(), "notes-loop_only", "X") != strings.ReplaceAll(unknownErr.Error(), "notes-nothing", "X") {
		t.Errorf("MCP call of the loop's tool: %v; want what an unknown name gets: %v", otherErr, unknownErr)
	}
	own, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes-mcp_only", Arguments: map[string]any{}})
	if err != nil || own.IsError {
		t.Fatalf("MCP call of its own runtime's tool: %v %v", err, own)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d tool runs; want 1 (only the MCP client's own tool)", n)
	}

	// The operator's listing names every tool's harness.
	man, err := admin.ListTools(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, tl := range man.Tools {
		seen[tl.Name] = tl.Harness
	}
	for name, h := range map[string]string{"notes.shared": "", "notes.loop_only": "loop", "notes.chat_only": "aisdk", "notes.mcp_only": "mcp"} {
		if got, ok := seen[name]; !ok || got != h {
			t.Errorf("admin listing: %s harness %q (listed %v); want %q", name, got, ok, h)
		}
	}
}
