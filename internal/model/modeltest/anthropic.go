package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Anthropic is a scripted Anthropic Messages server. Point a model at
// BaseURL().
type Anthropic struct {
	Script
	*httptest.Server
}

// NewAnthropic starts a server answering POST /v1/messages with the given
// turns, in order; it is closed when tb's test ends.
func NewAnthropic(tb testing.TB, turns ...Turn) *Anthropic {
	s := &Anthropic{}
	s.Push(turns...)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.serve)
	s.Server = newServer(tb, mux)
	return s
}

// BaseURL is the API base to configure (without /v1).
func (s *Anthropic) BaseURL() string { return s.URL + "/" }

func (s *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	t, ok := s.take(r)
	if !ok {
		t = Turn{Status: http.StatusInternalServerError, ErrorMessage: "modeltest: the script has no more turns"}
	}
	if t.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(t.Status)
		typ := "api_error"
		switch t.Status {
		case http.StatusUnauthorized:
			typ = "authentication_error"
		case http.StatusTooManyRequests:
			typ = "rate_limit_error"
		}
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, t.ErrorMessage)
		return
	}
	out := newSSE(w)
	out.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": "scripted", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": 1},
	}})
	idx := 0
	if t.Text != "" || t.Hold != nil {
		out.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for i, c := range chunks(t.Text, t.ChunkSize) {
			out.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "text_delta", "text": c}})
			if i == 0 {
				hold(r, t.Hold)
			}
		}
		if t.Text == "" {
			hold(r, t.Hold)
		}
		out.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if t.StreamError != "" {
		out.send("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": t.StreamError}})
		return
	}
	for _, call := range t.ToolCalls {
		out.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": json.RawMessage("{}")}})
		for _, a := range chunks(call.Args, t.ChunkSize) {
			out.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": a}})
		}
		out.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	stop := "end_turn"
	if len(t.ToolCalls) > 0 {
		stop = "tool_use"
	}
	out.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": t.OutputTokens}})
	out.send("message_stop", map[string]any{"type": "message_stop"})
}
