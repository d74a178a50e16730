package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// The group commit tests hold the writer connection so that writes queue
// up behind a leader, release it, and look at what the batch did. Which
// writes share a batch is then certain: the leader's batch is itself alone
// (taken before it waits for the connection), the next holds every write
// queued behind it.

func openGroup(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// until spins until cond holds (a state change of other goroutines that
// needs no time to pass, only scheduling).
func until(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 10_000_000 {
			t.Fatal("the writes never queued up")
		}
		runtime.Gosched()
	}
}

func (s *Store) queued() (leading bool, n int) {
	return s.group.Queued()
}

func (s *Store) stats() (batches, members int) {
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	return s.hot.batches, s.hot.members
}

func note(i int) *switchboard.ActivityEntry {
	return &switchboard.ActivityEntry{Actor: "test", Verb: "test.note", Target: fmt.Sprintf("note-%d", i)}
}

// batch runs lead as the leader while the writer is held, queues writes
// behind it, then releases the writer.
func batch(t *testing.T, s *Store, lead func() error, writes []func() error) (leadErr error, errs []error) {
	t.Helper()
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	taken := s.group.Taken()
	wg.Go(func() { leadErr = lead() })
	// The leader has taken its batch (itself alone) and waits for the
	// writer: what queues now is the next batch.
	until(t, func() bool { return s.group.Taken() > taken })
	errs = make([]error, len(writes))
	for i, w := range writes {
		wg.Go(func() { errs[i] = w() })
		until(t, func() bool { _, n := s.queued(); return n == i+1 }) // in this order
	}
	conn.Close()
	wg.Wait()
	return leadErr, errs
}

