package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/task"
)

// Delegated tasks (/api/v1/tasks): the admin token, an agent token
// acting for a user, or the person signed in to the console creates them,
// for that user; each sees only the tasks
// it may (the admin all), and another's task answers NOT_FOUND as an
// unknown id does. A tab lists, reads and cancels its own user's tasks;
// the agent a task is assigned to completes or fails it.
func (s *Server) taskRoutes() {
	if s.opts.Tasks == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/tasks", s.ownerAuth(s.createTask))
	s.mux.HandleFunc("GET /api/v1/tasks", s.ownerOrTab(s.listTasks))
	s.mux.HandleFunc("GET /api/v1/tasks/{id}", s.ownerOrTab(s.getTask))
	s.mux.HandleFunc("POST /api/v1/tasks/{id}/cancel", s.ownerOrTab(s.cancelTask))
	s.mux.HandleFunc("POST /api/v1/tasks/{id}/resume", s.ownerAuth(s.resumeTask))
	s.mux.HandleFunc("POST /api/v1/tasks/{id}/complete", s.ownerAuth(s.completeTask))
	s.mux.HandleFunc("POST /api/v1/tasks/{id}/fail", s.ownerAuth(s.failTask))
}

// ownerOrTab is ownerAuth that also admits a tab's session token, as the
// user the tab was opened for: a tab shows its user's tasks and may stop
// one (stopping only ever spends less), while creating and resuming work
// stays with the person's own sign-in and their agents' tokens.
func (s *Server) ownerOrTab(h http.HandlerFunc) http.HandlerFunc {
	owner := s.ownerAuth(h)
	return func(w http.ResponseWriter, r *http.Request) {
		tok, _ := bearer(r)
		if !authn.IsSessionToken(tok) || s.auth.IsAdmin(tok) {
			owner(w, r)
			return
		}
		c, err := s.credential(r, "missing Authorization: Bearer token", authn.Session)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		p := c.Principal
		if p.User, err = s.sessionUser(r, c.SessionID()); err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r.WithContext(switchboard.WithPrincipal(r.Context(), p)))
	}
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
	var ts []switchboard.Task
	switch a := r.URL.Query().Get("assignee"); a {
	case "":
		ts, err = s.opts.Tasks.List(r.Context(), principal(r), status, limit)
	case "me":
		ts, err = s.opts.Tasks.Assigned(r.Context(), principal(r), status, limit)
	default:
		err = switchboard.Errorf(switchboard.CodeInvalidInput, "assignee takes only \"me\" (the tasks assigned to the calling agent), not %q", a)
	}
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

// completeBody is POST /tasks/{id}/complete: the assignee's result.
type completeBody struct {
	Result json.RawMessage `json:"result"`
}

func (s *Server) completeTask(w http.ResponseWriter, r *http.Request) {
	var body completeBody
	if err := s.decode(w, r, &body, task.MaxResultBytes+4<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.opts.Tasks.Complete(r.Context(), principal(r), r.PathValue("id"), body.Result)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "task.complete", t.ID, map[string]any{"owner": t.Owner, "status": t.Status})
	writeJSON(w, http.StatusOK, t)
}

// failBody is POST /tasks/{id}/fail: why the assignee gave up, as a
// message or as {code, message}.
type failBody struct {
	Error json.RawMessage `json:"error"`
}

func (s *Server) failTask(w http.ResponseWriter, r *http.Request) {
	var body failBody
	if err := s.decode(w, r, &body, task.MaxErrorBytes+4<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	var e switchboard.Error
	if err := json.Unmarshal(body.Error, &e.Message); err != nil {
		var obj struct {
			Code    switchboard.Code `json:"code"`
			Message string           `json:"message"`
			Details any              `json:"details"`
		}
		if err := json.Unmarshal(body.Error, &obj); err != nil {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "error is a message or {code, message}"))
			return
		}
		e = switchboard.Error{Code: obj.Code, Message: obj.Message, Details: obj.Details}
	}
	t, err := s.opts.Tasks.Fail(r.Context(), principal(r), r.PathValue("id"), e)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "task.fail", t.ID, map[string]any{"owner": t.Owner, "status": t.Status, "error": t.Error})
	writeJSON(w, http.StatusOK, t)
}
