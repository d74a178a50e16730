// Package activity is the ledger service: the one place entries are added
// to the append-only, hash-chained activity ledger (after secrets are
// redacted), an in-memory ring of the newest entries for quick reads and
// live tails, chain verification, and the diff recorded when a tool's
// description or schema changes. Undoing a recorded call is the broker's
// (broker.Reverse): it runs the inverse through the one call path.
//
// The store assigns IDs and hashes (switchboard.Store.ActivityAppend). The
// broker appends its own tool.call entries (in the same transaction as the
// invocation's terminal state when the store can) and reports them through
// Observe, so the ring sees every entry this process writes; entries from
// other replicas are picked up by reading the store's head.
package activity

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/redact"
)

// Defaults for Options.
const (
	DefaultRingSize     = 500
	DefaultPollInterval = time.Second
	// pageSize is how many entries one store read fetches.
	pageSize = 1000
)

// Ledger verbs besides the broker's tool.call.
const (
	VerbToolCall       = "tool.call"
	VerbApprovalDecide = "approval.decide"
	VerbToolRegister   = "tool.register"
	VerbToolUnregister = "tool.unregister"
	VerbSessionOpen    = "session.open"
	VerbSessionClose   = "session.close"
	VerbJobFinish      = "job.finish"
	VerbAgentStatus    = "agent.status"
	VerbAgentHandoff   = "agent.handoff"
	// VerbLedgerRollback records, at start, that the store no longer holds
	// entries the anchor's checkpoint named (anchor.go, reconcile).
	VerbLedgerRollback = "ledger.rollback"
)

// Store is the part of switchboard.Store the ledger needs; ActivityHead
// lets the ring notice entries written by other replicas.
type Store interface {
	ActivityAppend(ctx context.Context, e *switchboard.ActivityEntry) error
	ActivityList(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error)
	ActivityHead(ctx context.Context) (int64, error)
}

// Options configures a Ledger. A nil *Options means defaults.
type Options struct {
	Logger *slog.Logger
	// RingSize is how many of the newest entries stay in memory.
	RingSize int
	// PollInterval is how often a live tail reads the store for entries
	// other replicas wrote.
	PollInterval time.Duration
	// Anchor keeps the head checkpoint outside the ledger table, so that
	// Verify notices deleted last entries; nil keeps one in memory for this
	// process only (OpenAnchor with no directory).
	Anchor *Anchor
	// OnEntry, if set, hears every entry this process appended, once it
	// is committed (the metrics observer); it runs on the appender's
	// goroutine, so it must be quick.
	OnEntry func(switchboard.ActivityEntry)
	// Vouch, if set, asks whether another replica of the cluster signed cp
	// (each keeps its own key in its own data root) and returns the one
	// that says so, "" when none does: a checkpoint an operator exported
	// through a load balancer then verifies on any replica while the one
	// that issued it is alive. Its answer is only as trustworthy as the
	// channel it comes over, so the report names who vouched.
	Vouch func(ctx context.Context, cp switchboard.LedgerCheckpoint) (replica string)
}

// Ledger appends, reads and tails the activity ledger. Safe for
// concurrent use.
type Ledger struct {
	store   Store
	log     *slog.Logger
	size    int
	poll    time.Duration
	anchor  *Anchor
	onEntry func(switchboard.ActivityEntry)
	vouch   func(context.Context, switchboard.LedgerCheckpoint) string

	mu   sync.Mutex
	ring []switchboard.ActivityEntry // sorted by ID, newest last
	wake chan struct{}               // closed and replaced when an entry arrives
}

