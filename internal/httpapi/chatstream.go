package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/aisdk"
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
		st = &chatStream{messageID: defaultMessageID(run.ID())}
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
	run, rec, ok := s.activeChatRun(w, r, c)
	if !ok {
		return
	}
	if run == nil {
		s.serveStoredUIStream(w, r, rec)
		return
	}
	s.serveUIStream(w, r, run, "")
}

// serveStoredUIStream is serveUIStream for a run another replica holds:
// its stored events from the first, followed as they are stored
// (agent.Follow), through the same translation. The message id is the
// run's default one (a regenerate's messageId is the holding replica's
// memory). While the client reads, the holding replica is told so every
// third of the grace period (Options.ChatReading), so the run is not
// cancelled as unread there.
func (s *Server) serveStoredUIStream(w http.ResponseWriter, r *http.Request, rec switchboard.RunRecord) {
	if s.opts.ChatReading != nil {
		s.opts.ChatReading(rec.RunID)
		tick := time.NewTicker(s.opts.ChatReattachGrace / 3)
		defer tick.Stop()
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case <-tick.C:
					s.opts.ChatReading(rec.RunID)
				case <-done:
					return
				}
			}
		}()
	}
	aisdk.SetUIStreamHeaders(w.Header())
	ui := aisdk.NewUIStream(defaultMessageID(rec.RunID))
	log := s.opts.Agent.Follow(r.Context(), rec.RunID, 0)
	s.pump(r, sse.Start(w, streamWriteTimeout), log, 0, func(buf []byte, rec agent.Record) []byte {
		if rec.Event == nil {
			return buf // a type a newer replica added: the local path never has one
		}
		for _, ch := range ui.Translate(rec.Event) {
			buf, _ = aisdk.AppendChunk(buf, ch)
		}
		return buf
	}, aisdk.AppendDone)
}

// ChatRead is told that a client reads the AI SDK stream of run id on
// another replica (its Options.ChatReading, relayed by the daemon): if the
// run is this process's and has no reader here, its grace period starts
// again.
func (s *Server) ChatRead(id string) {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	if st := s.streams.m[id]; st != nil && st.orphan != nil {
		st.orphan.Reset(s.opts.ChatReattachGrace)
	}
}

func defaultMessageID(runID string) string { return "msg_" + runID }

// stopChatStream is the explicit stop a resumable chat needs (a client's
// abort is only a disconnect): it stops the chat's run in progress and
// answers with its record, or 204 when there is none.
func (s *Server) stopChatStream(w http.ResponseWriter, r *http.Request, c agentCaller) {
	run, rec, ok := s.activeChatRun(w, r, c)
	if !ok {
		return
	}
	if run == nil { // another replica's: that replica is asked to stop it
		rec, err := s.opts.Agent.CancelStored(r.Context(), rec, stopWait)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, rec.RunInfo)
		return
	}
	s.stopRun(w, r, run)
}

// activeChatRun finds the run in progress of the path's chat that the
// caller may see: this process's, or else (run nil) the stored record of
// one another replica holds; it answers 204 (or the error) itself when
// there is none.
func (s *Server) activeChatRun(w http.ResponseWriter, r *http.Request, c agentCaller) (*agent.Run, switchboard.RunRecord, bool) {
	var (
		run *agent.Run
		rec switchboard.RunRecord
		err error
	)
	if active := s.opts.Agent.ActiveRun(r.PathValue("sessionId")); active != nil {
		run, err = s.run(r.Context(), active.ID(), c)
	} else {
		var ok bool
		rec, ok, err = s.opts.Agent.StoredActive(r.Context(), r.PathValue("sessionId"))
		if err == nil && !ok {
			w.WriteHeader(http.StatusNoContent)
			return nil, rec, false
		}
		if err == nil {
			rec, err = s.storedRun(r.Context(), rec.RunID, c)
		}
	}
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		// Another user's chat: answered as one with no run, so chat ids
		// cannot be probed.
		w.WriteHeader(http.StatusNoContent)
		return nil, rec, false
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, rec, false
	}
	return run, rec, true
}

// aguiFrame encodes one run record as an AG-UI SSE frame whose id is its
// position, so any reader (POST /agui, GET /runs/{id}/events) can follow
// the run again from there with Last-Event-ID.
func aguiFrame(buf []byte, rec agent.Record) []byte {
	return agui.AppendFrame(buf, strconv.Itoa(rec.Seq), rec.JSON)
}
