package agui_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/agui"
)

func TestParseRunAgentInput(t *testing.T) {
	in := `{"threadId":"chat-1","runId":"run-1","state":{},"messages":[
		{"id":"u1","role":"user","content":"open the report"},
		{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"confirm","arguments":"{\"q\":\"ok?\"}"}}]},
		{"id":"t1","role":"tool","toolCallId":"c1","content":"yes"}],
		"tools":[{"name":"confirm","description":"Ask the user.","parameters":{"type":"object"}}],
		"context":[{"description":"page","value":"/reports"}],
		"forwardedProps":{"sessionId":"s1"},
		"resume":[{"interruptId":"i1","status":"resolved","payload":{"approved":true}}],
		"someFutureField":1}`
	got, err := agui.ParseRunAgentInput([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got.ThreadID != "chat-1" || len(got.Messages) != 3 || got.Messages[2].Content != "yes" || got.Tools[0].Name != "confirm" ||
		got.Context[0].Value != "/reports" || got.Resume[0].InterruptID != "i1" || string(got.ForwardedProps) != `{"sessionId":"s1"}` {
		t.Errorf("%+v", got)
	}
	for _, c := range []struct{ body, want string }{
		{`{"runId":"r","messages":[]}`, "threadId and runId are required"},
		{`{"threadId":"t","runId":"r"}`, "messages is required"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"x","role":"robot","content":""}]}`, "unknown role"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"x","role":"tool","content":""}]}`, "without toolCallId"},
		{`{"threadId":"t","runId":"r","messages":[{"role":"user","content":"hi"}]}`, "has no id"},
		{`{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"x","parameters":"nope"}]}`, "JSON Schema object"},
		{`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"maybe"}]}`, "resolved or cancelled"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"x","role":"user","content":5}]}`, "content must be"},
		{`[]`, "RunAgentInput"},
	} {
		if _, err := agui.ParseRunAgentInput([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}

func FuzzParseRunAgentInput(f *testing.F) {
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"x"}]}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"a","parameters":{}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := agui.ParseRunAgentInput(b)
		if err != nil {
			return
		}
		// What parses re-encodes and parses to the same messages.
		out, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := agui.ParseRunAgentInput(out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if len(again.Messages) != len(in.Messages) {
			t.Fatal("message count changed")
		}
	})
}
