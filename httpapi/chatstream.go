package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agent"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/aisdk"
	"github.com/switchboardhq/switchboard/internal/sse"
)

// DefaultChatReattachGrace is how long an AI SDK chat's run goes on with no
// client reading it before it is cancelled: long enough for a reload or a
// network change to reattach, short enough that a closed tab stops paying
// for an answer nobody will see (the AI SDK client owns the history, so an
// answer no client receives is lost).
const DefaultChatReattachGrace = time.Minute

// chatStreams tracks the AI SDK streams of runs in progress: the message id
// the client's stream answers (a reattaching client must get the same one)
// and how many clients read it. One home for "may this run outlive its
// reader": a run is cancelled only by an explicit stop, or when it has had
// no reader for the grace period.
type chatStreams struct {
	mu sync.Mutex
	m  map[string]*chatStream // run id →
}

type chatStream struct {
	messageID string
	readers   int
	orphan    *time.Timer
}

// attach counts a reader of run; messageID is set by the request that
// started the run and read back ("" keeps the known one) by a reattach.
func (cs *chatStreams) attach(run *agent.Run, messageID string) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]*chatStream{}
	}
	st := cs.m[run.ID()]
	if st == nil {
		st = &chatStream{messageID: "msg_" + run.ID()}
		cs.m[run.ID()] = st
		go func() { // forget the run once it has ended
			<-run.Done()
			cs.mu.Lock()
			if cs.m[run.ID()] == st {
				delete(cs.m, run.ID())
			}
			cs.mu.Unlock()
		}()
	}
	if messageID != "" {
		st.messageID = messageID
	}
	st.readers++
	if st.orphan != nil {
		st.orphan.Stop()
		st.orphan = nil
	}
	return st.messageID
}

// detach uncounts a reader; the last one to leave a run still in progress
// starts the grace period after which the run is cancelled.
func (cs *chatStreams) detach(run *agent.Run, grace time.Duration) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	st := cs.m[run.ID()]
	if st == nil {
		return
	}
	if st.readers--; st.readers > 0 {
		return
	}
	select {
	case <-run.Done():
		return
	default:
	}
	st.orphan = time.AfterFunc(grace, func() {
		cs.mu.Lock()
		idle := st.readers == 0
		cs.mu.Unlock()
		if idle {
			run.Cancel() // no-op once ended
		}
	})
}

// serveUIStream writes run as the AI SDK UI Message Stream from its first
// event, counted as one reader for as long as the client reads.
func (s *Server) serveUIStream(w http.ResponseWriter, r *http.Request, run *agent.Run, messageID string) {
	messageID = s.streams.attach(run, messageID)
	defer s.streams.detach(run, s.opts.ChatReattachGrace)
	aisdk.SetUIStreamHeaders(w.Header())
	ui := aisdk.NewUIStream(messageID)
	s.pump(r, sse.Start(w, streamWriteTimeout), run, 0, func(buf []byte, rec agent.Record) []byte {
		for _, ch := range ui.Translate(rec.Event) {
			buf, _ = aisdk.AppendChunk(buf, ch)
		}
		return buf
	}, aisdk.AppendDone)
}

// chatStream is the AI SDK's resumable-stream route (useChat's `resume:
// true` GETs {api}/{chatId}/stream): the chat's run in progress, replayed
// from the start and followed; 204 when the chat has none.
func (s *Server) chatStream(w http.ResponseWriter, r *http.Request, c agentCaller) {
	run, ok := s.activeChatRun(w, r, c)
	if !ok {
		return
	}
	s.serveUIStream(w, r, run, "")
}

// stopChatStream is the explicit stop a resumable chat needs (a client's
// abort is only a disconnect): it stops the chat's run in progress and
// answers with its record, or 204 when there is none.
func (s *Server) stopChatStream(w http.ResponseWriter, r *http.Request, c agentCaller) {
	run, ok := s.activeChatRun(w, r, c)
	if !ok {
		return
	}
	s.stopRun(w, r, run)
}

// activeChatRun finds the run in progress of the path's chat that the
// caller may see; it answers 204 (or the error) itself when there is none.
func (s *Server) activeChatRun(w http.ResponseWriter, r *http.Request, c agentCaller) (*agent.Run, bool) {
	active := s.opts.Agent.ActiveRun(r.PathValue("sessionId"))
	if active == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil, false
	}
	run, err := s.run(r.Context(), active.ID(), c)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		// Another user's chat: answered as one with no run, so chat ids
		// cannot be probed.
		w.WriteHeader(http.StatusNoContent)
		return nil, false
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	return run, true
}

// aguiFrame encodes one run record as an AG-UI SSE frame whose id is its
// position, so any reader (POST /agui, GET /runs/{id}/events) can follow
// the run again from there with Last-Event-ID.
func aguiFrame(buf []byte, rec agent.Record) []byte {
	return agui.AppendFrame(buf, strconv.Itoa(rec.Seq), rec.JSON)
}
