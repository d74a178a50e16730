package httpapi

import (
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/task"
)

// Delegated tasks (/api/v1/tasks): the admin token, an agent token
// acting for a user, or the person signed in to the console creates them,
// for that user; each sees only the tasks
// it may (the admin all), and another's task answers NOT_FOUND as an
// unknown id does.
func (s *Server) taskRoutes() {
	if s.opts.Tasks == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/tasks", s.ownerAuth(s.createTask))
	s.mux.HandleFunc("GET /api/v1/tasks", s.ownerAuth(s.listTasks))
	s.mux.HandleFunc("GET /api/v1/tasks/{id}", s.ownerAuth(s.getTask))
	s.mux.HandleFunc("POST /api/v1/tasks/{id}/cancel", s.ownerAuth(s.cancelTask))
	s.mux.HandleFunc("POST /api/v1/tasks/{id}/resume", s.ownerAuth(s.resumeTask))
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	var body task.CreateRequest
	if err := s.decode(w, r, &body, 64<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.opts.Tasks.Create(r.Context(), principal(r), body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "task.create", t.ID, map[string]any{"owner": t.Owner, "assignee": t.Assignee, "envelope": t.Envelope, "narrowed": t.Narrowed})
	writeJSON(w, http.StatusCreated, t)
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	var status []switchboard.TaskStatus
	if v := r.URL.Query().Get("status"); v != "" {
		for _, st := range strings.Split(v, ",") {
			switch ts := switchboard.TaskStatus(st); ts {
			case switchboard.TaskSubmitted, switchboard.TaskWorking, switchboard.TaskInputRequired,
				switchboard.TaskCompleted, switchboard.TaskFailed, switchboard.TaskCancelled:
				status = append(status, ts)
			default:
				s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput,
					"status must be submitted, working, input_required, completed, failed or cancelled (comma-separated), not %q", st))
				return
			}
		}
	}
	limit, err := listLimit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ts, err := s.opts.Tasks.List(r.Context(), principal(r), status, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": ts})
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.opts.Tasks.Get(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.opts.Tasks.Cancel(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "task.cancel", t.ID, map[string]any{"owner": t.Owner})
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) resumeTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.opts.Tasks.Resume(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "task.resume", t.ID, map[string]any{"owner": t.Owner, "status": t.Status, "runs": t.Runs})
	writeJSON(w, http.StatusOK, t)
}
