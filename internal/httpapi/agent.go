package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/aisdk"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/sse"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// Assistant routes. The admin token may use any chat and name any browser
// session; a browser tab uses its session token, which binds its runs to
// that tab and confines it to chats it owns.
const (
	// maxAgentBodyBytes bounds a run request (histories carry images).
	maxAgentBodyBytes = 16 << 20
	// runHeartbeat spaces keep-alive comments on idle run streams.
	runHeartbeat = 15 * time.Second
	// stopWait bounds how long POST /runs/{id}/cancel waits for the run
	// to end before it answers with the record as it is.
	stopWait = 2 * time.Second
)

func (s *Server) agentRoutes() {
	if s.opts.Agent == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/runs", s.agentAuth(s.startRun))
	s.mux.HandleFunc("GET /api/v1/runs", s.adminOrUser(s.listRuns))
	s.mux.HandleFunc("GET /api/v1/runs/{id}", s.agentAuth(s.getRun))
	s.mux.HandleFunc("POST /api/v1/runs/{id}/cancel", s.agentAuth(s.cancelRun))
	s.mux.HandleFunc("GET /api/v1/runs/{id}/events", s.agentAuth(s.runEvents))
	s.mux.HandleFunc("POST /api/v1/agui", s.agentAuth(s.aguiRun))
	s.mux.HandleFunc("GET /api/v1/agui/capabilities", s.agentAuth(func(w http.ResponseWriter, r *http.Request, _ agentCaller) {
		writeJSON(w, http.StatusOK, s.opts.Agent.AGUICapabilities())
	}))
	s.mux.HandleFunc("POST /api/v1/agent/chat", s.agentAuth(s.aiSDKChat))
	s.mux.HandleFunc("GET /api/v1/agent/capabilities", s.agentAuth(s.capabilities))
	s.mux.HandleFunc("GET /api/v1/agent/tools", s.agentAuth(s.assistantTools))
	// The operator's: which model runs use, or how to configure one.
	s.mux.HandleFunc("GET /api/v1/agent/models", s.admin(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.opts.Agent.Models(r.Context()))
	}))
	s.mux.HandleFunc("POST /api/v1/agent/chat/{sessionId}/followup", s.agentAuth(s.followUp))
	s.mux.HandleFunc("GET /api/v1/agent/chat/{sessionId}/messages", s.agentAuth(s.getMessages))
	s.mux.HandleFunc("GET /api/v1/agent/chat/{sessionId}/stream", s.agentAuth(s.chatStream))
	s.mux.HandleFunc("DELETE /api/v1/agent/chat/{sessionId}/stream", s.agentAuth(s.stopChatStream))
	s.mux.HandleFunc("PUT /api/v1/agent/chat/{sessionId}/messages", s.agentAuth(s.putMessages))
}

// agentCaller is who called an assistant route.
type agentCaller struct {
	// owner is "" for the admin (any chat), else the tab's identity.
	owner string
	// tab is the browser session of a session-token caller.
	tab string
}

type agentHandler func(w http.ResponseWriter, r *http.Request, c agentCaller)

// agentAuth accepts the admin token or a browser session token.
func (s *Server) agentAuth(h agentHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token (the admin token or a browser session token)", authn.Admin, authn.Session)
		if err != nil {
			if c.Kind == authn.Agent && c.Principal.ID != "" { // a valid agent token: FORBIDDEN here, as on admin routes
				err = switchboard.Errorf(switchboard.CodeForbidden, "%s %s is the in-app assistant's, for the user's tabs; %s's agent token cannot use it (agents call tools over /mcp or /api/v1/tools)", r.Method, r.URL.Path, c.Principal)
			} else if c.Kind == authn.User && c.Principal.ID != "" {
				err = notAdmin(r, c, err)
			}
			s.writeError(w, r, err)
			return
		}
		ctx := switchboard.WithPrincipal(r.Context(), c.Principal)
		if c.Kind == authn.Admin {
			h(w, r.WithContext(ctx), agentCaller{})
			return
		}
		sid := c.SessionID()
		h(w, r.WithContext(ctx), agentCaller{owner: "session:" + sid, tab: sid})
	}
}

// browserSession picks the run's tab: a tab's own session, or the one the
// admin names. A tab may not act in another tab.
func (c agentCaller) browserSession(named string) (string, error) {
	if c.tab == "" {
		return named, nil
	}
	if named != "" && named != c.tab {
		return "", switchboard.Errorf(switchboard.CodeForbidden, "a session token can run the assistant only in its own tab")
	}
	return c.tab, nil
}

