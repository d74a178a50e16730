package httpapi

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// The list routes the console reads (issue 17): recent invocations and jobs
// from the store, newest first, and the runs this process holds. An agent
// token lists only its own invocations and jobs; runs are the user's.

// listLimit reads ?limit= (1..1000, default 100).
func listLimit(r *http.Request) (int, error) {
	l := r.URL.Query().Get("limit")
	if l == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > 1000 {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "limit must be within 1..1000, not %q", l)
	}
	return n, nil
}

var invocationStatuses = []switchboard.Status{
	switchboard.StatusPending, switchboard.StatusAwaitingApproval, switchboard.StatusDispatched, switchboard.StatusSucceeded,
	switchboard.StatusFailed, switchboard.StatusDenied, switchboard.StatusTimedOut, switchboard.StatusCancelled,
}

// listInvocations: ?status= ?run= ?limit= → {items: [...]}. Items are the
// records without input and result (they can be large and hold secrets);
// GET /invocations/{id} has them.
func (s *Server) listInvocations(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := switchboard.InvocationFilter{Status: switchboard.Status(q.Get("status")), RunID: q.Get("run")}
	if f.Status != "" && !slices.Contains(invocationStatuses, f.Status) {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput,
			"status must be pending, awaiting_approval, dispatched, succeeded, failed, denied, timed_out or cancelled, not %q", f.Status))
		return
	}
	var err error
	if f.Limit, err = listLimit(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var ok bool
	if f.Caller, f.User, ok = workspace.RecordFilter(workspace.ViewerOf(principal(r))); !ok {
		writeJSON(w, http.StatusOK, map[string]any{"items": []switchboard.Invocation{}})
		return
	}
	items, err := s.opts.Broker.List(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for i := range items {
		items[i].Input, items[i].Result = nil, nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// listJobs: ?status=running|succeeded|failed|cancelled ?limit= → {items}.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	f := switchboard.JobFilter{Status: switchboard.JobStatus(r.URL.Query().Get("status"))}
	switch f.Status {
	case "", switchboard.JobRunning, switchboard.JobSucceeded, switchboard.JobFailed, switchboard.JobCancelled:
	default:
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "status must be running, succeeded, failed or cancelled, not %q", f.Status))
		return
	}
	var err error
	if f.Limit, err = listLimit(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var ok bool
	if f.Caller, f.User, ok = workspace.RecordFilter(workspace.ViewerOf(principal(r))); !ok {
		writeJSON(w, http.StatusOK, map[string]any{"items": []switchboard.Job{}})
		return
	}
	items, err := s.opts.Governance.Jobs.List(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// listRuns: ?limit= → {items: [RunInfo]}, newest first: the stored runs
// of every replica (or, without a run store, the runs in progress and the
// recently finished ones this process keeps); not a history, the ledger
// is.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	n, err := listLimit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, err := s.opts.Agent.List(r.Context(), n, ownUser(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}