// New returns a Ledger over store with its ring filled from the store's
// newest entries.
func New(ctx context.Context, store Store, opts *Options) (*Ledger, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RingSize <= 0 {
		o.RingSize = DefaultRingSize
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Anchor == nil {
		var err error
		if o.Anchor, err = OpenAnchor("", nil); err != nil {
			return nil, err
		}
	}
	l := &Ledger{store: store, log: o.Logger, size: o.RingSize, poll: o.PollInterval, anchor: o.Anchor, onEntry: o.OnEntry, vouch: o.Vouch, wake: make(chan struct{})}
	if err := l.sync(ctx); err != nil {
		return nil, err
	}
	if err := l.reconcile(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Append redacts e's details, provenance and reversal, appends it (the
// store assigns ID and hashes, written back into e) and adds it to the ring.
func (l *Ledger) Append(ctx context.Context, e *switchboard.ActivityEntry) error {
	e.Details = redact.JSON(e.Details)
	return l.appendRedacted(ctx, e)
}

// appendRedacted is Append for details the caller has redacted already:
// it redacts the rest of e and appends it.
func (l *Ledger) appendRedacted(ctx context.Context, e *switchboard.ActivityEntry) error {
	e.Provenance, e.Reversal = redact.JSON(e.Provenance), redact.JSON(e.Reversal)
	e.Target = redact.String(e.Target)
	if err := l.store.ActivityAppend(ctx, e); err != nil {
		return err
	}
	l.Observe(*e)
	return nil
}

// Observe adds an entry appended elsewhere (the broker's) to the ring,
// moves the anchor's checkpoint to it and wakes live tails. Only entries
// this process appended (and saw committed) come here.
func (l *Ledger) Observe(e switchboard.ActivityEntry) {
	if e.ID == 0 {
		return
	}
	l.anchor.advance(e)
	l.mu.Lock()
	l.insertLocked(e)
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
	if l.onEntry != nil {
		l.onEntry(e)
	}
}

// Head returns the newest entry id in the ring and a channel closed when
// the next entry arrives: the change signal of what the ledger holds,
// without a store read (the workspace digest caches on it).
func (l *Ledger) Head() (int64, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var id int64
	if n := len(l.ring); n > 0 {
		id = l.ring[n-1].ID
	}
	return id, l.wake
}

// insertLocked keeps the ring sorted by ID, without duplicates, at most
// size long. Concurrent appends may be observed out of order.
func (l *Ledger) insertLocked(e switchboard.ActivityEntry) {
	n := len(l.ring)
	switch {
	case n == 0 || l.ring[n-1].ID < e.ID:
		l.ring = append(l.ring, e)
	default:
		i := sort.Search(n, func(i int) bool { return l.ring[i].ID >= e.ID })
		if i < n && l.ring[i].ID == e.ID {
			return
		}
		if i == 0 && n >= l.size {
			return // older than everything kept
		}
		l.ring = append(l.ring, switchboard.ActivityEntry{})
		copy(l.ring[i+1:], l.ring[i:])
		l.ring[i] = e
	}
	if over := len(l.ring) - l.size; over > 0 {
		l.ring = append(l.ring[:0:0], l.ring[over:]...)
	}
}

// sync brings the ring up to the store's head: entries other replicas (or
// an unobserved writer) appended.
func (l *Ledger) sync(ctx context.Context) error {
	head, err := l.store.ActivityHead(ctx)
	if err != nil {
		return err
	}
	// The ring is complete only up to its first gap: with several
	// replicas, entries this process observed (its own) can sit above ones
	// another replica appended before them, which the ring has not seen.
	// Reading from the ring's newest entry would skip those for good.
	l.mu.Lock()
	last := int64(0)
	if n := len(l.ring); n > 0 {
		last = l.ring[0].ID
		for i := 1; i < n && l.ring[i].ID == last+1; i++ {
			last = l.ring[i].ID
		}
	}
	l.mu.Unlock()
	if head <= last {
		return nil
	}
	from := max(last, head-int64(l.size))
	for from < head {
		page, err := l.store.ActivityList(ctx, switchboard.ActivityFilter{AfterID: from, Limit: pageSize})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		l.mu.Lock()
		for _, e := range page {
			l.insertLocked(e)
		}
		l.mu.Unlock()
		from = page[len(page)-1].ID
	}
	return nil
}

// Get returns entry id, or NOT_FOUND.
func (l *Ledger) Get(ctx context.Context, id int64) (switchboard.ActivityEntry, error) {
	l.mu.Lock()
	i := sort.Search(len(l.ring), func(i int) bool { return l.ring[i].ID >= id })
	if i < len(l.ring) && l.ring[i].ID == id {
		e := l.ring[i]
		l.mu.Unlock()
		return e, nil
	}
	l.mu.Unlock()
	page, err := l.store.ActivityList(ctx, switchboard.ActivityFilter{AfterID: id - 1, Limit: 1})
	if err != nil {
		return switchboard.ActivityEntry{}, err
	}
	if len(page) == 0 || page[0].ID != id {
		return switchboard.ActivityEntry{}, switchboard.Errorf(switchboard.CodeNotFound, "no activity entry %d", id)
	}
	return page[0], nil
}

// List pages the ledger from the store, oldest first, after f.AfterID.
func (l *Ledger) List(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	return l.store.ActivityList(ctx, f)
}

// Tail returns the newest f.Limit entries matching f (f.AfterID is
// ignored), oldest first. The ring answers when it holds enough matches;
// otherwise the store is scanned.
func (l *Ledger) Tail(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if err := l.sync(ctx); err != nil {
		return nil, err
	}
	l.mu.Lock()
	var out []switchboard.ActivityEntry
	for i := len(l.ring) - 1; i >= 0 && len(out) < f.Limit; i-- {
		if Matches(l.ring[i], f) {
			out = append(out, l.ring[i])
		}
	}
	whole := len(l.ring) == 0 || l.ring[0].ID == 1
	l.mu.Unlock()
	if len(out) < f.Limit && !whole {
		return l.scanTail(ctx, f)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if out == nil {
		out = []switchboard.ActivityEntry{}
	}
	return out, nil
}

// scanTail reads the whole ledger (filtered by the store) and keeps the
// last f.Limit: the rare tail query the ring cannot answer.
func (l *Ledger) scanTail(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	limit := f.Limit
	f.AfterID, f.Limit = 0, pageSize
	var out []switchboard.ActivityEntry
	for {
		page, err := l.store.ActivityList(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(out) > limit {
			out = append(out[:0:0], out[len(out)-limit:]...)
		}
		if len(page) < pageSize {
			break
		}
		f.AfterID = page[len(page)-1].ID
	}
	if out == nil {
		out = []switchboard.ActivityEntry{}
	}
	return out, nil
}

// Matches reports whether e passes f's actor, verb and since filters.
func Matches(e switchboard.ActivityEntry, f switchboard.ActivityFilter) bool {
	return (f.Actor == "" || e.Actor == f.Actor) && (f.Verb == "" || e.Verb == f.Verb) &&
		(f.Since.IsZero() || !e.Ts.Before(f.Since))
}

// Follow sends every entry after after that matches f, then every new one
// as it is appended, until ctx ends or send fails. after < 0 starts at the
// current head (only new entries). Entries from this process arrive at
// once; entries other replicas write, within the poll interval.
func (l *Ledger) Follow(ctx context.Context, after int64, f switchboard.ActivityFilter, send func(switchboard.ActivityEntry) error) error {
	if after < 0 {
		if err := l.sync(ctx); err != nil {
			return err
		}
		l.mu.Lock()
		after = 0
		if n := len(l.ring); n > 0 {
			after = l.ring[n-1].ID
		}
		l.mu.Unlock()
	}
	tick := time.NewTicker(l.poll)
	defer tick.Stop()
	fromStore := false
	for {
		l.mu.Lock()
		wake := l.wake
		l.mu.Unlock()
		batch, err := l.after(ctx, after, fromStore)
		if err != nil {
			return err
		}
		for _, e := range batch {
			if Matches(e, f) {
				if err := send(e); err != nil {
					return err
				}
			}
			after = e.ID
		}
		if len(batch) > 0 {
			fromStore = false
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			fromStore = false
		case <-tick.C:
			fromStore = true
		}
	}
}

// after returns entries after id: from the ring when it holds the next
// one, from the store otherwise (or when asked, to see other replicas').
func (l *Ledger) after(ctx context.Context, id int64, fromStore bool) ([]switchboard.ActivityEntry, error) {
	if !fromStore {
		l.mu.Lock()
		i := sort.Search(len(l.ring), func(i int) bool { return l.ring[i].ID > id })
		covered := len(l.ring) > 0 && l.ring[0].ID <= id+1
		var out []switchboard.ActivityEntry
		if covered && i < len(l.ring) && l.ring[i].ID == id+1 {
			// Only a contiguous run: a gap is an entry not observed yet.
			for j := i; j < len(l.ring) && l.ring[j].ID == id+1+int64(j-i); j++ {
				out = append(out, l.ring[j])
			}
		}
		l.mu.Unlock()
		if covered || len(out) > 0 {
			return out, nil
		}
	}
	read := time.Now()
	page, err := l.store.ActivityList(ctx, switchboard.ActivityFilter{AfterID: id, Limit: pageSize})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for _, e := range page {
		l.insertLocked(e)
	}
	l.mu.Unlock()
	return settled(page, id, read), nil
}

// settleWindow bounds how long an append can stay uncommitted after its
// entry was stamped: the Postgres store's bound on a write (twice its
// statement timeout, 5 s by default), twice over, with room for clocks
// of different replicas.
const settleWindow = 30 * time.Second

// settled is page (the entries after id, read at read) up to its first
// missing id, unless the entry after the gap is older than settleWindow.
// On a store of several chains an entry can commit after a later id of
// another chain; a follower that moved past the missing id would never
// see it. An id still missing that long after was never committed (a
// rolled-back append), and the follower moves on.
func settled(page []switchboard.ActivityEntry, id int64, read time.Time) []switchboard.ActivityEntry {
	next := id + 1
	for i, e := range page {
		if e.ID != next && read.Sub(e.Ts) < settleWindow {
			return page[:i]
		}
		next = e.ID + 1
	}
	return page
}
