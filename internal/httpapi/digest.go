package httpapi

import (
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// maxContextBytes bounds a tab's context report: room for thousands of
// panels, which the workspace keeps to its bounds and counts.
const maxContextBytes = 2 << 20

// workspaceRoutes mounts the tabs' context reports and the digest.
func (s *Server) workspaceRoutes() {
	if s.opts.Workspace == nil {
		return
	}
	if s.opts.Sessions != nil {
		s.mux.HandleFunc("PUT /api/v1/sessions/{id}/context", s.sessionAuth(s.reportContext))
	}
	s.mux.HandleFunc("GET /api/v1/digest", s.getDigest)
}

type contextBody struct {
	Contexts []switchboard.WorkspaceContext `json:"contexts"`
}

// reportContext replaces the tab's contexts; 200 says what was kept.
func (s *Server) reportContext(w http.ResponseWriter, r *http.Request) {
	var body contextBody
	if err := s.decode(w, r, &body, maxContextBytes); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Contexts == nil {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, `the body must be {"contexts": [...]} (an empty array clears the tab's contexts)`))
		return
	}
	id := r.PathValue("id")
	user, err := s.sessionUser(r, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.opts.Workspace.Report(r.Context(), id, user, body.Contexts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// getDigest answers the caller's own digest: the admin's (every tab), an
// agent's (scoped by its token), or a tab's (its user's tabs).
func (s *Server) getDigest(w http.ResponseWriter, r *http.Request) {
	c, err := s.credential(r, "missing Authorization: Bearer token", authn.Admin, authn.Agent, authn.Session)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := switchboard.WithPrincipal(r.Context(), c.Principal)
	if c.Kind == authn.Agent { // its external session: the handoffs delivered to it
		var done func()
		ctx, done = s.acting(ctx)
		defer done()
	}
	if c.Kind == authn.Session {
		user, err := s.sessionUser(r, c.SessionID())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx = workspace.WithTab(ctx, c.SessionID(), user)
	}
	body, err := s.opts.Workspace.DigestJSON(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

// sessionUser is the user a tab was opened for ("" when none was named).
func (s *Server) sessionUser(r *http.Request, id string) (string, error) {
	if g := s.opts.Governance; g != nil && g.SessionUser != nil {
		return g.SessionUser(r.Context(), id)
	}
	return "", nil
}
