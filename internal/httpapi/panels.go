package httpapi

import (
	"context"
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
)

// Panel routes: the renderer in a tab uses its session token to list the
// panels open in it, open a host panel the user asked for, report the
// user's edits, run the action the user clicked and close a panel. Agents
// reach panels through the panel tools (POST /tools/panel.*/call).
const maxPanelBodyBytes = 1 << 20

func (s *Server) panelRoutes() {
	if s.opts.Panels == nil || s.opts.Sessions == nil {
		return
	}
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/panels", s.sessionAuth(s.listPanels))
	s.mux.HandleFunc("POST /api/v1/sessions/{id}/panels", s.sessionAuth(s.openPanel))
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/panels/{instanceId}", s.sessionOrAdmin(s.getPanel))
	s.mux.HandleFunc("DELETE /api/v1/sessions/{id}/panels/{instanceId}", s.sessionAuth(s.closePanel))
	s.mux.HandleFunc("PUT /api/v1/sessions/{id}/panels/{instanceId}/values", s.sessionAuth(s.editPanel))
	s.mux.HandleFunc("POST /api/v1/sessions/{id}/panels/{instanceId}/actions/{actionId}", s.sessionAuth(s.panelAction))
}

// listPanels attaches the tab as a panel host and answers its instances.
func (s *Server) listPanels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"instances": s.opts.Panels.Attach(r.Context(), r.PathValue("id"))})
}

func (s *Server) openPanel(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Panel  string         `json:"panel"`
		Params map[string]any `json:"params,omitempty"`
	}
	if err := s.decode(w, r, &body, maxPanelBodyBytes); err != nil {
		s.writeError(w, r, err)
		return
	}
	sn, err := s.opts.Panels.Open(r.Context(), panel.OpenRequest{Panel: body.Panel, Params: body.Params})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sn)
}

func (s *Server) getPanel(w http.ResponseWriter, r *http.Request) {
	sn, err := s.opts.Panels.Snapshot(r.Context(), r.PathValue("instanceId"))
	if err == nil && sn.SessionID != r.PathValue("id") {
		err = switchboard.Errorf(switchboard.CodeNotFound, "no open panel instance %q in session %s", r.PathValue("instanceId"), r.PathValue("id"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sn)
}

func (s *Server) closePanel(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Panels.CloseInstance(r.Context(), r.PathValue("instanceId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// editPanel records the user's edits (path → value), which panel.fill then
// leaves alone.
func (s *Server) editPanel(w http.ResponseWriter, r *http.Request) {
	var body panel.EditRequest
	if err := s.decode(w, r, &body, maxPanelBodyBytes); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.opts.Panels.Edit(r.Context(), r.PathValue("instanceId"), body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// panelAction runs the action the user clicked, through the broker (see
// panel.Service.UserAction for whose principal it runs as). It waits up to
// panel.DefaultActionWait; an action still waiting for approval then
// answers 202 with status pending_approval and its outcome reaches the tab
// as a panel.update.
func (s *Server) panelAction(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > 0 {
		var body struct{}
		if err := s.decode(w, r, &body, 64<<10); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), panel.DefaultActionWait)
	defer cancel()
	res, err := s.opts.Panels.UserAction(ctx, r.PathValue("instanceId"), r.PathValue("actionId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Status == panel.StatusPendingApproval {
		status = http.StatusAccepted
	}
	writeJSON(w, status, res)
}
