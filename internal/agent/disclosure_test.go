package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

func toolNames(req map[string]any) []string {
	var out []string
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		out = append(out, t.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return out
}

func systemPrompt(req map[string]any) string {
	msgs := req["messages"].([]any)
	return msgs[0].(map[string]any)["content"].(string)
}

// TestDeferredDisclosure: above the threshold the model gets names and
// summaries plus the meta tools, finds a tool, describes it (which loads its
// schema) and calls it.
func TestDeferredDisclosure(t *testing.T) {
	e := newEnv(t, func(o *agent.Options) { o.DeferThreshold = 5 })
	for i := range 8 {
		e.addFunc(t, fmt.Sprintf("inventory.item_%d", i), switchboard.ClassRead, nil, func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	}
	var called bool
	e.addFunc(t, "invoices.send", switchboard.ClassMutate, json.RawMessage(`{"type":"object","properties":{"invoiceId":{"type":"string"}},"required":["invoiceId"]}`),
		func(context.Context, json.RawMessage) (any, error) {
			called = true
			return map[string]any{"sent": true}, nil
		})
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "1", Name: "search_tools", Args: `{"query":"send invoice"}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "2", Name: "describe_tool", Args: `{"name":"invoices_send"}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "3", Name: "invoices_send", Args: `{"invoiceId":"in-1"}`}}},
		modeltest.Turn{Text: "Sent."},
	)
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "send invoice in-1"})
	evs := events(t, run)
	reqs := e.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests: %v", len(reqs), types(evs))
	}
	first := toolNames(reqs[0])
	if strings.Join(first, ",") != "search_tools,describe_tool" {
		t.Errorf("first request offers %v", first)
	}
	if p := systemPrompt(reqs[0]); !strings.Contains(p, "invoices_send: Test tool invoices.send.") || !strings.Contains(p, "9 tools") {
		t.Errorf("prompt digest:\n%s", p)
	}
	res := find[*agui.ToolCallResult](evs)
	if !strings.Contains(res[0].Content, `"name":"invoices_send"`) {
		t.Errorf("search result %s", res[0].Content)
	}
	if !strings.Contains(res[1].Content, `"invoiceId"`) {
		t.Errorf("describe result %s", res[1].Content)
	}
	if third := toolNames(reqs[2]); !contains(third, "invoices_send") || contains(third, "inventory_item_0") {
		t.Errorf("after describe the request offers %v", third)
	}
	if !called {
		t.Error("the described tool was not called")
	}
	// Meta tools are answered in-process: only the real call has a record.
	if _, ok := res[0].Metadata["switchboard"].(map[string]any)["invocationId"]; ok {
		t.Error("search_tools made an invocation record")
	}
	if _, ok := res[2].Metadata["switchboard"].(map[string]any)["invocationId"]; !ok {
		t.Error("the real call has no invocation record")
	}
}

