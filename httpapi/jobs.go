package httpapi

import (
	"net/http"

	"github.com/switchboardhq/switchboard"
)

// getJob reports a job: status, progress 0..1, message, result or error.
// An agent sees only the jobs it started.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.ownJob(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// cancelJob cancels a running job (the user, or the agent that started it).
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	if _, err := s.ownJob(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	j, err := s.opts.Governance.Jobs.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) ownJob(r *http.Request) (switchboard.Job, error) {
	id := r.PathValue("id")
	j, err := s.opts.Governance.Jobs.Get(r.Context(), id)
	if err != nil {
		return j, err
	}
	if p := principal(r); p.Kind == switchboard.PrincipalAgent && j.Caller != p.String() {
		return switchboard.Job{}, switchboard.Errorf(switchboard.CodeNotFound, "no job %q", id)
	}
	return j, nil
}
