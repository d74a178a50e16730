package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestRunCallsAPIToolThenAnswers is the basic loop: the scripted model
// calls an api tool (a Go function through the broker), gets its result and
// answers with text.
func TestRunCallsAPIToolThenAnswers(t *testing.T) {
	e := newEnv(t, nil)
	var got map[string]any
	e.addFunc(t, "tasks.create", switchboard.ClassMutate, taskSchema, func(_ context.Context, in json.RawMessage) (any, error) {
		json.Unmarshal(in, &got)
		return map[string]any{"id": "t1", "title": got["title"]}, nil
	})
	e.model.Push(
		modeltest.Turn{Text: "Creating it.", ToolCalls: []modeltest.Call{{ID: "call_a", Name: "tasks_create", Args: `{"projectId":"p1","title":"Ship it"}`}}, InputTokens: 100, OutputTokens: 20, ChunkSize: 6},
		modeltest.Turn{Text: "Created task t1.", InputTokens: 150, OutputTokens: 10},
	)
	run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-1", Input: "make a task 'Ship it' in p1"})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run)
	if got["title"] != "Ship it" {
		t.Fatalf("the tool got %v", got)
	}
	// The stream: the user's message, step 1 with text and a streamed tool
	// call and its result, step 2 with the answer, snapshot, finish.
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_STARTED"}
	if d := strings.Join(types(evs)[:5], ","); d != strings.Join(want, ",") {
		t.Errorf("stream starts %s", d)
	}
	starts := find[*agui.ToolCallStart](evs)
	if len(starts) != 1 || starts[0].ToolCallName != "tasks.create" {
		t.Fatalf("tool call starts %+v", starts)
	}
	var args strings.Builder
	for _, a := range find[*agui.ToolCallArgs](evs) {
		args.WriteString(a.Delta)
	}
	if args.String() != `{"projectId":"p1","title":"Ship it"}` || len(find[*agui.ToolCallArgs](evs)) < 3 {
		t.Errorf("streamed args %q in %d pieces", args.String(), len(find[*agui.ToolCallArgs](evs)))
	}
	res := find[*agui.ToolCallResult](evs)
	if len(res) != 1 || res[0].ToolCallID != starts[0].ToolCallID || res[0].IsError || !strings.Contains(res[0].Content, `"id":"t1"`) {
		t.Fatalf("results %+v", res)
	}
	// One invocation record, succeeded, in this run.
	invID, _ := res[0].Metadata["switchboard"].(map[string]any)["invocationId"].(string)
	inv, err := e.store.InvocationGet(context.Background(), invID)
	if err != nil || inv.Status != switchboard.StatusSucceeded || inv.RunID != run.ID() || inv.Tool != "tasks.create" || inv.Caller != "agent:assistant" {
		t.Fatalf("invocation %+v %v", inv, err)
	}
	fin, ok := last(evs).(*agui.RunFinished)
	if !ok || fin.Outcome != nil || fin.Usage[0].InputTokens != 250 || fin.Usage[0].OutputTokens != 30 {
		t.Fatalf("finish %+v", last(evs))
	}
	info := run.Info()
	if info.Status != switchboard.RunSucceeded || info.Steps != 2 || info.Usage.TotalTokens != 280 || info.Cost == nil || *info.Cost != (250*2+30*8)/1e6 {
		t.Errorf("info %+v cost %v", info, info.Cost)
	}
	// The second model request carried the call and its result; the model
	// saw the tool under a provider-safe name.
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	raw, _ := json.Marshal(reqs[1]["messages"])
	if !strings.Contains(string(raw), `"tool_call_id"`) || !strings.Contains(string(raw), `\"id\":\"t1\"`) {
		t.Errorf("second request messages: %s", raw)
	}
	tools, _ := json.Marshal(reqs[0]["tools"])
	if !strings.Contains(string(tools), `"name":"tasks_create"`) || !strings.Contains(string(tools), `"projectId"`) {
		t.Errorf("tools offered: %s", tools)
	}
	// The runtime owns this chat's history: it was saved.
	h, err := e.rt.History(context.Background(), "chat-1", "")
	if err != nil {
		t.Fatal(err)
	}
	var saved []agui.Message
	json.Unmarshal(h.Messages, &saved)
	if len(saved) != 4 || saved[0].Role != "user" || saved[1].ToolCalls[0].Function.Name != "tasks.create" || saved[2].Role != "tool" || saved[3].Content != "Created task t1." {
		t.Errorf("saved history %s", h.Messages)
	}
	// A second run continues from the saved history.
	e.model.Push(modeltest.Turn{Text: "You asked for one task."})
	run2, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-1", Input: "what did I ask?"})
	if err != nil {
		t.Fatal(err)
	}
	events(t, run2)
	msgs := e.model.Requests()[2]["messages"].([]any)
	if len(msgs) != 1+4+1 { // system, 4 saved, new user
		t.Errorf("continued conversation has %d messages", len(msgs))
	}
}

