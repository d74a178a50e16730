package agent

import (
	"slices"
	"time"

	"github.com/switchboardhq/switchboard"
)

// ExpireRuns forgets the finished runs that ended before before and
// returns how many: this process's copies of their event logs go (GET
// /runs/{id} then answers from the store, whose retention deletes them
// alike, or NOT_FOUND without a run store). A run that
// ended waiting for an approval (RunWaiting) is kept: the run that resumes
// it takes its id over. Options.RetainRuns still bounds how many finished
// runs are kept, whatever their age. The daemon's retention sweeper calls
// it (store.retention.runs).
func (rt *Runtime) ExpireRuns(before time.Time) int {
	rt.mu.Lock()
	var old []*Run
	for _, id := range rt.finished {
		if r := rt.runs[id]; r != nil {
			old = append(old, r)
		}
	}
	rt.mu.Unlock()
	// Each run's own lock is taken without rt.mu held (the loop takes them
	// the other way round).
	expired := map[*Run]bool{}
	for _, r := range old {
		r.mu.Lock()
		done, st := r.finished, r.status
		r.mu.Unlock()
		if st != switchboard.RunWaiting && st != switchboard.RunRunning && !done.IsZero() && done.Before(before) {
			expired[r] = true
		}
	}
	if len(expired) == 0 {
		return 0
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := 0
	rt.finished = slices.DeleteFunc(rt.finished, func(id string) bool {
		r := rt.runs[id]
		if r == nil || !expired[r] {
			return false
		}
		delete(rt.runs, id)
		n++
		return true
	})
	return n
}
