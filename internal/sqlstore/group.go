package sqlstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/metrics"
)

// Group commit, shared by the drivers. Writes that arrive while another
// write's transaction is being committed queue up; when it is done, the
// first of them (the leader) takes the whole queue and commits it as one
// transaction, each member's statements inside a SAVEPOINT of its own. The
// driver's Commit does the transaction; the contract it keeps is:
//
//   - a member whose statements fail is rolled back to its savepoint and
//     gets its own error; the others are not affected;
//   - a failed BEGIN or COMMIT fails every member;
//   - nobody is answered before the COMMIT that holds their writes
//     returned;
//   - ledger appends chain in batch order, each from the previous member's
//     entry, and a rolled-back member's entry is forgotten;
//   - a batch of one is exactly the write alone (no savepoint).
//
// The Group itself only queues, elects the leader and wakes the members:
// one batch is committed at a time per Group, and when it is done its
// leader hands the lead to the first write queued meanwhile.

// MaxBatch bounds the members of one transaction, so one COMMIT does not
// keep its first members waiting for long.
const MaxBatch = 64

// Group is the queue of writes of one store. The zero value is not usable:
// set Commit.
type Group[W any] struct {
	// Commit runs batch as one transaction and sets each member's Err. One
	// leader at a time calls it.
	Commit func(batch []*Member[W])
	// Max bounds a batch; 0 means MaxBatch, 1 turns batching off (every
	// write still waits for the one before it).
	Max int

	mu      sync.Mutex
	leading bool         // a leader is committing a batch
	queue   []*Member[W] // waiting for the next batch
	taken   int          // batches taken from the queue (for tests)
}

// Member is one write: a call waiting for, or in, a batch. W is what the
// driver runs statements on.
type Member[W any] struct {
	Ctx context.Context
	Op  string
	// Tx: the write is a transaction; otherwise its statements may each
	// commit by themselves when it runs alone.
	Tx bool
	// Key names the row the write locks first (an invocation's id), ""
	// for none: a batch runs its members in key order (KeyedDB).
	Key string
	Fn  func(W) error
	// Err is the write's outcome, set by Commit (translated).
	Err error

	// lead is set when the member is handed the lead instead of an
	// outcome; written before wake is signalled.
	lead bool
	wake chan struct{}
}

// Do runs m through the group and returns once its batch is committed or
// failed; the outcome is then m.Err. If m's context ends while it is still
// queued (not yet taken into a batch), Do returns the context's error,
// untranslated, and m has written nothing.
func (g *Group[W]) Do(m *Member[W]) error {
	m.wake = make(chan struct{}, 1)
	g.mu.Lock()
	if !g.leading {
		g.leading = true
		g.mu.Unlock()
		g.lead(m)
		return nil
	}
	g.queue = append(g.queue, m)
	g.mu.Unlock()
	select {
	case <-m.wake:
	case <-m.Ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, m); i >= 0 { // not taken into a batch: leave
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			return m.Ctx.Err()
		}
		g.mu.Unlock()
		<-m.wake // taken: its outcome (or the lead) is coming
	}
	if m.lead {
		g.lead(m)
	}
	return nil
}

// Taken reports how many batches leaders have taken from the queue: a
// test that wants writes to queue behind a leader waits until the
// leader's batch is taken, not merely until it leads (for tests).
func (g *Group[W]) Taken() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.taken
}

// Queued reports whether a leader is committing and how many writes wait
// (for tests).
func (g *Group[W]) Queued() (leading bool, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading, len(g.queue)
}

// lead commits first and the writes queued behind it, then hands the lead
// on.
func (g *Group[W]) lead(first *Member[W]) {
	limit := g.Max
	if limit <= 0 {
		limit = MaxBatch
	}
	g.mu.Lock()
	n := min(len(g.queue), limit-1)
	batch := make([]*Member[W], 0, n+1)
	batch = append(append(batch, first), g.queue[:n]...)
	g.queue = slices.Clone(g.queue[n:])
	g.taken++
	g.mu.Unlock()

	start := time.Now()
	g.Commit(batch)
	metrics.StoreCommit(len(batch), time.Since(start))

	g.mu.Lock()
	var next *Member[W]
	if len(g.queue) > 0 {
		next = g.queue[0]
		g.queue = g.queue[1:]
		next.lead = true
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
	for _, m := range batch[1:] {
		m.wake <- struct{}{}
	}
}