// TestParallelToolCalls: two calls in one turn run at the same time, one
// record each.
func TestParallelToolCalls(t *testing.T) {
	e := newEnv(t, nil)
	var barrier sync.WaitGroup
	barrier.Add(2)
	e.addFunc(t, "weather.get", switchboard.ClassRead, nil, func(_ context.Context, in json.RawMessage) (any, error) {
		barrier.Done()
		barrier.Wait() // both calls must be in flight together
		return json.RawMessage(in), nil
	})
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "1", Name: "weather_get", Args: `{"city":"Paris"}`}, {ID: "2", Name: "weather_get", Args: `{"city":"Oslo"}`}}},
		modeltest.Turn{Text: "Both fetched."},
	)
	run, err := e.rt.Start(context.Background(), agent.StartRequest{Input: "weather?"})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run)
	res := find[*agui.ToolCallResult](evs)
	if len(res) != 2 {
		t.Fatalf("%d results", len(res))
	}
	ids := map[string]bool{}
	for _, r := range res {
		id := r.Metadata["switchboard"].(map[string]any)["invocationId"].(string)
		inv, err := e.store.InvocationGet(context.Background(), id)
		if err != nil || inv.Status != switchboard.StatusSucceeded {
			t.Fatalf("%+v %v", inv, err)
		}
		ids[id] = true
	}
	if len(ids) != 2 {
		t.Errorf("records %v", ids)
	}
	// The results went back to the model in call order.
	msgs := e.model.Requests()[1]["messages"].([]any)
	if !strings.Contains(msgs[3].(map[string]any)["content"].(string), "Paris") || !strings.Contains(msgs[4].(map[string]any)["content"].(string), "Oslo") {
		t.Errorf("result order: %v", msgs[3:])
	}
}

func TestToolErrorsGoBackToTheModel(t *testing.T) {
	e := newEnv(t, nil)
	e.addFunc(t, "tasks.create", switchboard.ClassMutate, taskSchema, func(context.Context, json.RawMessage) (any, error) {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no project p9")
	})
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{
			{ID: "1", Name: "tasks_create", Args: `{"title":"x"}`},                  // schema violation: refused before a record
			{ID: "2", Name: "tasks_create", Args: `{"projectId":"p9","title":"x"}`}, // the tool fails
			{ID: "3", Name: "nope_tool", Args: `{}`},                                // unknown tool
		}},
		modeltest.Turn{Text: "Sorry."},
	)
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "go"})
	evs := events(t, run)
	res := find[*agui.ToolCallResult](evs)
	codes := map[string]bool{}
	for _, r := range res {
		if !r.IsError {
			t.Errorf("result %s is not an error: %s", r.ToolCallID, r.Content)
		}
		var env switchboard.ErrorEnvelope
		if err := json.Unmarshal([]byte(r.Content), &env); err != nil {
			t.Fatalf("error result is not the envelope: %s", r.Content)
		}
		codes[string(env.Error.Code)] = true
	}
	for _, c := range []string{"SCHEMA_VIOLATION", "NOT_FOUND", "TOOL_NOT_FOUND"} {
		if !codes[c] {
			t.Errorf("no %s result; got %v", c, codes)
		}
	}
	if _, ok := last(evs).(*agui.RunFinished); !ok {
		t.Errorf("tool errors must not fail the run: %T", last(evs))
	}
}

func TestNoModelConfigured(t *testing.T) {
	e := newEnv(t, func(o *agent.Options) { o.Models = nil })
	run, err := e.rt.Start(context.Background(), agent.StartRequest{Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run)
	if got := strings.Join(types(evs), ","); got != "RUN_STARTED,RUN_ERROR" {
		t.Fatalf("stream %s", got)
	}
	re := last(evs).(*agui.RunError)
	if re.Code != "MODEL_ERROR" || !strings.Contains(re.Message, "switchboard serve --config") {
		t.Errorf("%+v", re)
	}
	if info := run.Info(); info.Status != switchboard.RunFailed || info.Error.Code != switchboard.CodeModelError {
		t.Errorf("%+v", info)
	}
	if len(e.model.Requests()) != 0 {
		t.Error("a model was called")
	}
}

func TestModelFailureEndsTheRun(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Push(modeltest.Turn{Status: 429, ErrorMessage: "quota exceeded"})
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "hi"})
	evs := events(t, run)
	re, ok := last(evs).(*agui.RunError)
	if !ok || re.Code != "MODEL_ERROR" || !strings.Contains(re.Message, "quota exceeded") {
		t.Fatalf("%+v", last(evs))
	}
}

