package agent

import (
	"context"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
)

// Following a run this process does not hold: its events are read from
// the store (persist.go) as its replica flushes them. A follower asks the
// run's replica (the record's Replica) for its flush notices, and that
// replica sends them to this one only (interest.go); Notified wakes this
// process's followers of that run, and each re-reads the store. The bus
// may drop a notice, so a follower also re-reads every
// Options.RunPollInterval.

// followBatch is how many events a follower reads in one query.
const followBatch = 1000

// Follower serves the events of a stored run from a position on, with
// the same positions (SSE ids) the run's own replica serves.
type Follower struct {
	id   string
	base int // the position of recs[0]

	mu       sync.Mutex
	recs     []Record
	wake     chan struct{}
	complete bool
}

// Follow starts reading the events of stored run id from position from on,
// until the run has ended and every event is read, or ctx ends.
func (rt *Runtime) Follow(ctx context.Context, id string, from int) *Follower {
	from = max(from, 0)
	f := &Follower{id: id, base: from, wake: make(chan struct{})}
	poke, unwatch := rt.watchRun(id)
	go func() {
		defer unwatch()
		rt.tail(ctx, f, from, poke)
	}()
	return f
}

// watchRun registers a channel Notified pokes for run id, until unwatch.
func (rt *Runtime) watchRun(id string) (poke chan struct{}, unwatch func()) {
	poke = make(chan struct{}, 1)
	rt.wmu.Lock()
	defer rt.wmu.Unlock()
	if rt.watch == nil {
		rt.watch = map[string]map[chan struct{}]bool{}
	}
	if rt.watch[id] == nil {
		rt.watch[id] = map[chan struct{}]bool{}
	}
	rt.watch[id][poke] = true
	return poke, func() {
		rt.wmu.Lock()
		defer rt.wmu.Unlock()
		delete(rt.watch[id], poke)
		if len(rt.watch[id]) == 0 {
			delete(rt.watch, id)
			delete(rt.asks, id) // the next follower asks again
		}
	}
}

// Notified is told that run id's replica stored its events up to seq: the
// followers of that run in this process read the store now. It does not
// block (a bus handler calls it).
func (rt *Runtime) Notified(id string, seq int) {
	rt.wmu.Lock()
	defer rt.wmu.Unlock()
	for poke := range rt.watch[id] {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
}

// tail reads the store into f until the run is complete.
func (rt *Runtime) tail(ctx context.Context, f *Follower, next int, poke <-chan struct{}) {
	poll := time.NewTicker(rt.opts.RunPollInterval)
	defer poll.Stop()
	for {
		// The record first: a final status read before the events means
		// every event it counts is already stored.
		rec, err := rt.opts.Runs.RunGet(ctx, f.id)
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			f.end() // expired (or replaced) meanwhile
			return
		}
		if err == nil {
			// Asked before the events are read: the replica answers a
			// first interest with a notice, so a flush between this
			// read and the interest's arrival is not missed.
			if following(rec) {
				rt.askFlushes(f.id, rec.Replica)
			}
			next, err = rt.readEvents(ctx, f, next)
		}
		if err != nil && ctx.Err() == nil {
			rt.log.Warn("reading a run's events from the store failed; retrying", "run", f.id, "err", err)
		}
		if err == nil && rec.Status != switchboard.RunRunning && next >= rec.Events {
			f.end()
			return
		}
		select {
		case <-poke:
		case <-poll.C:
		case <-ctx.Done():
			return
		}
	}
}

// readEvents adds the stored events from next on to f and returns the next
// position to read.
func (rt *Runtime) readEvents(ctx context.Context, f *Follower, next int) (int, error) {
	for {
		evs, err := rt.opts.Runs.RunEventList(ctx, f.id, next, followBatch)
		if err != nil {
			return next, err
		}
		if len(evs) == 0 {
			return next, nil
		}
		recs := make([]Record, len(evs))
		for i, e := range evs {
			ev, _ := agui.Decode(e.JSON) // stored by a replica that encoded it; nil if a newer one added a type
			recs[i] = Record{Seq: e.Seq, Event: ev, JSON: e.JSON}
		}
		f.add(recs)
		next = evs[len(evs)-1].Seq + 1
		if len(evs) < followBatch {
			return next, nil
		}
	}
}

func (f *Follower) add(recs []Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs = append(f.recs, recs...)
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *Follower) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.complete {
		f.complete = true
		close(f.wake)
	}
}

// Events is Run.Events for a stored run: the records read so far from seq
// on (never before the position Follow started at), a channel closed when
// more arrive, and whether the run has ended and every event was read.
func (f *Follower) Events(from int) (recs []Record, more <-chan struct{}, complete bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := max(from-f.base, 0)
	if i < len(f.recs) {
		recs = f.recs[i:len(f.recs):len(f.recs)]
	}
	return recs, f.wake, f.complete
}

// cancelPoll spaces CancelStored's store reads between notifications.
const cancelPoll = 100 * time.Millisecond

// CancelStored stops stored run rec that another replica holds: it asks
// that replica (Options.RunCancel) and waits, at most wait, for the stored
// run to leave the status it had, and returns the stored record. A run
// already finished is returned as it is; one whose replica is dead stays
// running until a survivor ends it.
func (rt *Runtime) CancelStored(ctx context.Context, rec switchboard.RunRecord, wait time.Duration) (switchboard.RunRecord, error) {
	if rt.opts.RunCancel == nil || (rec.Status != switchboard.RunRunning && rec.Status != switchboard.RunWaiting) {
		return rec, nil
	}
	return rt.awaitChange(ctx, rec, wait, func() { rt.opts.RunCancel(rec.Replica, rec.RunID) })
}

// awaitChange calls do (if set), then waits, at most wait, for stored run
// rec to leave the status it had, and returns the stored record then (or
// at the deadline).
func (rt *Runtime) awaitChange(ctx context.Context, rec switchboard.RunRecord, wait time.Duration, do func()) (switchboard.RunRecord, error) {
	poke, unwatch := rt.watchRun(rec.RunID)
	defer unwatch()
	if following(rec) {
		rt.askFlushes(rec.RunID, rec.Replica)
	}
	if do != nil {
		do()
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(cancelPoll)
	defer tick.Stop()
	for {
		select {
		case <-poke:
		case <-tick.C:
		case <-deadline.C:
			return rt.opts.Runs.RunGet(ctx, rec.RunID)
		case <-ctx.Done():
			return rec, context.Cause(ctx)
		}
		cur, err := rt.opts.Runs.RunGet(ctx, rec.RunID)
		if err != nil || cur.Status != rec.Status {
			return cur, err
		}
	}
}