// resumeAsUser makes a tab's resume (AG-UI resume, AI SDK approval
// responses) decide its approvals as the tab's user, as the approvals
// routes do: only a user decides, and a tab is its user's own. Which
// interrupts it may answer — its own chat's, bound to their calls — the
// runtime checks (planResume).
func (s *Server) resumeAsUser(r *http.Request, c agentCaller, resume int) (*http.Request, error) {
	if c.tab == "" || resume == 0 {
		return r, nil
	}
	p, err := s.tabUser(r.Context(), c.tab)
	if err != nil {
		return r, err
	}
	return r.WithContext(switchboard.WithPrincipal(r.Context(), p)), nil
}

// run finds a run the caller may see: a tab sees the runs in its tab and
// those of chats it owns.
func (s *Server) run(ctx context.Context, id string, c agentCaller) (*agent.Run, error) {
	run, err := s.opts.Agent.Get(id)
	if err != nil {
		return nil, err
	}
	if c.owner != "" && run.SessionID() != c.tab {
		if err := s.opts.Agent.CheckOwner(ctx, run.ThreadID(), c.owner); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeNotFound, "no run %s", id)
		}
	}
	return run, nil
}

// storedRun finds a run this process does not hold in the store (another
// replica's, or one this process has forgotten), with the visibility of
// run: a tab sees the runs in its tab, and those of chats it owns that it
// or the admin started (a chat's owner may be known only to the replica
// that ran it, so the run's own starter is checked too).
func (s *Server) storedRun(ctx context.Context, id string, c agentCaller) (switchboard.RunRecord, error) {
	rec, err := s.opts.Agent.Stored(ctx, id)
	if err != nil || c.owner == "" || rec.SessionID == c.tab {
		return rec, err
	}
	if rec.Owner != "" && rec.Owner != c.owner {
		return rec, switchboard.Errorf(switchboard.CodeNotFound, "no run %s", id)
	}
	if err := s.opts.Agent.CheckOwner(ctx, rec.ThreadID, c.owner); err != nil {
		return rec, switchboard.Errorf(switchboard.CodeNotFound, "no run %s", id)
	}
	return rec, nil
}

