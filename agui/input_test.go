package agui_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestParseChatRequest(t *testing.T) {
	body := `{"id":"chat-9","trigger":"submit-message","sessionId":"s1","messages":[
		{"id":"u1","role":"user","parts":[{"type":"text","text":"weather in Paris?"},{"type":"file","mediaType":"image/png","url":"data:image/png;base64,AAAA"}]},
		{"id":"a1","role":"assistant","parts":[
			{"type":"step-start"},
			{"type":"text","text":"Checking."},
			{"type":"dynamic-tool","toolName":"weather.get","toolCallId":"c1","state":"output-available","input":{"city":"Paris"},"output":{"tempC":21}},
			{"type":"tool-weather.get","toolCallId":"c2","state":"output-error","input":{"city":"Oslo"},"errorText":"TOOL_UNAVAILABLE"},
			{"type":"step-start"},
			{"type":"reasoning","text":"hmm"},
			{"type":"text","text":"Paris is 21°C."}]},
		{"id":"u2","role":"user","parts":[{"type":"text","text":"thanks"}]}]}`
	req, err := agui.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.ID != "chat-9" || req.Trigger != "submit-message" || string(req.Extra["sessionId"]) != `"s1"` {
		t.Errorf("%+v", req)
	}
	got := agui.FromUIMessages(req.Messages)
	want := []agui.Message{
		{ID: "u1", Role: "user", Content: "weather in Paris?", Parts: []agui.Part{{Type: "text", Text: "weather in Paris?"}, {Type: "image", Source: &agui.Source{Type: "data", Value: "AAAA", MimeType: "image/png"}}}},
		{ID: "a1", Role: "assistant", Content: "Checking.", ToolCalls: []agui.ToolCall{
			{ID: "c1", Type: "function", Function: agui.FunctionCall{Name: "weather.get", Arguments: `{"city":"Paris"}`}},
			{ID: "c2", Type: "function", Function: agui.FunctionCall{Name: "weather.get", Arguments: `{"city":"Oslo"}`}},
		}},
		{ID: "c1-result", Role: "tool", ToolCallID: "c1", Content: `{"tempC":21}`},
		{ID: "c2-result", Role: "tool", ToolCallID: "c2", Content: "TOOL_UNAVAILABLE", Error: "TOOL_UNAVAILABLE"},
		{ID: "a1-2", Role: "assistant", Content: "Paris is 21°C."},
		{ID: "u2", Role: "user", Content: "thanks"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("FromUIMessages (-want +got):\n%s", d)
	}
	for _, c := range []struct{ body, want string }{
		{`{"messages":[]}`, "id (the chat id) is required"},
		{`{"id":"c"}`, "messages is required"},
		{`{"id":"c","messages":[],"trigger":"explode"}`, "unknown trigger"},
		{`{"id":"c","messages":[{"id":"x","role":"tool","parts":[]}]}`, "unknown role"},
	} {
		if _, err := agui.ParseChatRequest([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}

func FuzzParseChatRequest(f *testing.F) {
	f.Add([]byte(`{"id":"c","messages":[{"id":"a","role":"assistant","parts":[{"type":"tool-x","toolCallId":"1","state":"output-available","output":"s"}]}]}`))
	f.Add([]byte(`{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"file","mediaType":"image/jpeg","url":"data:,"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := agui.ParseChatRequest(b)
		if err != nil {
			return
		}
		for _, m := range agui.FromUIMessages(req.Messages) {
			if m.Role == "tool" && m.ToolCallID == "" {
				t.Fatalf("tool message without call id: %+v", m)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
	})
}
