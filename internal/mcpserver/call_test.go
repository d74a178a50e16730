package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// A deferred client finds, describes and calls a tool it was never listed.
func TestSearchDescribeCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Mode: ModeDeferred})
	var n atomic.Int32
	export := switchboard.Tool{
		Name: "deck.export", Class: switchboard.ClassRead,
		Description:  "Export a slide deck as a PDF file and return its download link.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"deckId":{"type":"string"}},"required":["deckId"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
	}
	e.goTool(export, func(_ context.Context, in json.RawMessage) (any, error) {
		n.Add(1)
		var a struct{ DeckID string }
		_ = json.Unmarshal(in, &a)
		return map[string]string{"url": "https://files.test/" + a.DeckID + ".pdf"}, nil
	})
	e.register(tool("crm.contacts_list", "read"), tool("tasks.create", "mutate"))
	cs := e.connect(adminToken, nil)

	var found searchResult
	res := call(t, cs, toolSearch, map[string]any{"query": "export deck pdf"})
	structured(t, res, &found)
	if len(found.Items) == 0 || found.Items[0].Name != "deck-export" || found.Items[0].Summary == "" {
		t.Fatalf("search: %+v", found)
	}

	var d description
	structured(t, call(t, cs, toolDescribe, map[string]any{"name": "deck-export"}), &d)
	if d.CatalogName != "deck.export" || d.Class != switchboard.ClassRead || len(d.OutputSchema) == 0 {
		t.Fatalf("describe: %+v", d)
	}
	if in, _ := json.Marshal(d.InputSchema); !strings.Contains(string(in), `"required":["deckId"]`) {
		t.Fatalf("describe input schema %s", in)
	}

	res = call(t, cs, toolCall, map[string]any{"name": "deck-export", "arguments": map[string]any{"deckId": "q3"}})
	if res.IsError || text(t, res) != `{"url":"https://files.test/q3.pdf"}` {
		t.Fatalf("call: %+v %s", res, text(t, res))
	}
	var out struct{ URL string }
	structured(t, res, &out) // structuredContent because the tool declares an outputSchema
	if out.URL != "https://files.test/q3.pdf" || res.Meta[metaInvocationID] == nil {
		t.Fatalf("structured %+v meta %v", out, res.Meta)
	}
	inv, err := e.br.Get(e.ctx, res.Meta[metaInvocationID].(string))
	if err != nil || inv.Status != switchboard.StatusSucceeded || inv.Caller != "user:admin" {
		t.Fatalf("record %+v %v", inv, err)
	}
	// Unlisted, yet callable directly by its MCP name.
	if res := call(t, cs, "deck-export", map[string]any{"deckId": "q4"}); res.IsError {
		t.Fatalf("direct call: %s", text(t, res))
	}
	if n.Load() != 2 {
		t.Errorf("ran %d times", n.Load())
	}
}

func TestCallErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.goTool(tool("tasks.get", "read"), func(context.Context, json.RawMessage) (any, error) {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no task 7")
	})
	e.goTool(tool("tasks.flaky", "read"), func(context.Context, json.RawMessage) (any, error) {
		return nil, fmt.Errorf("backend exploded")
	})
	e.register(tool("tasks.unbound", "read"))
	cs := e.connect(adminToken, nil)

	for _, tc := range []struct {
		name string
		args any
		code switchboard.Code
	}{
		{"tasks-get", nil, switchboard.CodeNotFound},
		{"tasks-flaky", nil, switchboard.CodeUpstreamError},
		{"tasks-unbound", nil, switchboard.CodeToolUnavailable},
		{"tasks-get", map[string]any{"x": "not an integer"}, switchboard.CodeSchemaViolation},
		{toolCall, map[string]any{"name": "no.such_tool"}, switchboard.CodeToolNotFound},
		{toolDescribe, map[string]any{"name": "nope"}, switchboard.CodeToolNotFound},
		{toolSearch, map[string]any{"limit": 500}, switchboard.CodeInvalidInput},
	} {
		res := call(t, cs, tc.name, tc.args)
		var te toolError
		structured(t, res, &te)
		if !res.IsError || te.Error == nil || te.Error.Code != tc.code || !strings.HasPrefix(text(t, res), string(tc.code)+": ") {
			t.Errorf("%s %v: isError=%v text=%q structured=%+v, want %s", tc.name, tc.args, res.IsError, text(t, res), te, tc.code)
		}
	}
	// Protocol errors: an unknown tool and arguments that are not an object.
	for _, p := range []*mcp.CallToolParams{
		{Name: "no-such_tool"},
		{Name: "bogus name"},
		{Name: "tasks-get", Arguments: []int{1}},
	} {
		_, err := cs.CallTool(t.Context(), p)
		var rpc *jsonrpc.Error
		if !asRPC(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v, want JSON-RPC invalid params", p.Name, err)
		}
	}
}

