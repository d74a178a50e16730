package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/switchboardhq/switchboard"
)

// sendStreaming creates the task a message asks for and streams it until
// it ends (SendStreamingMessage).
func (s *Server) sendStreaming(w http.ResponseWriter, r *http.Request, who switchboard.Principal, req rpcRequest) {
	var p sendParams
	if err := params(req, &p); err != nil {
		writeRPC(w, http.StatusOK, req.ID, err)
		return
	}
	t, err := s.create(r.Context(), who, p)
	if err != nil {
		writeRPC(w, http.StatusOK, req.ID, err)
		return
	}
	s.stream(w, r, who, req.ID, t)
}

// subscribe streams an existing task until it ends (SubscribeToTask); a
// task that has already ended is UnsupportedOperation, as the protocol
// says.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, who switchboard.Principal, req rpcRequest) {
	var p idParams
	if err := params(req, &p); err != nil {
		writeRPC(w, http.StatusOK, req.ID, err)
		return
	}
	t, err := s.opts.Tasks.Get(r.Context(), who, p.ID)
	if err != nil {
		writeRPC(w, http.StatusOK, req.ID, rpcErr(err))
		return
	}
	if t.Status.Terminal() {
		writeRPC(w, http.StatusOK, req.ID, &rpcError{Code: codeUnsupported, Message: "task " + t.ID + " is already " + string(t.Status) + "; read it with GetTask"})
		return
	}
	s.stream(w, r, who, req.ID, t)
}

// stream sends the task, then a status update at each change of its
// state and an artifact update for each new artifact, and ends after the
// task does. Each event is a JSON-RPC response to the request (its id) in
// an SSE frame.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, who switchboard.Principal, id json.RawMessage, t switchboard.Task) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeRPC(w, http.StatusOK, id, &rpcError{Code: codeInternal, Message: "this connection cannot stream"})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(ev StreamResponse) bool {
		b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Result: ev})
		if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	wire := toWire(t)
	if !send(StreamResponse{Task: &wire}) {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	lastState, lastMsg, artifacts := wire.Status.State, statusText(wire.Status), len(t.Artifacts)
	release := func() {}
	defer func() { release() }()
	for !t.Status.Terminal() {
		release() // the last round's channel
		var changed <-chan struct{}
		changed, release = s.opts.Tasks.Changed(t.ID)
		cur, err := s.opts.Tasks.Get(context.WithoutCancel(ctx), who, t.ID)
		if err != nil {
			s.log.WarnContext(ctx, "a2a stream: read task", "task", t.ID, "err", err)
			return
		}
		t = cur
		tw := toWire(t)
		for ; artifacts < len(tw.Artifacts); artifacts++ {
			if !send(StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: tw.ContextID, Artifact: tw.Artifacts[artifacts], LastChunk: true}}) {
				return
			}
		}
		if tw.Status.State != lastState || statusText(tw.Status) != lastMsg {
			lastState, lastMsg = tw.Status.State, statusText(tw.Status)
			if !send(StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: t.ID, ContextID: tw.ContextID, Status: tw.Status}}) {
				return
			}
		}
		if t.Status.Terminal() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

func statusText(st TaskStatus) string {
	if st.Message == nil || len(st.Message.Parts) == 0 || st.Message.Parts[0].Text == nil {
		return ""
	}
	return *st.Message.Parts[0].Text
}