func TestSmallCatalogIsOfferedInFull(t *testing.T) {
	e := newEnv(t, nil)
	e.addFunc(t, "tasks.list", switchboard.ClassRead, nil, func(context.Context, json.RawMessage) (any, error) { return []any{}, nil })
	e.model.Push(modeltest.Turn{Text: "none"})
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "list", Context: []agui.Context{{Description: "page", Value: "/tasks"}}})
	events(t, run)
	req := e.model.Requests()[0]
	if got := toolNames(req); strings.Join(got, ",") != "tasks_list" {
		t.Errorf("tools %v", got)
	}
	if p := systemPrompt(req); strings.Contains(p, "search_tools") || !strings.Contains(p, "page: /tasks") {
		t.Errorf("prompt:\n%s", p)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// A user-only tool is never offered to the model: not in the tool list,
// not in the prompt's digest, not found by search_tools or describe_tool,
// and a guessed call of it fails like a call of a name that does not
// exist. The registry hides it from the assistant (registry.Visible).
func TestUserOnlyIsNeverOffered(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		e := newEnv(t, func(o *agent.Options) {
			if deferred {
				o.DeferThreshold = 1
			}
		})
		ok := func(context.Context, json.RawMessage) (any, error) { return "ok", nil }
		e.addFunc(t, "tasks.list", switchboard.ClassRead, nil, ok)
		e.addFunc(t, "tasks.archive", switchboard.ClassMutate, nil, ok)
		if _, err := e.reg.Register(context.Background(), switchboard.SourceHost, []switchboard.Tool{{
			Name: "tasks.purge", Description: "Purge every task for good.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Class: switchboard.ClassMutate, Approval: switchboard.ApprovalUserOnly, Pinned: true, Binding: &switchboard.Binding{Go: true},
		}}); err != nil {
			t.Fatal(err)
		}
		var ran bool
		e.broker.Handle("tasks.purge", func(context.Context, json.RawMessage) (any, error) { ran = true; return "purged", nil })
		var turns []modeltest.Turn
		if deferred {
			turns = append(turns,
				modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "s", Name: "search_tools", Args: `{"query":"purge tasks"}`}}},
				modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "d1", Name: "describe_tool", Args: `{"name":"tasks_purge"}`}, {ID: "d2", Name: "describe_tool", Args: `{"name":"tasks_nope"}`}}})
		}
		turns = append(turns,
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks.purge", Args: `{}`}, {ID: "c2", Name: "tasks.nope", Args: `{}`}}},
			modeltest.Turn{Text: "done"})
		e.model.Push(turns...)
		run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "purge everything"})
		evs := events(t, run)
		for i, req := range e.model.Requests() {
			if names := toolNames(req); contains(names, "tasks_purge") {
				t.Errorf("deferred=%v: request %d offers %v", deferred, i, names)
			}
			if p := systemPrompt(req); strings.Contains(p, "purge") {
				t.Errorf("deferred=%v: the prompt names the user-only tool:\n%s", deferred, p)
			}
		}
		res := map[string]string{} // by tool (and, for describe_tool, the name described)
		for _, r := range find[*agui.ToolCallResult](evs) {
			key, _ := r.Metadata["switchboard"].(map[string]any)["tool"].(string)
			switch {
			case key == "search_tools":
				key = "s"
			case key == "describe_tool" && strings.Contains(r.Content, "tasks_purge"):
				key = "d1"
			case key == "describe_tool":
				key = "d2"
			case key == "tasks.purge":
				key = "c1"
			case key == "tasks.nope":
				key = "c2"
			}
			res[key] = r.Content
		}
		if deferred {
			if strings.Contains(res["s"], "purge") || !strings.Contains(res["s"], "tasks_archive") {
				t.Errorf("search_tools found %s", res["s"])
			}
			if strings.ReplaceAll(res["d1"], "tasks_purge", "tasks_nope") != res["d2"] || !strings.Contains(res["d2"], "TOOL_NOT_FOUND") {
				t.Errorf("describe_tool of the user-only tool %s; of an unknown name %s", res["d1"], res["d2"])
			}
		}
		if strings.ReplaceAll(res["c1"], "tasks.purge", "tasks.nope") != res["c2"] || !strings.Contains(res["c2"], "TOOL_NOT_FOUND") {
			t.Errorf("deferred=%v: calling the user-only tool %s; an unknown name %s", deferred, res["c1"], res["c2"])
		}
		if ran {
			t.Errorf("deferred=%v: the user-only tool ran", deferred)
		}
	}
}

// TestLargeCatalogIsListedByGroup: past the grouping size the deferred
// prompt lists groups, not one line a tool, and a regex search on a
// group's namespace lists that group, with a cursor for the next page.
func TestLargeCatalogIsListedByGroup(t *testing.T) {
	e := newEnv(t, func(o *agent.Options) { o.DeferThreshold = 5 })
	ok := func(context.Context, json.RawMessage) (any, error) { return "ok", nil }
	for i := range 40 {
		e.addFunc(t, fmt.Sprintf("inventory.item_%02d", i), switchboard.ClassRead, nil, ok)
	}
	for i := range 30 {
		e.addFunc(t, fmt.Sprintf("invoices.step_%02d", i), switchboard.ClassRead, nil, ok)
	}
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "1", Name: "search_tools", Args: `{"query":"^invoices\\.","regex":true,"limit":20}`}}},
		modeltest.Turn{Text: "done"},
	)
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "what can you do with invoices?"})
	evs := events(t, run)
	p := systemPrompt(e.model.Requests()[0])
	if !strings.Contains(p, "- inventory (40 tools): inventory_item_00, inventory_item_01, inventory_item_02, …") ||
		!strings.Contains(p, "- invoices (30 tools): invoices_step_00") || strings.Contains(p, "inventory_item_03") {
		t.Errorf("grouped prompt:\n%s", p)
	}
	res := find[*agui.ToolCallResult](evs)
	var page struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal([]byte(res[0].Content), &page); err != nil || len(page.Tools) != 20 || page.NextCursor == "" {
		t.Fatalf("first page of the group: %s", res[0].Content)
	}
	for _, h := range page.Tools {
		if !strings.HasPrefix(h.Name, "invoices_step_") {
			t.Errorf("a regex search of the group found %s", h.Name)
		}
	}
}
