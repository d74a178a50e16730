package modeltest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// OpenAI is a scripted OpenAI-compatible Chat Completions server. Point a
// model at BaseURL().
type OpenAI struct {
	Script
	*httptest.Server
}

// NewOpenAI starts a server answering POST /v1/chat/completions with the
// given turns, in order; it is closed when tb's test ends (tb may be nil:
// then call Close).
func NewOpenAI(tb testing.TB, turns ...Turn) *OpenAI {
	s := &OpenAI{}
	s.Push(turns...)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	s.Server = newServer(tb, mux)
	return s
}

// BaseURL is the API base to configure (…/v1).
func (s *OpenAI) BaseURL() string { return s.URL + "/v1" }

func (s *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	t, ok := s.take(r)
	if !ok {
		t = Turn{Status: http.StatusInternalServerError, ErrorMessage: "modeltest: the script has no more turns"}
	}
	if t.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(t.Status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"test_error","code":"test"}}`, t.ErrorMessage)
		return
	}
	out := newSSE(w)
	const id = "chatcmpl-test"
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	out.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, c := range chunks(t.Text, t.ChunkSize) {
		out.send("", chunk(map[string]any{"content": c}, nil))
		if i == 0 {
			hold(r, t.Hold)
		}
	}
	if t.Text == "" {
		hold(r, t.Hold)
	}
	if t.StreamError != "" {
		out.send("", map[string]any{"error": map[string]any{"message": t.StreamError, "type": "server_error"}})
		return
	}
	for i, call := range t.ToolCalls {
		out.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": call.ID, "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": ""},
		}}}, nil))
		for _, a := range chunks(call.Args, t.ChunkSize) {
			out.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": a},
			}}}, nil))
		}
	}
	finish := "stop"
	if len(t.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	out.send("", chunk(map[string]any{}, finish))
	out.send("", map[string]any{
		"id": id, "object": "chat.completion.chunk", "created": 1, "model": "scripted", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": t.InputTokens, "completion_tokens": t.OutputTokens, "total_tokens": t.InputTokens + t.OutputTokens},
	})
	out.raw("data: [DONE]\n\n")
}