// A Go-function tool reports progress through switchboard.ReportProgress;
// the client gets it on its progress token, in order, with messages.
func TestProgressFromGoTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.goTool(tool("jobs.run", "job"), func(ctx context.Context, _ json.RawMessage) (any, error) {
		for i := 1; i <= 3; i++ {
			switchboard.ReportProgress(ctx, switchboard.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
		}
		return "done", nil
	})
	got := make(chan *mcp.ProgressNotificationParams, 10)
	cs := e.connect(adminToken, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		got <- r.Params
	}})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "jobs-run", Meta: mcp.Meta{"progressToken": "tok-1"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	for i := 1; i <= 3; i++ {
		p := <-got
		if p.ProgressToken != "tok-1" || p.Progress != float64(i) || p.Total != 3 || p.Message != fmt.Sprintf("step %d", i) {
			t.Fatalf("progress %d: %+v", i, p)
		}
	}
}

// notifications/cancelled ends a Go-function call as CANCELLED.
func TestCancelGoTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	started := make(chan struct{})
	e.goTool(tool("jobs.wait", "job"), func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	cs := e.connect(adminToken, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "jobs-wait"})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error to the client")
	}
	// The record is terminal and cancelled; its ledger entry says so.
	if st := e.ledgered("jobs.wait").Status; st != switchboard.StatusCancelled {
		t.Fatalf("status %s, want cancelled", st)
	}
}

func TestListChangedOnRegistration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	changed := make(chan struct{}, 10)
	cs := e.connect(adminToken, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if listed, _ := listAll(t, cs); len(listed) != 0 {
		t.Fatalf("listed %d", len(listed))
	}
	e.register(tool("fresh.tool", "read"))
	<-changed
	if listed, _ := listAll(t, cs); len(listed) != 1 || listed[0].Name != "fresh-tool" {
		t.Fatalf("after registration: %v", listed)
	}
	if err := e.reg.Unregister(e.ctx, "", "fresh.tool"); err != nil {
		t.Fatal(err)
	}
	<-changed
	if listed, _ := listAll(t, cs); len(listed) != 0 {
		t.Fatalf("after unregistration: %d tools", len(listed))
	}
}

func asRPC(err error, target **jsonrpc.Error) bool { return errors.As(err, target) }

// A job tool's call answers {jobId, status}, so neither its listing nor its
// result carries the tool's output schema: a client validating
// structuredContent against it would reject a correct answer.
func TestJobToolHasNoStructuredOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	jt := tool("exports.build", "job")
	jt.OutputSchema = json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)
	e.goTool(jt, func(ctx context.Context, _ json.RawMessage) (any, error) {
		return map[string]string{"url": "https://example.test/x.zip"}, nil
	})
	cs := e.connect(adminToken, nil)
	listed, _ := listAll(t, cs)
	if lt := byName(listed)["exports-build"]; lt == nil || lt.OutputSchema != nil {
		t.Fatalf("job listed with an output schema: %+v", lt)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "exports-build"})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if res.StructuredContent != nil {
		t.Errorf("job result carries structured content: %v", res.StructuredContent)
	}
}