// chain checks the whole ledger links and returns it.
func chain(t *testing.T, s *Store) []switchboard.ActivityEntry {
	t.Helper()
	all, err := s.ActivityList(context.Background(), switchboard.ActivityFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for i, e := range all {
		if e.ID != int64(i+1) || e.PrevHash != prev || e.Hash != e.ComputeHash(prev) {
			t.Fatalf("entry %d (id %d) breaks the chain", i, e.ID)
		}
		prev = e.Hash
	}
	return all
}

// A member that fails inside a batch is rolled back alone, with its own
// error; the others commit, and their entries chain in batch order.
func TestGroupCommitMemberFailsAlone(t *testing.T) {
	s := openGroup(t)
	ctx := context.Background()
	dup := switchboard.Invocation{ID: "dup", Tool: "t", Status: switchboard.StatusDispatched, Input: json.RawMessage(`{}`)}
	if err := s.InvocationCreate(ctx, dup); err != nil {
		t.Fatal(err)
	}
	b0, m0 := s.stats()
	entries := make([]*switchboard.ActivityEntry, 6)
	writes := make([]func() error, len(entries))
	for i := range entries {
		entries[i] = note(i)
		writes[i] = func() error { return s.ActivityAppend(ctx, entries[i]) }
	}
	again := dup
	again.Status = switchboard.StatusSucceeded
	dupEntry := note(99)
	writes[3] = func() error { return s.InvocationCreateFinished(ctx, again, dupEntry) }
	leadErr, errs := batch(t, s, func() error { return s.ActivityAppend(ctx, note(-1)) }, writes)
	if leadErr != nil {
		t.Fatal(leadErr)
	}
	for i, err := range errs {
		if i == 3 {
			if switchboard.CodeOf(err) != switchboard.CodeConflict {
				t.Fatalf("the failing member: %v, want CONFLICT", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	if b, m := s.stats(); b-b0 != 2 || m-m0 != 1+len(writes) {
		t.Fatalf("%d transactions for %d writes; want 2 (the leader, then one batch of the rest)", b-b0, m-m0)
	}
	all := chain(t, s)
	if len(all) != 1+len(entries)-1 || dupEntry.ID != 0 {
		t.Fatalf("%d entries (the failed member's got id %d); want %d", len(all), dupEntry.ID, len(entries))
	}
	want := []string{"note--1", "note-0", "note-1", "note-2", "note-4", "note-5"}
	for i, e := range all {
		if e.Target != want[i] {
			t.Fatalf("entry %d is %s, want %s: appends chain in batch order", i, e.Target, want[i])
		}
	}
	for i, e := range entries {
		if i != 3 && (e.ID == 0 || e.Hash != all[e.ID-1].Hash) {
			t.Fatalf("member %d was told id %d hash %q, not what is stored", i, e.ID, e.Hash)
		}
	}
	if got, err := s.InvocationGet(ctx, "dup"); err != nil || got.Status != switchboard.StatusDispatched {
		t.Fatalf("the existing record: %+v %v", got, err)
	}
}

// A failed COMMIT fails every member of its batch, none of their writes
// exists, and the cached chain head is dropped, so the next append
// chains from what is really stored.
func TestGroupCommitFailedCommitFailsEveryMember(t *testing.T) {
	s := openGroup(t)
	ctx := context.Background()
	if err := s.ActivityAppend(ctx, note(0)); err != nil { // warms the cached head
		t.Fatal(err)
	}
	commits := 0
	s.hot.failCommit = func() error { // the leader's commit passes, the batch's fails
		commits++
		if commits == 2 {
			return errors.New("disk I/O error (injected)")
		}
		return nil
	}
	writes := make([]func() error, 4)
	entries := make([]*switchboard.ActivityEntry, len(writes))
	for i := range writes {
		entries[i] = note(10 + i)
		writes[i] = func() error { return s.ActivityAppend(ctx, entries[i]) }
	}
	inv := switchboard.Invocation{ID: "lost", Tool: "t", Status: switchboard.StatusSucceeded, Input: json.RawMessage(`{}`)}
	writes = append(writes, func() error { return s.InvocationCreateFinished(ctx, inv, note(20)) })
	leadErr, errs := batch(t, s, func() error { return s.ActivityAppend(ctx, note(1)) }, writes)
	if leadErr != nil {
		t.Fatal(leadErr)
	}
	for i, err := range errs {
		if err == nil {
			t.Fatalf("member %d succeeded although its COMMIT failed", i)
		}
	}
	for i, e := range entries {
		if e.ID != 0 {
			t.Fatalf("member %d's entry was given id %d by a failed batch", i, e.ID)
		}
	}
	if _, err := s.InvocationGet(ctx, "lost"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("the record of a failed batch: %v, want NOT_FOUND", err)
	}
	s.hot.mu.Lock()
	cached := s.hot.head.ok
	s.hot.mu.Unlock()
	if cached {
		t.Fatal("the cached chain head survived a failed COMMIT")
	}
	if err := s.ActivityAppend(ctx, note(2)); err != nil {
		t.Fatal(err)
	}
	if all := chain(t, s); len(all) != 3 || all[2].Target != "note-2" {
		t.Fatalf("ledger after the failed batch: %d entries", len(all))
	}
}

// A write whose caller gives up while it waits in the queue leaves it and
// writes nothing; the rest of the batch is unaffected.
func TestGroupCommitCancelledWhileQueued(t *testing.T) {
	s := openGroup(t)
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	gone := note(1)
	var goneErr error
	conn, err := s.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	taken := s.group.Taken()
	wg.Go(func() { s.ActivityAppend(ctx, note(0)) })
	until(t, func() bool { return s.group.Taken() > taken })
	wg.Go(func() { goneErr = s.ActivityAppend(cctx, gone) })
	until(t, func() bool { _, n := s.queued(); return n == 1 })
	kept := note(2)
	wg.Go(func() { s.ActivityAppend(ctx, kept) })
	until(t, func() bool { _, n := s.queued(); return n == 2 })
	cancel()
	until(t, func() bool { _, n := s.queued(); return n == 1 })
	conn.Close()
	wg.Wait()
	if switchboard.CodeOf(goneErr) != switchboard.CodeCancelled || gone.ID != 0 {
		t.Fatalf("the cancelled write: %v (id %d), want CANCELLED and nothing written", goneErr, gone.ID)
	}
	if all := chain(t, s); len(all) != 2 || kept.ID != 2 {
		t.Fatalf("%d entries, kept id %d", len(all), kept.ID)
	}
}

// Many writers at once: every acknowledged write is stored, the chain is
// exact, and the members add up.
func TestGroupCommitConcurrentWriters(t *testing.T) {
	s := openGroup(t)
	ctx := context.Background()
	const writers, each = 16, 20
	b0, m0 := s.stats()
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				var err error
				if i%2 == 0 {
					err = s.ActivityAppend(ctx, note(w*each+i))
				} else {
					inv := switchboard.Invocation{ID: fmt.Sprintf("c-%d-%d", w, i), Tool: "t", Status: switchboard.StatusSucceeded, Input: json.RawMessage(`{}`)}
					err = s.InvocationCreateFinished(ctx, inv, note(w*each+i))
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if all := chain(t, s); len(all) != writers*each {
		t.Fatalf("%d entries, want %d", len(all), writers*each)
	}
	b, m := s.stats()
	if m-m0 != writers*each {
		t.Fatalf("%d writes committed, want %d", m-m0, writers*each)
	}
	t.Logf("%d writes in %d transactions", m-m0, b-b0)
}
