package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Runs in the store (issue 16): with Options.Runs set, every run is
// recorded (RunCreate at Start) and its events are flushed to the store in
// batches by one flusher goroutine, so any replica can answer GET
// /runs/{id} and follow the run's events (follow.go). The run itself never
// waits on the store: appending an event only marks the run dirty. A
// non-delta event (a start, an end, a tool result, the terminal event)
// asks for a flush at once; text and argument deltas wait at most
// Options.RunFlushInterval, so a burst of tokens is one write. While a
// flush runs, later events gather for the next one (group commit).
//
// The owning replica is the only writer; the store refuses its flushes
// once a survivor has ended the run (the replica was taken for dead), and
// the run is then kept in memory only.

// Defaults for the run store.
const (
	// DefaultRunFlushInterval bounds how long a text or argument delta
	// waits before it is stored: the most a follower on another replica
	// lags behind the run's own stream, plus a commit and a notification.
	DefaultRunFlushInterval = 100 * time.Millisecond
	// DefaultRunPollInterval is how often a follower on another replica
	// re-reads the store when no notification woke it (the bus delivers
	// at most once).
	DefaultRunPollInterval = 2 * time.Second
	// runStoreTimeout bounds one store write of the flusher.
	runStoreTimeout = 10 * time.Second
	// runRetryInterval spaces flushes of a run whose last one failed.
	runRetryInterval = time.Second
)

// RunStore is the part of switchboard.Store that keeps runs.
type RunStore interface {
	RunCreate(ctx context.Context, r switchboard.RunRecord) error
	RunAppend(ctx context.Context, r switchboard.RunRecord, events []switchboard.RunEvent) error
	RunGet(ctx context.Context, id string) (switchboard.RunRecord, error)
	RunEventList(ctx context.Context, id string, from, limit int) ([]switchboard.RunEvent, error)
	RunList(ctx context.Context, f switchboard.RunFilter) ([]switchboard.RunRecord, error)
	// InvocationGet reads the outcome of a call another replica runs (a
	// resume of its interrupted run, resume.go).
	InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error)
}

