package agent

import (
	"time"

	"github.com/switchboardhq/switchboard"
)

// Flush notices go only to the replicas that follow a run, as the end of
// a call does (internal/broker, ends.go). A follower here of a run another
// replica holds asks that replica (Options.RunInterest, on its own bus
// topic) to tell this one of the run's flushes, once when it starts
// following and again every runInterestRenew while any follower here
// still does. The holder keeps the set (Interested) and, after each
// flush, tells each replica in it (Options.RunFlushed, on that replica's
// topic, where the daemon calls Notified); its own followers are woken in
// process. The flush that stores the run as no longer running is the
// last: the set is dropped after it.
//
// So a replica that follows nothing of a run hears nothing of it. Every
// notice is a hint: a follower re-reads the store at each one and every
// Options.RunPollInterval, which also covers an interest that was lost,
// a holder that died with its set (a survivor ends the run; followers
// read it at their next poll) and a run whose holder is not known.

const (
	// runInterestRenew is how often a follower's replica repeats its
	// interest; runInterestTTL is how long a holder keeps one not
	// repeated (a run whose last flush never came, a follower that
	// went away without a word).
	runInterestRenew = time.Minute
	runInterestTTL   = 3 * time.Minute
)

// Interested is told that replica follows run id, which this process
// holds: its flushes are sent there from now on. A first interest is
// answered at once with a notice (the follower re-reads the store), and
// one in a run whose last flush is already stored, or that is not held
// here, is answered and dropped: the interest is recorded before that is
// checked, and flushed takes the set after the store is written, so one
// of the two sees the other. It does not block (a bus handler calls it).
func (rt *Runtime) Interested(id, replica string) {
	if rt.opts.RunFlushed == nil || id == "" || replica == "" || replica == rt.opts.Replica {
		return
	}
	first := rt.asked.Add(id, replica, time.Now())
	seq, done := rt.storedThrough(id)
	switch {
	case done:
		if rs := rt.asked.List(id, true, time.Now()); len(rs) > 0 {
			go rt.tellFlushed(id, seq, rs)
		}
	case first:
		go rt.tellFlushed(id, seq, []string{replica})
	}
}

// storedThrough reports the last stored position of run id and whether
// no further flush of it will come from this process (it ended and its
// end is stored, the store refused it, or it is not held here).
func (rt *Runtime) storedThrough(id string) (seq int, done bool) {
	rt.mu.Lock()
	r := rt.runs[id]
	rt.mu.Unlock()
	if r == nil {
		return -1, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	done = r.lost || r.endStored || r.closed && r.persist == nil
	return r.flushed - 1, done
}

// flushed is told that run id is stored up to seq (last: stored as no
// longer running): this process's followers read the store now, and so
// do those of every replica that asked; after the last flush the set is
// dropped. It runs on the flusher goroutine.
func (rt *Runtime) flushed(id string, seq int, last bool) {
	rt.Notified(id, seq)
	if rt.opts.RunFlushed == nil {
		return
	}
	if rs := rt.asked.List(id, last, time.Now()); len(rs) > 0 {
		rt.tellFlushed(id, seq, rs)
	}
}

func (rt *Runtime) tellFlushed(id string, seq int, rs []string) {
	for _, r := range rs {
		rt.opts.RunFlushed(r, id, seq)
	}
}

// askFlushes asks owner, which holds run id, for its flush notices, unless
// this process asked it within runInterestRenew. Only while a follower
// here watches the run (unwatch forgets the ask).
func (rt *Runtime) askFlushes(id, owner string) {
	if rt.opts.RunInterest == nil || owner == "" || rt.opts.Replica == "" || owner == rt.opts.Replica {
		return
	}
	now := time.Now()
	rt.wmu.Lock()
	a, ok := rt.asks[id]
	if ok && a.owner == owner && now.Sub(a.at) < runInterestRenew {
		rt.wmu.Unlock()
		return
	}
	if rt.asks == nil {
		rt.asks = map[string]runAsk{}
	}
	rt.asks[id] = runAsk{owner: owner, at: now}
	rt.wmu.Unlock()
	rt.opts.RunInterest(owner, id)
}

// runAsk is the last interest this process sent for a run it follows.
type runAsk struct {
	owner string
	at    time.Time
}

// following reports whether a follower of a stored run still has to hear
// of its flushes: it is running (a run stored as ended has sent its last).
func following(rec switchboard.RunRecord) bool {
	return rec.Status == switchboard.RunRunning
}
