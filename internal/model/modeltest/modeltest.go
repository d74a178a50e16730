// Package modeltest provides scripted model servers for tests and
// benchmarks: local HTTP servers that speak the real streaming wire formats
// of OpenAI Chat Completions (chat.completion.chunk SSE) and Anthropic
// Messages (message_start … message_stop SSE), answering each request with
// the next scripted Turn. The model package's providers talk to them through
// the official SDK clients, so tests exercise the real client code.
package modeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Turn is one scripted answer.
type Turn struct {
	// Text is streamed in chunks of ChunkSize bytes (default 8).
	Text string
	// ToolCalls are streamed after the text, arguments in chunks.
	ToolCalls []Call
	// InputTokens and OutputTokens are reported as usage.
	InputTokens, OutputTokens int64
	// Status, when non-zero, answers with that HTTP status and an error body
	// carrying ErrorMessage instead of a stream.
	Status       int
	ErrorMessage string
	// StreamError, when set, sends an in-stream error event after the text.
	StreamError string
	// Hold, when set, pauses the stream after the first text chunk until it
	// is closed (or the request ends): a run stays busy on demand.
	Hold <-chan struct{}
	// ChunkSize splits text and arguments; zero means 8.
	ChunkSize int
}

// Call is one scripted tool call.
type Call struct {
	ID   string
	Name string
	Args string
}

// Script is the shared core of both servers: a queue of turns, or a
// function that computes each turn, and a record of the requests.
type Script struct {
	mu    sync.Mutex
	turns []Turn
	next  func(n int, body map[string]any) Turn
	reqs  []map[string]any
	hdrs  []http.Header
}

// Push appends turns to the queue.
func (s *Script) Push(turns ...Turn) {
	s.mu.Lock()
	s.turns = append(s.turns, turns...)
	s.mu.Unlock()
}

// Func makes every request beyond the queued turns answered by fn, which
// gets the request number (0-based, over all requests) and decoded body.
func (s *Script) Func(fn func(n int, body map[string]any) Turn) {
	s.mu.Lock()
	s.next = fn
	s.mu.Unlock()
}

// Requests returns the decoded bodies received so far.
func (s *Script) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.reqs...)
}

// Headers returns the headers of the requests received so far.
func (s *Script) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.hdrs...)
}

// take records a request and returns its turn; ok is false when the script
// is exhausted.
func (s *Script) take(r *http.Request) (Turn, bool) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, body)
	s.hdrs = append(s.hdrs, r.Header.Clone())
	if len(s.turns) > 0 {
		t := s.turns[0]
		s.turns = s.turns[1:]
		return t, true
	}
	if s.next != nil {
		return s.next(n, body), true
	}
	return Turn{}, false
}

func chunks(s string, size int) []string {
	if size <= 0 {
		size = 8
	}
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// sse writes SSE frames and flushes each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) send(event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		io.WriteString(s.w, "event: "+event+"\n")
	}
	io.WriteString(s.w, "data: ")
	s.w.Write(b)
	io.WriteString(s.w, "\n\n")
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) raw(line string) {
	io.WriteString(s.w, line)
	if s.f != nil {
		s.f.Flush()
	}
}

func hold(r *http.Request, ch <-chan struct{}) {
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-r.Context().Done():
	}
}

func newServer(tb testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	if tb != nil {
		tb.Cleanup(srv.Close)
	}
	return srv
}