// flusher writes dirty runs to the store.
type flusher struct {
	mu    sync.Mutex
	dirty map[*Run]bool
	armed bool // a timer will kick
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// startFlusher starts the flusher goroutine (Options.Runs set).
func (rt *Runtime) startFlusher() {
	f := &flusher{dirty: map[*Run]bool{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	rt.fl = f
	go func() {
		defer close(f.done)
		for {
			select {
			case <-f.kick:
			case <-f.stop:
				rt.flushAll() // what the runs' ends left
				return
			}
			rt.flushAll()
		}
	}()
}

// stopFlusher flushes what is left and ends the flusher (Close, after
// every run has ended; a second Close waits for the first's flush).
func (rt *Runtime) stopFlusher() {
	if rt.fl == nil {
		return
	}
	rt.fl.once.Do(func() { close(rt.fl.stop) })
	<-rt.fl.done
}

// markDirty is Run.persist: r changed; now asks for a flush at once.
// It is called with r.mu held and takes only the flusher's lock.
func (rt *Runtime) markDirty(r *Run, now bool) {
	f := rt.fl
	f.mu.Lock()
	f.dirty[r] = true
	if !now {
		if !f.armed {
			f.armed = true
			time.AfterFunc(rt.opts.RunFlushInterval, f.poke)
		}
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.poke()
}

func (f *flusher) poke() {
	f.mu.Lock()
	f.armed = false
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// flushAll flushes every dirty run, one store write each.
func (rt *Runtime) flushAll() {
	f := rt.fl
	f.mu.Lock()
	dirty := f.dirty
	f.dirty = map[*Run]bool{}
	f.mu.Unlock()
	var retry bool
	for r := range dirty {
		if !rt.flush(r) {
			retry = true
			f.mu.Lock()
			f.dirty[r] = true
			f.mu.Unlock()
		}
	}
	if retry {
		f.mu.Lock()
		if !f.armed {
			f.armed = true
			time.AfterFunc(runRetryInterval, f.poke)
		}
		f.mu.Unlock()
	}
}

// flush stores r's new events and record; false means try again later.
func (rt *Runtime) flush(r *Run) bool {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	r.mu.Lock()
	if r.lost {
		r.mu.Unlock()
		return true
	}
	recs := r.records[r.flushed:len(r.records):len(r.records)]
	rec := rt.recordLocked(r)
	r.mu.Unlock()
	events := make([]switchboard.RunEvent, len(recs))
	for i, x := range recs {
		events[i] = switchboard.RunEvent{Seq: x.Seq, JSON: x.JSON}
	}
	ctx, cancel := context.WithTimeout(context.Background(), runStoreTimeout)
	defer cancel()
	err := rt.opts.Runs.RunAppend(ctx, rec, events)
	switch c := switchboard.CodeOf(err); {
	case err == nil:
	case c == switchboard.CodeConflict || c == switchboard.CodeNotFound:
		rt.log.Warn("the store refused this run's events (another replica ended it); it is kept in this process only",
			"run", r.id, "err", err)
		r.mu.Lock()
		r.lost = true
		r.mu.Unlock()
		return true
	default:
		rt.log.Warn("storing a run's events failed; retrying", "run", r.id, "err", err)
		return false
	}
	end := rec.Status != switchboard.RunRunning
	r.mu.Lock()
	r.flushed += len(recs)
	last := r.flushed - 1
	r.endStored = r.endStored || end
	r.mu.Unlock()
	rt.flushed(r.id, last, end)
	return true
}

// recordLocked is r as the store keeps it. Until its log is closed the run
// is stored as running: a follower that reads a final status has every
// event, the terminal one included, in the same write.
func (rt *Runtime) recordLocked(r *Run) switchboard.RunRecord {
	rec := switchboard.RunRecord{RunInfo: r.infoLocked(), Owner: r.owner, Replica: rt.opts.Replica}
	rec.Queued = 0
	if !r.closed {
		rec.Status, rec.FinishedAt = switchboard.RunRunning, time.Time{}
	}
	if rec.Status == switchboard.RunWaiting {
		rec.Waiting = slices.Clone(r.waiting)
	}
	return rec
}

// storeStart records a new run before it starts: a run id another replica
// holds is refused (CONFLICT) here, as one this process holds is.
func (rt *Runtime) storeStart(ctx context.Context, r *Run) error {
	if rt.opts.Runs == nil {
		return nil
	}
	r.mu.Lock()
	rec := rt.recordLocked(r)
	r.mu.Unlock()
	if err := rt.opts.Runs.RunCreate(ctx, rec); err != nil {
		return err
	}
	r.mu.Lock()
	r.persist = rt.markDirty
	r.mu.Unlock()
	return nil
}

// Stored returns the stored record of run id: a run another replica runs
// or ran, or one this process no longer holds. NOT_FOUND without a run
// store.
func (rt *Runtime) Stored(ctx context.Context, id string) (switchboard.RunRecord, error) {
	if rt.opts.Runs == nil {
		return switchboard.RunRecord{}, switchboard.Errorf(switchboard.CodeNotFound, "no run %s (finished runs are kept for the last %d)", id, rt.opts.RetainRuns)
	}
	rec, err := rt.opts.Runs.RunGet(ctx, id)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		return rec, switchboard.Errorf(switchboard.CodeNotFound, "no run %s", id)
	}
	return rec, err
}

// abandonStored ends the stored record of a run refused after storeStart
// (its resume lost a race to another decision): failed with cause, or,
// when it took over the id of the interrupted run prev, with prev stored
// again as it was, as prev is back in memory.
func (rt *Runtime) abandonStored(run, prev *Run, cause error) {
	if rt.opts.Runs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), runStoreTimeout)
	defer cancel()
	run.mu.Lock()
	rec := rt.recordLocked(run)
	run.persist = nil
	run.mu.Unlock()
	rec.Status, rec.Error, rec.FinishedAt = switchboard.RunFailed, switchboard.AsError(cause), rt.now()
	if prev != nil {
		rec.Status = switchboard.RunWaiting // so that prev takes its id back
	}
	err := rt.opts.Runs.RunAppend(ctx, rec, nil)
	if err == nil && prev != nil {
		prev.mu.Lock()
		old := rt.recordLocked(prev)
		events := make([]switchboard.RunEvent, prev.flushed)
		for i, x := range prev.records[:prev.flushed] {
			events[i] = switchboard.RunEvent{Seq: x.Seq, JSON: x.JSON}
		}
		prev.mu.Unlock()
		if err = rt.opts.Runs.RunCreate(ctx, old); err == nil {
			err = rt.opts.Runs.RunAppend(ctx, old, events)
		}
	}
	if err != nil {
		rt.log.Warn("could not record a refused run in the store", "run", run.id, "err", err)
	}
}
