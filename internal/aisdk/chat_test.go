package aisdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/aisdk"
)

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
	req, err := aisdk.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.ID != "chat-9" || req.Trigger != "submit-message" || string(req.Extra["sessionId"]) != `"s1"` {
		t.Errorf("%+v", req)
	}
	got := aisdk.FromUIMessages(req.Messages)
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
		if _, err := aisdk.ParseChatRequest([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}

func FuzzParseChatRequest(f *testing.F) {
	f.Add([]byte(`{"id":"c","messages":[{"id":"a","role":"assistant","parts":[{"type":"tool-x","toolCallId":"1","state":"output-available","output":"s"}]}]}`))
	f.Add([]byte(`{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"file","mediaType":"image/jpeg","url":"data:,"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := aisdk.ParseChatRequest(b)
		if err != nil {
			return
		}
		for _, m := range aisdk.FromUIMessages(req.Messages) {
			if m.Role == "tool" && m.ToolCallID == "" {
				t.Fatalf("tool message without call id: %+v", m)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
	})
}
