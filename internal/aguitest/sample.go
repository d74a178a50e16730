package aguitest

import (
	"encoding/json"

	"github.com/switchboardhq/switchboard/agui"
)

// SampleRun is a run with every event kind switchboard emits, in a valid
// order: two steps, a streamed text message, a streamed tool call with its
// result, custom and state events, a snapshot, and a finish with usage.
// The AG-UI and AI SDK tests share it.
func SampleRun() []agui.Event {
	return []agui.Event{
		&agui.RunStarted{ThreadID: "chat-1", RunID: "run-1"},
		&agui.StepStarted{StepName: "step-1"},
		&agui.TextMessageStart{MessageID: "m1", Role: "assistant"},
		&agui.TextMessageContent{MessageID: "m1", Delta: "Creating "},
		&agui.TextMessageContent{MessageID: "m1", Delta: "the task."},
		&agui.TextMessageEnd{MessageID: "m1"},
		&agui.ToolCallStart{ToolCallID: "c1", ToolCallName: "tasks.create", ParentMessageID: "m1"},
		&agui.ToolCallArgs{ToolCallID: "c1", Delta: `{"projectId":"p1",`},
		&agui.ToolCallArgs{ToolCallID: "c1", Delta: `"title":"Ship it"}`},
		&agui.ToolCallEnd{ToolCallID: "c1"},
		&agui.Custom{Name: "switchboard.invocation", Value: map[string]any{"invocationId": "inv-1", "status": "dispatched"}},
		&agui.ToolCallResult{MessageID: "r1", ToolCallID: "c1", Content: `{"id":"t1","title":"Ship it"}`, Role: "tool"},
		&agui.StateSnapshot{Snapshot: map[string]any{"page": "/projects/p1"}},
		&agui.StateDelta{Delta: []json.RawMessage{json.RawMessage(`{"op":"replace","path":"/page","value":"/tasks/t1"}`)}},
		&agui.StepFinished{StepName: "step-1"},
		&agui.StepStarted{StepName: "step-2"},
		&agui.TextMessageStart{MessageID: "m2", Role: "assistant"},
		&agui.TextMessageContent{MessageID: "m2", Delta: "Done: t1."},
		&agui.TextMessageEnd{MessageID: "m2"},
		&agui.StepFinished{StepName: "step-2"},
		&agui.MessagesSnapshot{Messages: []agui.Message{
			{ID: "u1", Role: "user", Content: "make a task"},
			{ID: "m1", Role: "assistant", Content: "Creating the task.", ToolCalls: []agui.ToolCall{{ID: "c1", Function: agui.FunctionCall{Name: "tasks.create", Arguments: `{"projectId":"p1","title":"Ship it"}`}}}},
			{ID: "r1", Role: "tool", ToolCallID: "c1", Content: `{"id":"t1","title":"Ship it"}`},
			{ID: "m2", Role: "assistant", Content: "Done: t1."},
		}},
		&agui.RunFinished{ThreadID: "chat-1", RunID: "run-1", Result: map[string]any{"steps": 2},
			Usage: []agui.TokenUsage{{Provider: "openai", Model: "m", InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}},
	}
}
