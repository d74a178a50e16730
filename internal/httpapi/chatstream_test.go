package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/aguitest"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// stagedServer serves h and reports two moments a reattach test waits for:
// the POST /agent/chat handler has returned (its client left), and a GET
// .../stream has attached (its status line is written after it counted as
// a reader).
type stagedServer struct {
	*httptest.Server
	posted, attached chan struct{}
}

type headerSignal struct {
	http.ResponseWriter
	once *sync.Once
	ch   chan struct{}
}

func (w headerSignal) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	w.once.Do(func() { close(w.ch) })
}

func (w headerSignal) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func newStaged(t *testing.T, h http.Handler) *stagedServer {
	s := &stagedServer{posted: make(chan struct{}), attached: make(chan struct{})}
	var p, a sync.Once
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/api/v1/agent/chat":
			defer p.Do(func() { close(s.posted) })
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/stream"):
			w = headerSignal{w, &a, s.attached}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// postThenLeave POSTs a useChat turn to /agent/chat, reads until the first
// text delta and goes away, as a reload does; it returns the chat's run.
func postThenLeave(t *testing.T, srv *stagedServer, rt *agent.Runtime, chat string) *agent.Run {
	t.Helper()
	return postThenLeaveAs(t, srv, rt, chat, token)
}

// postThenLeaveAs is postThenLeave with bearer tok.
func postThenLeaveAs(t *testing.T, srv *stagedServer, rt *agent.Runtime, chat, tok string) *agent.Run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"id":"` + chat + `","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"say two words"}]}]}`
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/agent/chat", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	seen := errors.New("seen")
	err = agui.ReadFrames(resp.Body, func(_ string, data []byte) error {
		if strings.Contains(string(data), `"text-delta"`) {
			return seen
		}
		return nil
	})
	if !errors.Is(err, seen) {
		t.Fatalf("the stream ended before any text: %v", err)
	}
	run := rt.ActiveRun(chat)
	if run == nil {
		t.Fatal("no active run while the answer is being written")
	}
	cancel()
	resp.Body.Close()
	<-srv.posted
	return run
}

// TestAISDKChatReattach: a useChat client that reloads mid-answer gets the
// whole answer by reattaching the way `resume: true` does (the `ai`
// package's own DefaultChatTransport.reconnectToStream): the run outlived
// the request that started it, the stream replays from the start under the
// same message id and follows to the end; afterwards there is nothing to
// resume (204).
func TestAISDKChatReattach(t *testing.T) {
	e := newAssistant(t, true)
	aguitest.Require(t)
	srv := newStaged(t, e.srv.Config.Handler)
	hold := make(chan struct{})
	var release sync.Once
	defer release.Do(func() { close(hold) })
	e.model.Push(modeltest.Turn{Text: "first second", ChunkSize: 6, Hold: hold})
	run := postThenLeave(t, srv, e.rt, "chat-re")
	go func() {
		<-srv.attached // the reattached client reads; let the answer finish
		release.Do(func() { close(hold) })
	}()
	var out struct {
		Active  bool             `json:"active"`
		Chunks  []map[string]any `json:"chunks"`
		Errors  []string         `json:"errors"`
		Message struct {
			ID    string           `json:"id"`
			Parts []map[string]any `json:"parts"`
		} `json:"message"`
	}
	hdrs := `{"authorization":"Bearer ` + token + `"}`
	aguitest.Run(t, nil, &out, "aisdkresume", srv.URL+"/api/v1/agent/chat", "chat-re", hdrs)
	if !out.Active || len(out.Errors) > 0 {
		t.Fatalf("reattach: %+v", out)
	}
	var text []string
	for _, p := range out.Message.Parts {
		if p["type"] == "text" {
			text = append(text, p["text"].(string))
		}
	}
	if got := strings.Join(text, ""); got != "first second" || out.Message.ID != "msg_"+run.ID() {
		t.Errorf("reattached message %q text %q, want msg_%s \"first second\"", out.Message.ID, got, run.ID())
	}
	if last := out.Chunks[len(out.Chunks)-1]["type"]; last != "finish" {
		t.Errorf("last chunk %v", last)
	}
	if st := run.Info().Status; st != switchboard.RunSucceeded {
		t.Errorf("run %s", st)
	}
	var again struct {
		Active bool `json:"active"`
	}
	aguitest.Run(t, nil, &again, "aisdkresume", srv.URL+"/api/v1/agent/chat", "chat-re", hdrs)
	if again.Active {
		t.Error("an ended run is still offered for resume")
	}
}

