package httpapi

import (
	"mime"
	"net/http"
	"strconv"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// getJob reports a job: status, progress 0..1, message, result or error,
// to whoever may read it (workspace.SeesRecord).
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.ownJob(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// jobFile serves the file a finished job produced (document.export's PDF
// or DOCX) as a download: its own Content-Type, an attachment
// Content-Disposition with its name, never sniffed or cached.
func (s *Server) jobFile(w http.ResponseWriter, r *http.Request) {
	j, err := s.ownJob(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := switchboard.JobFile(j)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	h.Set("Content-Length", strconv.Itoa(len(f.Content)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.Content)
	}
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
	if !workspace.SeesRecord(workspace.ViewerOf(principal(r)), j.Caller, j.User) {
		return switchboard.Job{}, switchboard.Errorf(switchboard.CodeNotFound, "no job %q", id) // as the store answers an unknown id
	}
	return j, nil
}
