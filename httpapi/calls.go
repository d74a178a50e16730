package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/broker"
)

// callBody is the body of POST /api/v1/tools/{name}/call.
type callBody struct {
	Input     json.RawMessage `json:"input"`
	SessionID string          `json:"sessionId,omitempty"`
	RunID     string          `json:"runId,omitempty"`
}

// callRoutes mounts the call path. Without a broker (a daemon wired without
// one) the routes are left out and answer NOT_FOUND.
func (s *Server) callRoutes() {
	if s.opts.Broker == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/tools/{name}/call", s.admin(s.callTool))
	s.mux.HandleFunc("GET /api/v1/invocations/{id}", s.admin(s.getInvocation))
}

// callTool translates a request into one broker call. A call refused before
// it was recorded answers with the plain error envelope; a recorded call
// that failed answers with the error's status and a body that is both the
// CallResponse and an error envelope (it carries "error"), so clients can
// read the invocation id either way.
func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	var body callBody
	if err := s.decode(w, r, &body, 0); err != nil {
		s.writeError(w, r, err)
		return
	}
	inv, err := s.opts.Broker.Call(r.Context(), broker.CallRequest{
		Tool:      r.PathValue("name"),
		Input:     body.Input,
		SessionID: body.SessionID,
		RunID:     body.RunID,
	})
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
	writeJSON(w, statusOf(resp.Error.Code), resp)
}

func (s *Server) getInvocation(w http.ResponseWriter, r *http.Request) {
	inv, err := s.opts.Broker.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}
