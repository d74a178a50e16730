package agui_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/aguitest"
)

func TestMarshalFieldNames(t *testing.T) {
	cases := []struct {
		ev   agui.Event
		want string
	}{
		{&agui.RunStarted{ThreadID: "t", RunID: "r"}, `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`},
		{&agui.RunFinished{ThreadID: "t", RunID: "r", Outcome: &agui.Outcome{Type: "interrupt", Interrupts: []agui.Interrupt{{ID: "i1", Reason: "approval", ToolCallID: "c1"}}}},
			`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"approval","toolCallId":"c1"}]}}`},
		{&agui.RunFinished{ThreadID: "t", RunID: "r", Outcome: &agui.Outcome{Type: "success", PendingToolCallIDs: []string{"c9"}}},
			`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":["c9"]}}`},
		{&agui.RunError{Message: "boom", Code: "MODEL_ERROR"}, `{"type":"RUN_ERROR","message":"boom","code":"MODEL_ERROR"}`},
		{&agui.StepStarted{StepName: "s"}, `{"type":"STEP_STARTED","stepName":"s"}`},
		{&agui.TextMessageStart{MessageID: "m", Role: "assistant"}, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`},
		{&agui.TextMessageContent{MessageID: "m", Delta: "hi"}, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`},
		{&agui.TextMessageEnd{MessageID: "m"}, `{"type":"TEXT_MESSAGE_END","messageId":"m"}`},
		{&agui.ToolCallStart{ToolCallID: "c", ToolCallName: "x.y", ParentMessageID: "m"}, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"x.y","parentMessageId":"m"}`},
		{&agui.ToolCallArgs{ToolCallID: "c", Delta: "{}"}, `{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{}"}`},
		{&agui.ToolCallEnd{ToolCallID: "c"}, `{"type":"TOOL_CALL_END","toolCallId":"c"}`},
		{&agui.ToolCallResult{MessageID: "r", ToolCallID: "c", Content: "ok", IsError: true}, `{"type":"TOOL_CALL_RESULT","messageId":"r","toolCallId":"c","content":"ok"}`},
		{&agui.StateSnapshot{}, `{"type":"STATE_SNAPSHOT","snapshot":{}}`},
		{&agui.StateDelta{}, `{"type":"STATE_DELTA","delta":[]}`},
		{&agui.MessagesSnapshot{}, `{"type":"MESSAGES_SNAPSHOT","messages":[]}`},
		{&agui.Custom{Name: "switchboard.usage", Base: agui.Base{Timestamp: 5}}, `{"type":"CUSTOM","timestamp":5,"name":"switchboard.usage","value":{}}`},
	}
	for _, c := range cases {
		b, err := agui.Marshal(c.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.ev.EventType(), b, c.want)
		}
		back, err := agui.Decode(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		b2, _ := agui.Marshal(back)
		if string(b2) != string(b) {
			t.Errorf("round trip: %s != %s", b2, b)
		}
	}
	if _, err := agui.Decode([]byte(`{"type":"NOPE"}`)); err == nil {
		t.Error("unknown type decoded")
	}
}

func TestMessageContentForms(t *testing.T) {
	var m agui.Message
	in := `{"id":"u1","role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image","source":{"type":"url","value":"https://x/y.png","mimeType":"image/png"}}]}`
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.Content != "what is this?" || len(m.Parts) != 2 || m.Parts[1].Source.Value != "https://x/y.png" {
		t.Errorf("%+v", m)
	}
	out, _ := json.Marshal(m)
	if string(out) != in {
		t.Errorf("parts round trip:\n%s\n%s", out, in)
	}
	a, _ := json.Marshal(agui.Message{ID: "a", Role: "assistant", ToolCalls: []agui.ToolCall{{ID: "c", Function: agui.FunctionCall{Name: "n", Arguments: "{}"}}}})
	if d := cmp.Diff(`{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]}`, string(a)); d != "" {
		t.Error(d)
	}
}

func TestSSEFramesRoundTrip(t *testing.T) {
	var buf []byte
	for i, ev := range aguitest.SampleRun() {
		b, err := agui.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		buf = agui.AppendFrame(buf, string(rune('a'+i)), b)
	}
	var got []agui.Event
	var ids []string
	err := agui.ReadFrames(bytesReader(buf), func(id string, data []byte) error {
		ev, err := agui.Decode(data)
		got = append(got, ev)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(aguitest.SampleRun()) || ids[0] != "a" {
		t.Fatalf("%d events, ids %v", len(got), ids)
	}
	if err := agui.CheckAll(got); err != nil {
		t.Fatal(err)
	}
}
