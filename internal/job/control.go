package job

import (
	"context"
	"slices"

	"github.com/switchboardhq/switchboard"
)

// Get returns a job: this process's live view when it runs here (every
// progress report), else the stored record.
func (s *Service) Get(ctx context.Context, id string) (switchboard.Job, error) {
	s.mu.Lock()
	r := s.live[id]
	var j switchboard.Job
	if r != nil {
		j = r.job
	}
	s.mu.Unlock()
	if r != nil {
		return j, nil
	}
	return s.store.JobGet(ctx, id)
}

// List returns the stored jobs matching f, newest first, each running here
// shown as its live view (as Get), so progress is current.
func (s *Service) List(ctx context.Context, f switchboard.JobFilter) ([]switchboard.Job, error) {
	js, err := s.store.JobList(ctx, f)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, j := range js {
		if r := s.live[j.ID]; r != nil {
			js[i] = r.job
		}
	}
	return js, nil
}

// Cancel ends a running job: it is recorded cancelled at once (the first
// terminal write wins) and its work's context is cancelled. ctx's
// principal is recorded as who cancelled it. CONFLICT when it has already
// ended. A job running on another replica is recorded cancelled; its work
// there stops at its next progress report or check of the record.
func (s *Service) Cancel(ctx context.Context, id string) (switchboard.Job, error) {
	s.mu.Lock()
	r := s.live[id]
	s.mu.Unlock()
	var j switchboard.Job
	if r != nil {
		s.mu.Lock()
		j = r.job
		s.mu.Unlock()
	} else {
		var err error
		if j, err = s.store.JobGet(ctx, id); err != nil {
			return j, err
		}
		if !j.Status.Terminal() && s.forward != nil && j.Replica != "" && j.Replica != s.replica {
			if got, answered, err := s.forward(ctx, j.Replica, id); answered {
				return got, err
			}
		}
	}
	if j.Status.Terminal() {
		return j, switchboard.Errorf(switchboard.CodeConflict, "job %s already %s", id, j.Status).
			WithDetails(map[string]any{"status": j.Status})
	}
	by := "the user"
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		by = p.String()
	}
	now := s.now().UTC()
	j.Status, j.UpdatedAt, j.FinishedAt = switchboard.JobCancelled, now, now
	j.Error = switchboard.Errorf(switchboard.CodeCancelled, "job %s was cancelled by %s", id, by)
	if r == nil {
		r = &running{job: j, cancel: func(error) {}, done: make(chan struct{})}
	}
	stored, won := s.settle(ctx, r, j)
	r.cancel(j.Error)
	if !won {
		return stored, switchboard.Errorf(switchboard.CodeConflict, "job %s already %s", id, stored.Status).
			WithDetails(map[string]any{"status": stored.Status})
	}
	return stored, nil
}

// Wait blocks until job id ends (or ctx does) and returns it.
func (s *Service) Wait(ctx context.Context, id string) (switchboard.Job, error) {
	s.mu.Lock()
	r := s.live[id]
	s.mu.Unlock()
	if r != nil {
		select {
		case <-r.done:
		case <-ctx.Done():
			return s.Get(context.WithoutCancel(ctx), id)
		}
	}
	return s.store.JobGet(ctx, id)
}

// Close cancels every job this process runs (the daemon is stopping):
// each is recorded failed with UNAVAILABLE once its work returns, rather
// than being found running at the next start.
func (s *Service) Close() {
	s.mu.Lock()
	live := make([]*running, 0, len(s.live))
	for _, r := range s.live {
		live = append(live, r)
	}
	s.mu.Unlock()
	for _, r := range live {
		r.cancel(switchboard.Errorf(switchboard.CodeUnavailable, "the daemon stopped while job %s ran", r.job.ID))
	}
}

// Running returns the jobs this process is running, oldest first.
func (s *Service) Running() []switchboard.Job {
	s.mu.Lock()
	out := make([]switchboard.Job, 0, len(s.live))
	for _, r := range s.live {
		if !r.job.Status.Terminal() { // ended, its ledger entry being written
			out = append(out, r.job)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b switchboard.Job) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}