// TestAISDKChatStop: an abort is only a disconnect; DELETE .../stream is
// the explicit stop.
func TestAISDKChatStop(t *testing.T) {
	e := newAssistant(t, true)
	srv := newStaged(t, e.srv.Config.Handler)
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(modeltest.Turn{Text: "first second", ChunkSize: 6, Hold: hold})
	run := postThenLeave(t, srv, e.rt, "chat-st")
	if run.Info().Status != switchboard.RunRunning {
		t.Fatalf("the run did not survive its client: %s", run.Info().Status)
	}
	r := e.post(t, "DELETE", "/api/v1/agent/chat/chat-st/stream", token, "")
	if got := decodeJSON(t, r); r.StatusCode != http.StatusOK || got["status"] != "cancelled" || got["runId"] != run.ID() {
		t.Fatalf("stop: %d %v", r.StatusCode, got)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := e.post(t, m, "/api/v1/agent/chat/chat-st/stream", token, ""); r.StatusCode != http.StatusNoContent {
			t.Errorf("%s after the stop: %d", m, r.StatusCode)
		}
	}
	if r := e.post(t, "GET", "/api/v1/agent/chat/never-ran/stream", token, ""); r.StatusCode != http.StatusNoContent {
		t.Errorf("a chat with no run: %d", r.StatusCode)
	}
}

// TestChatStreamOfAnotherUser (security review F4): another user's tab
// gets, for a chat with a run in progress, the answer of a chat with no
// run (204), and cannot stop it.
func TestChatStreamOfAnotherUser(t *testing.T) {
	e := newAssistant(t, true)
	ctx := context.Background()
	alice, err := e.admin.CreateSession(ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := e.admin.CreateSession(ctx, "user:bob")
	if err != nil {
		t.Fatal(err)
	}
	srv := newStaged(t, e.srv.Config.Handler)
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(modeltest.Turn{Text: "first second", ChunkSize: 6, Hold: hold})
	run := postThenLeaveAs(t, srv, e.rt, "chat-alice", alice.SessionToken)
	for _, m := range []string{"GET", "DELETE"} {
		r := e.post(t, m, "/api/v1/agent/chat/chat-alice/stream", bob.SessionToken, "")
		if r.StatusCode != http.StatusNoContent {
			t.Errorf("bob's %s of alice's stream: %d", m, r.StatusCode)
		}
		r.Body.Close()
	}
	if st := run.Info().Status; st != switchboard.RunRunning {
		t.Fatalf("alice's run after bob's stop: %s", st)
	}
	r := e.post(t, "DELETE", "/api/v1/agent/chat/chat-alice/stream", alice.SessionToken, "")
	if got := decodeJSON(t, r); r.StatusCode != http.StatusOK || got["status"] != "cancelled" {
		t.Fatalf("alice's stop: %d %v", r.StatusCode, got)
	}
}

// TestAISDKChatOrphanCancelled: a run nobody reattaches to within the grace
// is cancelled, so a closed tab does not pay for an answer no one sees.
func TestAISDKChatOrphanCancelled(t *testing.T) {
	e := newAssistant(t, true)
	opts := e.opts
	opts.ChatReattachGrace = time.Millisecond
	h, err := httpapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := newStaged(t, h)
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(modeltest.Turn{Text: "first second", ChunkSize: 6, Hold: hold})
	run := postThenLeave(t, srv, e.rt, "chat-orphan")
	<-run.Done()
	if st := run.Info().Status; st != switchboard.RunCancelled {
		t.Errorf("an orphaned run ended %s", st)
	}
}

// TestAGUIFramesCarryIDs: POST /agui frames carry their position, the id
// GET /runs/{id}/events resumes after with Last-Event-ID.
func TestAGUIFramesCarryIDs(t *testing.T) {
	e := newAssistant(t, true)
	e.model.Push(createThenAnswer...)
	body := `{"threadId":"chat-ids","runId":"run-ids","messages":[{"id":"u1","role":"user","content":"create 'Ship it' in p1"}],"tools":[],"context":[]}`
	evs, ids := readAGUI(t, e.post(t, "POST", "/api/v1/agui", token, body).Body)
	for i, id := range ids {
		if id != strconv.Itoa(i) {
			t.Fatalf("frame %d has id %q", i, id)
		}
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/runs/run-ids/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Last-Event-ID", ids[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rest []json.RawMessage
	agui.ReadFrames(resp.Body, func(_ string, data []byte) error { rest = append(rest, append([]byte(nil), data...)); return nil })
	if len(rest) != len(evs)-3 {
		t.Fatalf("after id %s: %d events of %d", ids[2], len(rest), len(evs))
	}
	if ev, err := agui.Decode(rest[0]); err != nil || ev.EventType() != evs[3].EventType() {
		t.Errorf("resumed at %T, want %T", ev, evs[3])
	}
}