func TestCancelMidAnswer(t *testing.T) {
	e := newEnv(t, nil)
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(modeltest.Turn{Text: "I will think about this for a very long time", Hold: hold})
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "hi"})
	waitFor(t, run, func(ev agui.Event) bool {
		c, ok := ev.(*agui.TextMessageContent)
		return ok && strings.HasPrefix(c.Delta, "I will")
	})
	run.Cancel()
	evs := events(t, run)
	fin, ok := last(evs).(*agui.RunFinished)
	if !ok || fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeCancelled {
		t.Fatalf("%T %+v", last(evs), last(evs))
	}
	if run.Info().Status != switchboard.RunCancelled {
		t.Errorf("status %s", run.Info().Status)
	}
}

// waitFor blocks until the run emits an event matching ok.
func waitFor(t *testing.T, run *agent.Run, ok func(agui.Event) bool) {
	t.Helper()
	seq := 0
	for {
		recs, more, complete := run.Events(seq)
		for _, r := range recs {
			if ok(r.Event) {
				return
			}
		}
		seq += len(recs)
		if complete {
			t.Fatalf("run ended without the awaited event:\n%s", dump(recs))
		}
		<-more
	}
}

func TestMaxSteps(t *testing.T) {
	e := newEnv(t, nil)
	e.addFunc(t, "diag.ping", switchboard.ClassRead, nil, func(context.Context, json.RawMessage) (any, error) { return "pong", nil })
	e.model.Func(func(int, map[string]any) modeltest.Turn {
		return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "x", Name: "diag_ping", Args: `{}`}}}
	})
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{Input: "loop forever", MaxSteps: 3})
	evs := events(t, run)
	fin := last(evs).(*agui.RunFinished)
	if r, _ := fin.Result.(map[string]any); r["stopReason"] != "max_steps" || len(e.model.Requests()) != 3 {
		t.Fatalf("result %v after %d requests", fin.Result, len(e.model.Requests()))
	}
}

// TestFrontendToolEndsTheRun: an AG-UI client tool is emitted as a call and
// the run finishes for the client to answer; nothing is recorded.
func TestFrontendToolEndsTheRun(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Push(modeltest.Turn{Text: "Let me ask.", ToolCalls: []modeltest.Call{{ID: "f1", Name: "confirm_choice", Args: `{"question":"Blue?"}`}}})
	run, _ := e.rt.Start(context.Background(), agent.StartRequest{
		Messages: []agui.Message{{ID: "u1", Role: "user", Content: "pick a color"}},
		Tools:    []agui.Tool{{Name: "confirm_choice", Description: "Ask the user to confirm.", Parameters: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}}}`)}},
	})
	evs := events(t, run)
	fin := last(evs).(*agui.RunFinished)
	call := find[*agui.ToolCallStart](evs)[0]
	if fin.Outcome == nil || fin.Outcome.Type != "success" || len(fin.Outcome.PendingToolCallIDs) != 1 || fin.Outcome.PendingToolCallIDs[0] != call.ToolCallID {
		t.Fatalf("outcome %+v", fin.Outcome)
	}
	if len(find[*agui.ToolCallResult](evs)) != 0 || run.Info().Status != switchboard.RunWaiting {
		t.Error("a frontend call was executed")
	}
	// The client answers in the next run with a tool message.
	snap := find[*agui.MessagesSnapshot](evs)[0].Messages
	e.model.Push(modeltest.Turn{Text: "Blue it is."})
	next := append(snap, agui.Message{ID: "t1", Role: "tool", ToolCallID: call.ToolCallID, Content: "yes"})
	run2, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: run.ThreadID(), Messages: next, Tools: []agui.Tool{{Name: "confirm_choice"}}})
	if err != nil {
		t.Fatal(err)
	}
	events(t, run2)
	raw, _ := json.Marshal(e.model.Requests()[1]["messages"])
	if !strings.Contains(string(raw), `"tool_call_id":"`+call.ToolCallID+`"`) {
		t.Errorf("the client's answer did not reach the model: %s", raw)
	}
}