// startRunBody is POST /runs.
type startRunBody struct {
	ThreadID  string          `json:"threadId,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Input     string          `json:"input,omitempty"`
	Messages  []agui.Message  `json:"messages,omitempty"`
	Model     string          `json:"model,omitempty"`
	MaxSteps  int             `json:"maxSteps,omitempty"`
	Context   []agui.Context  `json:"context,omitempty"`
	State     json.RawMessage `json:"state,omitempty"`
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request, c agentCaller) {
	var b startRunBody
	if err := s.decode(w, r, &b, maxAgentBodyBytes); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(b.Input) == "" && len(b.Messages) == 0 {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "a run needs input (the user's message) or messages"))
		return
	}
	tab, err := c.browserSession(b.SessionID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := agent.StartRequest{ThreadID: b.ThreadID, SessionID: tab, Input: b.Input, Model: b.Model,
		MaxSteps: b.MaxSteps, Context: b.Context, State: b.State, Owner: c.owner, Harness: agent.HarnessLoop}
	if b.Messages != nil {
		req.Messages = b.Messages
	}
	run, err := s.opts.Agent.Start(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/runs/"+run.ID())
	writeJSON(w, http.StatusCreated, run.Info())
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, c agentCaller) {
	run, err := s.run(r.Context(), r.PathValue("id"), c)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		rec, err := s.storedRun(r.Context(), r.PathValue("id"), c)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, rec.RunInfo)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, run.Info())
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, c agentCaller) {
	run, err := s.run(r.Context(), r.PathValue("id"), c)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		// Another replica's run: that replica is asked to stop it.
		rec, err := s.storedRun(r.Context(), r.PathValue("id"), c)
		if err == nil {
			rec, err = s.opts.Agent.CancelStored(r.Context(), rec, stopWait)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, rec.RunInfo)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.stopRun(w, r, run)
}

// stopRun stops run (an explicit stop: calls it left waiting for approval
// are cancelled too) and answers with its record.
func (s *Server) stopRun(w http.ResponseWriter, r *http.Request, run *agent.Run) {
	run.Stop()
	select { // usually ends at once; answer with the final record when it does
	case <-run.Done():
	case <-time.After(stopWait):
	case <-r.Context().Done():
	}
	writeJSON(w, http.StatusOK, run.Info())
}

// runEvents streams a run's AG-UI events from the start, or after the
// Last-Event-ID the client has (each frame's id is its position).
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, c agentCaller) {
	var log eventLog
	run, err := s.run(r.Context(), r.PathValue("id"), c)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		// Another replica's run: its events as they are stored, with the
		// same positions, so Last-Event-ID resumes on any replica.
		_, err = s.storedRun(r.Context(), r.PathValue("id"), c)
	} else if err == nil {
		log = run
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	from := 0
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "Last-Event-ID %q is not an event position of this run", last))
			return
		}
		from = n + 1
	}
	if log == nil {
		log = s.opts.Agent.Follow(r.Context(), r.PathValue("id"), from)
	}
	s.pump(r, sse.Start(w, streamWriteTimeout), log, from, aguiFrame, nil)
}

// eventLog is a run's event log: a run this process holds (*agent.Run) or
// a stored one followed from the store (*agent.Follower).
type eventLog interface {
	Events(from int) (recs []agent.Record, more <-chan struct{}, complete bool)
}

// aguiRun is the AG-UI endpoint: RunAgentInput in, the run's events out.
// The run is cancelled when the client goes away (AG-UI's abortRun) unless
// forwardedProps.detach is true; a detached run is followed again with GET
// /runs/{id}/events and Last-Event-ID (frames carry their position as id).
func (s *Server) aguiRun(w http.ResponseWriter, r *http.Request, c agentCaller) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := strictjson.CaseExact(body, agui.RunAgentInput{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := agui.ParseRunAgentInput(body)
	if err != nil {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "%v", err))
		return
	}
	var props struct {
		SessionID string `json:"sessionId"`
		Model     string `json:"model"`
		Detach    bool   `json:"detach"`
	}
	if len(in.ForwardedProps) > 0 {
		_ = json.Unmarshal(in.ForwardedProps, &props) // unknown shapes are the client's business
	}
	if props.SessionID == "" {
		props.SessionID = r.URL.Query().Get("session")
	}
	tab, err := c.browserSession(props.SessionID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if r, err = s.resumeAsUser(r, c, len(in.Resume)); err != nil {
		s.writeError(w, r, err)
		return
	}
	run, err := s.opts.Agent.Start(r.Context(), agent.StartRequest{
		RunID: in.RunID, ThreadID: in.ThreadID, SessionID: tab, Model: props.Model,
		Messages: in.Messages, Tools: in.Tools, Context: in.Context, State: in.State, Resume: in.Resume,
		Owner: c.owner, Harness: agent.HarnessLoop, Interrupts: true,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.pump(r, sse.Start(w, streamWriteTimeout), run, 0, aguiFrame, nil)
	if !props.Detach {
		run.Cancel() // no-op once the run has ended
	}
}

// aiSDKChat serves useChat's DefaultChatTransport: the same run, encoded as
// the AI SDK UI Message Stream. The client owns the history.
func (s *Server) aiSDKChat(w http.ResponseWriter, r *http.Request, c agentCaller) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := strictjson.CaseExact(body, aisdk.ChatRequest{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := aisdk.ParseChatRequest(body)
	if err != nil {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "%v", err))
		return
	}
	var extra struct {
		SessionID string `json:"sessionId"`
		Model     string `json:"model"`
	}
	for k, v := range req.Extra {
		switch k {
		case "sessionId":
			_ = json.Unmarshal(v, &extra.SessionID)
		case "model":
			_ = json.Unmarshal(v, &extra.Model)
		}
	}
	if extra.SessionID == "" {
		extra.SessionID = r.URL.Query().Get("session")
	}
	tab, err := c.browserSession(extra.SessionID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	msgs := req.Messages
	if req.Trigger == "regenerate-message" && len(msgs) > 0 && msgs[len(msgs)-1].Role == agui.RoleAssistant {
		msgs = msgs[:len(msgs)-1] // the answer being regenerated
	}
	conv := aisdk.FromUIMessages(msgs)
	if conv == nil {
		conv = []agui.Message{}
	}
	resume := aisdk.ApprovalResponses(msgs)
	if r, err = s.resumeAsUser(r, c, len(resume)); err != nil {
		s.writeError(w, r, err)
		return
	}
	run, err := s.opts.Agent.Start(r.Context(), agent.StartRequest{
		ThreadID: req.ID, SessionID: tab, Model: extra.Model, Messages: conv, Owner: c.owner, Harness: agent.HarnessAISDK,
		Resume: resume, Interrupts: true,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A client that goes away (a reload, or useChat's stop(), which is only
	// an abort) does not end the run: it reattaches with GET
	// .../{id}/stream; DELETE .../{id}/stream stops it.
	s.serveUIStream(w, r, run, aisdk.ResponseMessageID(req.MessageID, msgs))
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request, c agentCaller) {
	writeJSON(w, http.StatusOK, s.opts.Agent.CapabilitiesFor(r.Context(), r.URL.Query().Get("session"), c.owner))
}

// assistantTools is the catalog as the assistant sees it in the caller's
// tab (a tab cannot list GET /tools): what a chat's empty state offers when
// the user asks "what can you do?". Descriptions only; calls still go
// through the run and the broker.
func (s *Server) assistantTools(w http.ResponseWriter, r *http.Request, c agentCaller) {
	tab, err := c.browserSession(r.URL.Query().Get("session"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var live *registry.Live
	if tab != "" {
		tools, err := s.liveTools(r, tab)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		live = registry.NewLive(tools)
	}
	ctx := switchboard.WithPrincipal(r.Context(), switchboard.Assistant())
	tools, err := s.reg.ListWith(ctx, "", live)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: redactAll(tools)})
}

func (s *Server) followUp(w http.ResponseWriter, r *http.Request, c agentCaller) {
	var f switchboard.FollowUp
	if err := s.decode(w, r, &f, 1<<20); err != nil {
		s.writeError(w, r, err)
		return
	}
	tab, _ := c.browserSession("")
	res, err := s.opts.Agent.FollowUp(r.Context(), r.PathValue("sessionId"), f, agent.StartRequest{SessionID: tab, Owner: c.owner})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusAccepted
	if res.Status == "started" {
		status = http.StatusCreated
	}
	writeJSON(w, status, res)
}

func (s *Server) getMessages(w http.ResponseWriter, r *http.Request, c agentCaller) {
	h, err := s.opts.Agent.History(r.Context(), r.PathValue("sessionId"), c.owner)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// putMessages replaces the history: a JSON array of messages, or
// {"messages": [...]}.
func (s *Server) putMessages(w http.ResponseWriter, r *http.Request, c agentCaller) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var wrapped struct {
		Messages json.RawMessage `json:"messages"`
	}
	if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, "{") {
		if err := json.Unmarshal(body, &wrapped); err != nil || wrapped.Messages == nil {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, `send a JSON array of messages or {"messages": [...]}`))
			return
		}
		body = wrapped.Messages
	}
	h, err := s.opts.Agent.PutHistory(r.Context(), r.PathValue("sessionId"), c.owner, body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// readBody reads a JSON request body of at most maxAgentBodyBytes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "Content-Type must be application/json, not %q", ct)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAgentBodyBytes))
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, switchboard.Errorf(switchboard.CodePayloadTooLarge, "request body is larger than %d bytes", maxAgentBodyBytes)
		}
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "read request body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "request body is empty; send a JSON document")
	}
	// The protocol parsers (AG-UI, AI SDK) tolerate members they do not
	// know, as those protocols require; the document itself must still be
	// strict JSON.
	if err := strictjson.Envelope(b, ""); err != nil {
		return nil, err
	}
	return b, nil
}

// pump writes a run's records from seq on, encoded by frame, until the run
// is complete (then tail, if set, closes the stream) or the client leaves.
// Each write has a deadline (the Writer's), so a reader that stops reading
// is dropped rather than holding a goroutine; the run itself never waits on
// readers.
func (s *Server) pump(r *http.Request, sw *sse.Writer, run eventLog, seq int,
	frame func([]byte, agent.Record) []byte, tail func([]byte) []byte) {
	hb := time.NewTicker(runHeartbeat)
	defer hb.Stop()
	var buf []byte
	for {
		recs, more, complete := run.Events(seq)
		buf = buf[:0]
		for _, rec := range recs {
			buf = frame(buf, rec)
		}
		seq += len(recs)
		if complete && len(recs) == 0 {
			if tail != nil {
				sw.Append(tail(buf))
			}
			_ = sw.Flush()
			return
		}
		sw.Append(buf)
		if sw.Flush() != nil {
			return
		}
		if len(recs) > 0 {
			continue // drain before waiting
		}
		select {
		case <-more:
		case <-hb.C:
			sw.Comment(sse.Heartbeat)
		case <-r.Context().Done():
			return
		}
	}
}
