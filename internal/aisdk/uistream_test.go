package aisdk_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/aguitest"
	"github.com/switchboardhq/switchboard/internal/aisdk"
)

// TestUIStreamChunkByChunk translates the sample run and checks every chunk.
func TestUIStreamChunkByChunk(t *testing.T) {
	u := aisdk.NewUIStream("msg-1")
	var got []string
	for _, ev := range aguitest.SampleRun() {
		for _, c := range u.Translate(ev) {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(b))
		}
	}
	want := []string{
		`{"type":"start","messageId":"msg-1"}`,
		`{"type":"start-step"}`,
		`{"type":"text-start","id":"m1"}`,
		`{"type":"text-delta","id":"m1","delta":"Creating "}`,
		`{"type":"text-delta","id":"m1","delta":"the task."}`,
		`{"type":"text-end","id":"m1"}`,
		`{"type":"tool-input-start","toolCallId":"c1","toolName":"tasks.create","dynamic":true}`,
		`{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"{\"projectId\":\"p1\","}`,
		`{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"\"title\":\"Ship it\"}"}`,
		`{"type":"tool-input-available","toolCallId":"c1","toolName":"tasks.create","input":{"projectId":"p1","title":"Ship it"},"dynamic":true}`,
		`{"type":"data-switchboard-invocation","data":{"invocationId":"inv-1","status":"dispatched"},"transient":true}`,
		`{"type":"tool-output-available","toolCallId":"c1","output":{"id":"t1","title":"Ship it"},"dynamic":true}`,
		`{"type":"finish-step"}`,
		`{"type":"start-step"}`,
		`{"type":"text-start","id":"m2"}`,
		`{"type":"text-delta","id":"m2","delta":"Done: t1."}`,
		`{"type":"text-end","id":"m2"}`,
		`{"type":"finish-step"}`,
		`{"type":"finish","finishReason":"stop"}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("chunks (-want +got):\n%s", d)
	}
}

func TestUIStreamEndings(t *testing.T) {
	cases := []struct {
		ev   agui.Event
		want []string
	}{
		{&agui.RunError{Message: "MODEL_ERROR: no key", Code: "MODEL_ERROR"}, []string{`{"type":"error","errorText":"MODEL_ERROR: no key"}`, `{"type":"finish","finishReason":"error"}`}},
		{&agui.RunFinished{Outcome: &agui.Outcome{Type: "cancelled"}}, []string{`{"type":"abort","reason":"cancelled"}`}},
		{&agui.RunFinished{Outcome: &agui.Outcome{Type: "success", PendingToolCallIDs: []string{"c"}}}, []string{`{"type":"finish","finishReason":"tool-calls"}`}},
		{&agui.ToolCallResult{ToolCallID: "c", Content: "USER_DENIED: no", IsError: true}, []string{`{"type":"tool-output-error","toolCallId":"c","errorText":"USER_DENIED: no","dynamic":true}`}},
		{&agui.ToolCallResult{ToolCallID: "c", Content: "plain text"}, []string{`{"type":"tool-output-available","toolCallId":"c","output":"plain text","dynamic":true}`}},
		{&agui.MessagesSnapshot{}, nil},
	}
	for _, c := range cases {
		var got []string
		for _, ch := range aisdk.NewUIStream("").Translate(c.ev) {
			b, _ := json.Marshal(ch)
			got = append(got, string(b))
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.ev.EventType(), d)
		}
	}
	if got := string(aisdk.AppendDone(nil)); got != "data: [DONE]\n\n" {
		t.Errorf("done frame %q", got)
	}
}
