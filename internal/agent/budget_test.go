package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/internal/quota"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestRunStopsAtCeiling: a run with a tiny cost (or token) ceiling runs
// its first turn and its tool call, then ends BUDGET_EXCEEDED before the
// second model call; the user sees the code and a message.
func TestRunStopsAtCeiling(t *testing.T) {
	t.Parallel()
	for name, set := range map[string]func(*agent.Options){
		"cost":   func(o *agent.Options) { o.MaxRunCost = 0.0001 }, // turn 1 costs $0.00036
		"tokens": func(o *agent.Options) { o.MaxRunTokens = 100 },  // turn 1 uses 120
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, set)
			calls := 0
			e.addFunc(t, "tasks.create", switchboard.ClassMutate, taskSchema, func(context.Context, json.RawMessage) (any, error) {
				calls++
				return map[string]any{"id": "t1"}, nil
			})
			e.model.Push(
				modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_a", Name: "tasks_create", Args: `{"projectId":"p1","title":"a"}`}}, InputTokens: 100, OutputTokens: 20},
				modeltest.Turn{Text: "never asked for", InputTokens: 100, OutputTokens: 20},
			)
			run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-" + name, Input: "make a task"})
			if err != nil {
				t.Fatal(err)
			}
			evs := events(t, run)
			re, ok := last(evs).(*agui.RunError)
			if !ok || re.Code != string(switchboard.CodeBudgetExceeded) || !strings.Contains(re.Message, "ceiling") {
				t.Fatalf("last event %T %+v, want RUN_ERROR BUDGET_EXCEEDED", last(evs), last(evs))
			}
			if calls != 1 || len(e.model.Requests()) != 1 {
				t.Errorf("tool calls %d, model requests %d; want 1 and 1", calls, len(e.model.Requests()))
			}
		})
	}
}

// TestRunStopsAtDailyQuota: the assistant's model tokens count against
// its daily quota across runs: the run that uses it up ends QUOTA_EXCEEDED
// before its next model call, and the next run before its first.
func TestRunStopsAtDailyQuota(t *testing.T) {
	t.Parallel()
	var book *quota.Book
	e := newEnvWith(t, func(st *sqlite.Store, bo *broker.Options) {
		book = quota.New(st, switchboard.DailyQuota{Agent: switchboard.QuotaUsage{Tokens: 100}}, nil)
		bo.Quotas = book
	}, func(o *agent.Options) { o.Quotas = book })
	e.addFunc(t, "tasks.create", switchboard.ClassMutate, taskSchema, func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"id": "t1"}, nil
	})
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_a", Name: "tasks_create", Args: `{"projectId":"p1","title":"a"}`}}, InputTokens: 100, OutputTokens: 20},
		modeltest.Turn{Text: "never asked for", InputTokens: 100, OutputTokens: 20},
	)
	for i, input := range []string{"make a task", "and another"} {
		run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "quota", Input: input})
		if err != nil {
			t.Fatal(err)
		}
		evs := events(t, run)
		re, ok := last(evs).(*agui.RunError)
		if !ok || re.Code != string(switchboard.CodeQuotaExceeded) || !strings.Contains(re.Message, "agent:assistant used its daily quota of 100 model tokens") {
			t.Fatalf("run %d: last event %T %+v, want RUN_ERROR QUOTA_EXCEEDED", i+1, last(evs), last(evs))
		}
		if n := len(e.model.Requests()); n != 1 {
			t.Fatalf("after run %d the model was asked %d times; want once in all", i+1, n)
		}
	}
}
