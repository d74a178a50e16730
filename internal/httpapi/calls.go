package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// callBody is the body of POST /api/v1/tools/{name}/call.
type callBody struct {
	Input     json.RawMessage `json:"input"`
	SessionID string          `json:"sessionId,omitempty"`
	RunID     string          `json:"runId,omitempty"`
	// Async answers 202 with the pending invocation as soon as it is
	// recorded (also ?wait=false); poll GET /invocations/{id}.
	Async bool `json:"async,omitempty"`
}

// callRoutes mounts the call path. Without a broker (a daemon wired without
// one) the routes are left out and answer NOT_FOUND. Agent tokens may call
// (the broker checks their scope) and read their own invocations.
func (s *Server) callRoutes() {
	if s.opts.Broker == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/tools/{name}/call", s.caller(s.callTool))
	s.mux.HandleFunc("GET /api/v1/invocations/{id}", s.caller(s.getInvocation))
	s.mux.HandleFunc("GET /api/v1/invocations", s.caller(s.listInvocations))
}

// callTool translates a request into one broker call. A call refused before
// it was recorded answers with the plain error envelope; a recorded call
// that failed answers with the error's status and a body that is both the
// CallResponse and an error envelope (it carries "error"), so clients can
// read the invocation id either way. An Idempotency-Key header makes a
// retry replay the first call's answer.
func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	var body callBody
	if err := s.decode(w, r, &body, 0, "/input"); err != nil {
		s.writeError(w, r, wrapHint(err))
		return
	}
	req := broker.CallRequest{
		Tool:           r.PathValue("name"),
		Input:          body.Input,
		SessionID:      body.SessionID,
		RunID:          body.RunID,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
	}
	if p, ok := switchboard.PrincipalFrom(r.Context()); ok {
		req.Caller = &p // who the route authenticated
	}
	var ended func(switchboard.Invocation)
	if id := r.Header.Get(TaskHeader); id != "" {
		// A call an agent makes for a task assigned to it: the task
		// service admits it (budget, deadline) and gives the principal
		// that carries the task's envelope into the broker's check.
		if s.opts.Tasks == nil || req.Caller == nil {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeNotFound, "no task %q", id))
			return
		}
		p, call, err := s.opts.Tasks.Enter(r.Context(), *req.Caller, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		req.Caller, ended = &p, call.Done
	}
	s.answerCall(w, r, wantsAsync(r, body.Async), req, ended)
}

// TaskHeader names the delegated task a call is made for (docs/tasks.md,
// "Handing a task to another agent").
const TaskHeader = "Switchboard-Task"

// wrapHint turns the unknown-field error of a call body into how to wrap
// the input: the usual cause is a tool's fields sent at top level, as
// {"projectId": "p1"} instead of {"input": {"projectId": "p1"}}.
func wrapHint(err error) error {
	e, ok := err.(*switchboard.Error)
	if !ok || e.Code != switchboard.CodeInvalidInput {
		return err
	}
	d, _ := e.Details.(map[string]any)
	field, _ := d["field"].(string)
	ptr, _ := d["pointer"].(string)
	if field == "" || ptr != "/"+field {
		return err
	}
	for _, known := range []string{"input", "sessionId", "runId", "async"} {
		if strings.EqualFold(field, known) {
			return switchboard.Errorf(switchboard.CodeInvalidInput,
				`request body has an unknown field %q: names are case-sensitive; did you mean %q?`, field, known).WithDetails(d)
		}
	}
	return switchboard.Errorf(switchboard.CodeInvalidInput,
		`request body has an unknown field %q: a tool's fields go inside "input", as in {"input": {%q: ...}}; besides input, a call body takes only sessionId, runId and async`,
		field, field).WithDetails(d)
}

func wantsAsync(r *http.Request, async bool) bool {
	return async || r.URL.Query().Get("wait") == "false"
}

// answerCall runs req and answers with its outcome. Async, the broker
// answers as soon as the call is recorded (Submit) and 202 carries the
// invocation — for a call waiting for approval, status awaiting_approval;
// the call runs on after the request, under the same principal and, for
// an agent, within its work (an interrupt ends it). ended, if set,
// hears the call's final record (a refused call's empty one) once.
func (s *Server) answerCall(w http.ResponseWriter, r *http.Request, async bool, req broker.CallRequest, ended func(switchboard.Invocation)) {
	if ended == nil {
		ended = func(switchboard.Invocation) {}
	}
	if !async {
		ctx, done := s.acting(r.Context())
		defer done()
		req.AgentSession, _ = switchboard.AgentSessionFrom(ctx)
		inv, err := s.opts.Broker.Call(ctx, req)
		ended(inv)
		s.writeCall(w, r, inv, err)
		return
	}
	ctx, done := s.acting(context.WithoutCancel(r.Context()))
	req.AgentSession, _ = switchboard.AgentSessionFrom(ctx)
	inv, err := s.opts.Broker.Submit(ctx, req)
	if inv.ID == "" || inv.Status.Terminal() {
		// Refused, a replay, or a fast read recorded once it finished
		// (broker RecordAfter): its outcome is the answer, as for a sync
		// call.
		done()
		ended(inv)
		s.writeCall(w, r, inv, err)
		return
	}
	go func() {
		defer done() // the agent's work lasts as long as its call
		// An interrupt cancels ctx (the call's, through Work): the work
		// ends when the call has recorded its end, not when ctx does, so
		// the interrupt's answer is definite.
		end, err := s.opts.Broker.Await(context.WithoutCancel(ctx), inv.ID, broker.Terminal)
		if err != nil || end.ID == "" {
			end = inv
		}
		ended(end)
	}()
	w.Header().Set("Location", "/api/v1/invocations/"+inv.ID)
	writeJSON(w, http.StatusAccepted, switchboard.CallResponse{InvocationID: inv.ID, Status: inv.Status})
}

// writeCall renders a call's outcome.
func (s *Server) writeCall(w http.ResponseWriter, r *http.Request, inv switchboard.Invocation, err error) {
	if inv.ID == "" {
		if err == nil {
			err = switchboard.Errorf(switchboard.CodeInternal, "the broker returned no invocation")
		}
		s.writeError(w, r, err)
		return
	}
	resp := switchboard.CallResponse{InvocationID: inv.ID, Status: inv.Status, Result: inv.Result, Error: inv.Error}
	if err == nil {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	if resp.Error == nil {
		resp.Error = switchboard.AsError(err)
	}
	setRetryAfter(w, resp.Error)
	writeJSON(w, statusOf(resp.Error.Code), resp)
}

// getInvocation returns one record the caller may read
// (workspace.SeesRecord).
func (s *Server) getInvocation(w http.ResponseWriter, r *http.Request) {
	inv, err := s.opts.Broker.Get(r.Context(), r.PathValue("id"))
	if err == nil && !workspace.SeesRecord(workspace.ViewerOf(principal(r)), inv.Caller, inv.User) {
		err = switchboard.Errorf(switchboard.CodeNotFound, "no invocation %q", r.PathValue("id")) // as the store answers an unknown id
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}
