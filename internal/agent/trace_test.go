package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestRunTraceFollowsGenAIConventions: a run records invoke_agent, a chat
// span per model call beneath it and an execute_tool span per tool call
// (from the broker, the one call path) beneath it too, with the gen_ai.*
// attributes — and no prompt, answer, argument or result anywhere.
func TestRunTraceFollowsGenAIConventions(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnvWith(t, func(_ *sqlite.Store, o *broker.Options) { o.TracerProvider = tp },
		func(o *agent.Options) { o.TracerProvider = tp })
	e.addFunc(t, "tasks.create", switchboard.ClassMutate, taskSchema, func(_ context.Context, in json.RawMessage) (any, error) {
		return map[string]any{"id": "t1", "secretResult": "RESULT-7731"}, nil
	})
	e.model.Push(
		modeltest.Turn{Text: "Creating it.", ToolCalls: []modeltest.Call{
			{ID: "call_a", Name: "tasks_create", Args: `{"projectId":"p1","title":"ARG-4410"}`},
			{ID: "call_b", Name: "tasks_create", Args: `{"title":"ARG-4411"}`}, // no projectId: SCHEMA_VIOLATION
		}, InputTokens: 100, OutputTokens: 20},
		modeltest.Turn{Text: "ANSWER-9902", InputTokens: 150, OutputTokens: 10},
	)
	run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-trace", Input: "PROMPT-5518 make a task"})
	if err != nil {
		t.Fatal(err)
	}
	events(t, run)
	e.rt.Close() // the run's goroutine has ended its invoke_agent span

	spans := rec.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = append(byName[s.Name()], s)
		for _, kv := range s.Attributes() {
			for _, secret := range []string{"ARG-44", "RESULT-7731", "ANSWER-9902", "PROMPT-5518", "Creating it"} {
				if strings.Contains(kv.Value.Emit(), secret) {
					t.Errorf("span %s attribute %s = %q carries content", s.Name(), kv.Key, kv.Value.Emit())
				}
			}
		}
		if strings.Contains(s.Status().Description, "ARG-44") {
			t.Errorf("span %s status %q carries an argument", s.Name(), s.Status().Description)
		}
	}
	agents, chats, tools := byName["invoke_agent"], byName["chat scripted-1"], byName["execute_tool tasks.create"]
	if len(agents) != 1 || len(chats) != 2 || len(tools) != 2 {
		t.Fatalf("spans %v; want one invoke_agent, two chat scripted-1, two execute_tool tasks.create", names(spans))
	}
	root := agents[0]
	wantAttrs(t, root, map[attribute.Key]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "chat-trace",
		"gen_ai.provider.name": "openai", "gen_ai.request.model": "scripted-1",
		"gen_ai.usage.input_tokens": "250", "gen_ai.usage.output_tokens": "30",
	})
	for _, s := range append(chats, tools...) {
		if s.Parent().SpanID() != root.SpanContext().SpanID() || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %s is not a child of invoke_agent", s.Name())
		}
	}
	wantAttrs(t, chats[0], map[attribute.Key]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "scripted-1",
		"gen_ai.conversation.id": "chat-trace", "gen_ai.usage.input_tokens": "100", "gen_ai.usage.output_tokens": "20",
		"gen_ai.response.model": "scripted", "gen_ai.response.finish_reasons": `["tool_calls"]`,
	})
	var ok, failed sdktrace.ReadOnlySpan
	for _, s := range tools {
		if s.Status().Code == codes.Error {
			failed = s
		} else {
			ok = s
		}
	}
	if ok == nil || failed == nil {
		t.Fatalf("want one succeeded and one failed execute_tool span")
	}
	wantAttrs(t, ok, map[attribute.Key]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "tasks.create"})
	wantAttrs(t, failed, map[attribute.Key]string{"error.type": "SCHEMA_VIOLATION", "gen_ai.tool.name": "tasks.create"})
	id := attr(ok, "gen_ai.tool.call.id")
	if inv, err := e.store.InvocationGet(context.Background(), id); err != nil || inv.Tool != "tasks.create" {
		t.Errorf("gen_ai.tool.call.id %q is not the invocation's id: %+v %v", id, inv, err)
	}
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]string) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k); got != v {
			t.Errorf("span %s: %s = %q, want %q", s.Name(), k, got, v)
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
