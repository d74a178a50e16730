package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// The group commit tests hold the chain head's row lock from a connection
// of their own, so that the leader's append waits for it and the writes
// behind it queue up; then they release it and look at what the batch did.
// Which writes share a batch is then certain: the leader's batch is itself
// alone (taken before it waits for the lock), the next holds every write
// queued behind it.

// openGroup opens a store in a fresh schema, and a second connection to
// that schema for holding locks.
func openGroup(t *testing.T) (*Store, *pgx.Conn) {
	t.Helper()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("sbtest_group_%d", time.Now().UnixNano())
	s, err := Open(ctx, dsn, &Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	holder, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		_, _ = holder.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		holder.Close(ctx)
	})
	return s, holder
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

// batch runs lead as the leader while the chain head is locked elsewhere,
// queues writes behind it in order, then releases the lock.
func batch(t *testing.T, s *Store, holder *pgx.Conn, lead func() error, writes []func() error) (leadErr error, errs []error) {
	t.Helper()
	ctx := context.Background()
	hold, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, sqlHoldChains); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	taken := s.group.Taken()
	wg.Go(func() { leadErr = lead() })
	// The leader has taken its batch (itself alone) and waits on the held
	// row: what queues now is the next batch.
	until(t, func() bool { return s.group.Taken() > taken })
	until(t, func() bool { return blockedBy(t, s, holder.PgConn().PID()) })
	errs = make([]error, len(writes))
	for i, w := range writes {
		wg.Go(func() { errs[i] = w() })
		until(t, func() bool { _, n := s.group.Queued(); return n == i+1 })
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return leadErr, errs
}

func note(i int) *switchboard.ActivityEntry {
	return &switchboard.ActivityEntry{Actor: "test", Verb: "test.note", Target: fmt.Sprintf("note-%d", i)}
}

// chain checks the whole ledger links and returns it.
func chain(t *testing.T, s *Store) []switchboard.ActivityEntry {
	t.Helper()
	all, err := s.ActivityList(context.Background(), switchboard.ActivityFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	type head struct {
		seq  int64
		hash string
	}
	heads := map[int]head{}
	for i, e := range all {
		c, seq := e.Position()
		h := heads[c]
		if seq != h.seq+1 || e.PrevHash != h.hash || e.Hash != e.ComputeHash(h.hash) || i > 0 && e.ID <= all[i-1].ID {
			t.Fatalf("entry %d (id %d) breaks the chain", i, e.ID)
		}
		heads[c] = head{seq, e.Hash}
	}
	return all
}

// A member that fails inside a batch is rolled back alone, with its own
// error; the others commit, and their entries chain in batch order.
func TestGroupCommitMemberFailsAlone(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	dup := switchboard.Invocation{ID: "dup", Tool: "t", Status: switchboard.StatusDispatched, Input: json.RawMessage(`{}`)}
	if err := s.InvocationCreate(ctx, dup); err != nil {
		t.Fatal(err)
	}
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
	// A finish whose compare-and-swap fails (the record is not in flight)
	// writes nothing and answers CONFLICT, inside the batch too.
	done := switchboard.Invocation{ID: "done", Tool: "t", Status: switchboard.StatusSucceeded, Input: json.RawMessage(`{}`)}
	if err := s.InvocationCreate(ctx, done); err != nil {
		t.Fatal(err)
	}
	lateEntry := note(98)
	writes = append(writes, func() error {
		_, err := s.InvocationFinish(ctx, done, lateEntry, switchboard.StatusDispatched)
		return err
	})
	// A member that fails after its append: its entry must be forgotten
	// (the next member chains from the one before it), and its error is
	// its own.
	boom := switchboard.Errorf(switchboard.CodeInvalidInput, "member refused (test)")
	writes[1] = func() error {
		return s.write(ctx, "test append then fail", true, "", func(t sqlstore.Tx) error {
			p, err := s.core.NewEntry("test", note(1))
			if err != nil {
				return err
			}
			if err := t.Append(ctx, p); err != nil {
				return err
			}
			return boom
		})
	}
	b0, m0 := s.batches.Load(), s.members.Load()
	leadErr, errs := batch(t, s, holder, func() error { return s.ActivityAppend(ctx, note(-1)) }, writes)
	if leadErr != nil {
		t.Fatal(leadErr)
	}
	for i, err := range errs {
		if i == 1 {
			if !errors.Is(err, boom) {
				t.Fatalf("the member that failed after appending: %v, want its own error", err)
			}
			continue
		}
		if i == 3 || i == len(errs)-1 {
			if switchboard.CodeOf(err) != switchboard.CodeConflict {
				t.Fatalf("failing member %d: %v, want CONFLICT", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	if b, m := s.batches.Load(), s.members.Load(); b-b0 != 2 || m-m0 != int64(1+len(writes)) {
		t.Fatalf("%d batches of %d writes; want the leader alone and the %d queued writes in one", b-b0, m-m0, len(writes))
	}
	all := chain(t, s)
	want := []string{"note--1", "note-0", "note-2", "note-4", "note-5"}
	if len(all) != len(want) || dupEntry.ID != 0 || lateEntry.ID != 0 {
		t.Fatalf("%d entries (the failed members got ids %d, %d); want %d", len(all), dupEntry.ID, lateEntry.ID, len(want))
	}
	for i, e := range all {
		if e.Target != want[i] {
			t.Fatalf("entry %d is %s, want %s: appends chain in batch order", i, e.Target, want[i])
		}
	}
	stored := map[int64]string{}
	for _, e := range all {
		stored[e.ID] = e.Hash
	}
	for i, e := range entries {
		// The rolled-back member's id is not reused: ids come from a
		// sequence, which a rollback does not move back.
		if i != 1 && i != 3 && (e.ID == 0 || e.Hash != stored[e.ID]) {
			t.Fatalf("member %d was told id %d hash %q, not what is stored", i, e.ID, e.Hash)
		}
	}
	if got, err := s.InvocationGet(ctx, "dup"); err != nil || got.Status != switchboard.StatusDispatched {
		t.Fatalf("the existing record: %+v %v", got, err)
	}
	if err := s.ActivityAppend(ctx, note(7)); err != nil || note7ID(t, s) <= all[len(all)-1].ID || len(chain(t, s)) != len(want)+1 {
		t.Fatalf("append after the batch: %v", err)
	}
}

func note7ID(t *testing.T, s *Store) int64 {
	all := chain(t, s)
	return all[len(all)-1].ID
}

// A failed COMMIT fails every member of its batch and none of their
// writes exists; the next append chains from what is really stored.
func TestGroupCommitFailedCommitFailsEveryMember(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	if err := s.ActivityAppend(ctx, note(0)); err != nil {
		t.Fatal(err)
	}
	s.failCommit = func() error { return errors.New("could not write to WAL (injected)") }
	writes := make([]func() error, 4)
	entries := make([]*switchboard.ActivityEntry, len(writes))
	for i := range writes {
		entries[i] = note(10 + i)
		writes[i] = func() error { return s.ActivityAppend(ctx, entries[i]) }
	}
	inv := switchboard.Invocation{ID: "lost", Tool: "t", Status: switchboard.StatusSucceeded, Input: json.RawMessage(`{}`)}
	writes = append(writes, func() error { return s.InvocationCreateFinished(ctx, inv, note(20)) })
	// The leader's batch of one fails at its COMMIT too.
	leadErr, errs := batch(t, s, holder, func() error { return s.ActivityAppend(ctx, note(1)) }, writes)
	if leadErr == nil {
		t.Fatal("the leader succeeded although its COMMIT failed")
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
	s.failCommit = nil
	if err := s.ActivityAppend(ctx, note(2)); err != nil {
		t.Fatal(err)
	}
	if all := chain(t, s); len(all) != 2 || all[1].Target != "note-2" {
		t.Fatalf("ledger after the failed batch: %d entries", len(all))
	}
}

// A write whose caller gives up while it waits in the queue leaves it and
// writes nothing; the rest of the batch is unaffected.
func TestGroupCommitCancelledWhileQueued(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	hold, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, sqlHoldChains); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone, kept := note(1), note(2)
	var goneErr error
	var wg sync.WaitGroup
	taken := s.group.Taken()
	wg.Go(func() { s.ActivityAppend(ctx, note(0)) })
	until(t, func() bool { return s.group.Taken() > taken })
	wg.Go(func() { goneErr = s.ActivityAppend(cctx, gone) })
	until(t, func() bool { _, n := s.group.Queued(); return n == 1 })
	wg.Go(func() { s.ActivityAppend(ctx, kept) })
	until(t, func() bool { _, n := s.group.Queued(); return n == 2 })
	cancel()
	until(t, func() bool { _, n := s.group.Queued(); return n == 1 })
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if switchboard.CodeOf(goneErr) != switchboard.CodeCancelled || gone.ID != 0 {
		t.Fatalf("the cancelled write: %v (id %d), want CANCELLED and nothing written", goneErr, gone.ID)
	}
	if all := chain(t, s); len(all) != 2 || kept.ID != 2 {
		t.Fatalf("%d entries, kept id %d", len(all), kept.ID)
	}
}

// Two stores on one schema (two replicas) with many writers each: every
// acknowledged write is stored and the chain is exact, the head's row lock
// interleaving the two stores' batches.
func TestGroupCommitConcurrentWritersTwoStores(t *testing.T) {
	s, _ := openGroup(t)
	ctx := context.Background()
	var schema string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, os.Getenv("SWITCHBOARD_TEST_POSTGRES"), &Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*each)
	for r, st := range []*Store{s, other} {
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					n := (r*writers+w)*each + i
					var err error
					if i%2 == 0 {
						err = st.ActivityAppend(ctx, note(n))
					} else {
						inv := switchboard.Invocation{ID: fmt.Sprintf("c-%d", n), Tool: "t", Status: switchboard.StatusSucceeded, Input: json.RawMessage(`{}`)}
						err = st.InvocationCreateFinished(ctx, inv, note(n))
					}
					if err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if all := chain(t, s); len(all) != 2*writers*each {
		t.Fatalf("%d entries, want %d", len(all), 2*writers*each)
	}
	t.Logf("replica 1: %d writes in batches of two or more, in %d batches; replica 2: %d in %d",
		s.members.Load(), s.batches.Load(), other.members.Load(), other.batches.Load())
}

// sqlHoldChains locks every chain's head, so that an append waits.
const sqlHoldChains = `SELECT id FROM activity_head FOR UPDATE`

// An append travels with the statement after it (or with COMMIT), so the
// database refuses it only then: the refusal is still its member's alone,
// whether the next statement is another member's, the batch's COMMIT or
// the COMMIT of a batch of one, and every other member commits, chained
// without the refused entry.
func TestGroupCommitAppendRefusedLate(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	bad := func(i int) *switchboard.ActivityEntry {
		e := note(i)
		e.Target += "\x00" // text Postgres refuses, known only when the insert runs
		return e
	}
	// Alone: its append goes with COMMIT.
	lone := bad(0)
	if err := s.ActivityAppend(ctx, lone); err == nil || lone.ID != 0 {
		t.Fatalf("a lone refused append: %v (id %d), want its error and nothing written", err, lone.ID)
	}
	entries := []*switchboard.ActivityEntry{note(1), bad(2), note(3), note(4), bad(5)}
	writes := make([]func() error, len(entries))
	for i, e := range entries {
		writes[i] = func() error { return s.ActivityAppend(ctx, e) }
	}
	// An invocation finished by a member whose append is then refused
	// stays as it was: the member's whole write is rolled back.
	inv := switchboard.Invocation{ID: "inv", Tool: "t", Status: switchboard.StatusDispatched, Input: json.RawMessage(`{}`)}
	if err := s.InvocationCreate(ctx, inv); err != nil {
		t.Fatal(err)
	}
	done := inv
	done.Status = switchboard.StatusSucceeded
	writes = append(writes, func() error {
		_, err := s.InvocationFinish(ctx, done, bad(6), switchboard.StatusDispatched)
		return err
	})
	leadErr, errs := batch(t, s, holder, func() error { return s.ActivityAppend(ctx, note(-1)) }, writes)
	if leadErr != nil {
		t.Fatal(leadErr)
	}
	for i, err := range errs {
		if refused := i == 1 || i == 4 || i == 5; refused != (err != nil) {
			t.Fatalf("member %d: %v (refused: %v)", i, err, refused)
		}
	}
	all := chain(t, s)
	want := []string{"note--1", "note-1", "note-3", "note-4"}
	if len(all) != len(want) {
		t.Fatalf("%d entries, want %d", len(all), len(want))
	}
	for i, e := range all {
		if e.Target != want[i] {
			t.Fatalf("entry %d is %s, want %s", i, e.Target, want[i])
		}
	}
	for i, e := range entries {
		if (i == 1 || i == 4) != (e.ID == 0) {
			t.Fatalf("member %d was told id %d", i, e.ID)
		}
	}
	if got, err := s.InvocationGet(ctx, "inv"); err != nil || got.Status != switchboard.StatusDispatched {
		t.Fatalf("the invocation whose finish was refused: %+v %v", got, err)
	}
	// The last member's refusal came with COMMIT: the rest was committed
	// by a second COMMIT, and the ledger goes on from what is stored.
	if err := s.ActivityAppend(ctx, note(7)); err != nil || len(chain(t, s)) != len(want)+1 {
		t.Fatalf("append after the batch: %v", err)
	}
}

// What a finish costs in round trips: alone, two (BEGIN, the
// compare-and-swap and the chain head with the entry's id; the append
// with COMMIT); in a batch, one more for each further finish (its
// savepoint and compare-and-swap, with the append before it).
func TestGroupCommitRoundTrips(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	finish := func(id string) func() error {
		inv := switchboard.Invocation{ID: id, Tool: "t", Status: switchboard.StatusDispatched, Input: json.RawMessage(`{}`)}
		if err := s.InvocationCreate(ctx, inv); err != nil {
			t.Fatal(err)
		}
		inv.Status = switchboard.StatusSucceeded
		return func() error {
			_, err := s.InvocationFinish(ctx, inv, note(0), switchboard.StatusDispatched)
			return err
		}
	}
	lone := finish("lone")
	t0 := s.trips.Load()
	if err := lone(); err != nil {
		t.Fatal(err)
	}
	if n := s.trips.Load() - t0; n != 2 {
		t.Fatalf("a lone finish took %d round trips, want 2", n)
	}
	writes := make([]func() error, 6)
	for i := range writes {
		writes[i] = finish(fmt.Sprintf("inv-%d", i))
	}
	lead := finish("lead")
	// The leader finds every chain held and waits for one (a round trip
	// more: three); the writes queue behind it and go as one batch.
	t0 = s.trips.Load()
	leadErr, errs := batch(t, s, holder, lead, writes)
	if err := errors.Join(append(errs, leadErr)...); err != nil {
		t.Fatal(err)
	}
	if n := s.trips.Load() - t0; n != int64(3+len(writes)+1) {
		t.Fatalf("the waiting leader and a batch of %d finishes took %d round trips, want 3 + %d", len(writes), n, len(writes)+1)
	}
	if all := chain(t, s); len(all) != 2+len(writes) {
		t.Fatalf("%d entries", len(all))
	}
}

// The batch's first statement takes the chain head with it, before it
// knows whether its member will append: a first finish whose
// compare-and-swap fails leaves the head to the members after it, and a
// lone one commits nothing and holds nothing.
func TestGroupCommitFirstFinishConflicts(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	create := func(id string, st switchboard.Status) switchboard.Invocation { return created(t, s, id, st) }
	finish := func(inv switchboard.Invocation, e *switchboard.ActivityEntry) error {
		_, err := s.InvocationFinish(ctx, inv, e, switchboard.StatusDispatched)
		return err
	}
	lone, loneEntry := create("lone", switchboard.StatusSucceeded), note(0)
	if err := finish(lone, loneEntry); switchboard.CodeOf(err) != switchboard.CodeConflict || loneEntry.ID != 0 {
		t.Fatalf("a lone finish of a finished call: %v (id %d), want CONFLICT and nothing written", err, loneEntry.ID)
	}
	// Keys order the batch: "a-done" runs first and conflicts.
	done, b, c := create("a-done", switchboard.StatusSucceeded), create("b", switchboard.StatusDispatched), create("c", switchboard.StatusDispatched)
	entries := []*switchboard.ActivityEntry{note(1), note(2), note(3)}
	leadErr, errs := batch(t, s, holder, func() error { return s.ActivityAppend(ctx, note(-1)) }, []func() error{
		func() error { return finish(c, entries[2]) },
		func() error { return finish(done, entries[0]) },
		func() error { return finish(b, entries[1]) },
	})
	if leadErr != nil || errs[0] != nil || errs[2] != nil || switchboard.CodeOf(errs[1]) != switchboard.CodeConflict {
		t.Fatalf("leader %v, members %v; want the first finish CONFLICT, the others written", leadErr, errs)
	}
	all := chain(t, s)
	if len(all) != 3 || all[1].Target != "note-2" || all[2].Target != "note-3" || entries[0].ID != 0 {
		t.Fatalf("%d entries; want the leader's, then b's and c's", len(all))
	}
	// Nothing holds the head now: another store appends at once.
	if err := s.ActivityAppend(ctx, note(4)); err != nil || len(chain(t, s)) != 4 {
		t.Fatalf("append after the batch: %v", err)
	}
}

// created stores invocation id in status st and returns it as a finish
// to succeeded would write it.
func created(t *testing.T, s *Store, id string, st switchboard.Status) switchboard.Invocation {
	t.Helper()
	inv := switchboard.Invocation{ID: id, Tool: "t", Status: st, Input: json.RawMessage(`{}`)}
	if err := s.InvocationCreate(context.Background(), inv); err != nil {
		t.Fatal(err)
	}
	inv.Status = switchboard.StatusSucceeded
	return inv
}

// connect opens another connection like holder, closed with the test.
func connect(t *testing.T, holder *pgx.Conn) *pgx.Conn {
	t.Helper()
	c, err := pgx.ConnectConfig(context.Background(), holder.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// blockedBy reports whether a backend waits for a lock pid holds.
func blockedBy(t *testing.T, s *Store, pid uint32) bool {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A transaction without a ledger entry (runs, sessions, jobs, expiry: most
// of seam.Tx) takes no chain head: it has nothing to append.
func TestGroupCommitTxWithoutEntryTakesNoChain(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	other := connect(t, holder)
	if _, err := other.Exec(ctx, `SELECT pg_advisory_lock(42)`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- seam{s}.Tx(ctx, "no entry", func(tx sqlstore.Tx) error {
			var n int
			if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&n); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(42)`)
			return err
		})
	}()
	until(t, func() bool { return blockedBy(t, s, other.PgConn().PID()) })
	var free int
	if err := holder.QueryRow(ctx, `SELECT count(*) FROM (SELECT id FROM activity_head FOR UPDATE SKIP LOCKED) h`).Scan(&free); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_unlock(42)`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if free != chains {
		t.Fatalf("%d of %d chains free while a transaction without an entry ran", free, chains)
	}
}

// A first statement that found every chain held says so to its member's
// append alone: a later member takes a free chain, not waiting for its
// preferred one while it holds its own invocation row.
func TestGroupCommitBusyIsForgotten(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	other := connect(t, holder)
	create := func(id string, st switchboard.Status) switchboard.Invocation { return created(t, s, id, st) }
	done, b := create("a-done", switchboard.StatusSucceeded), create("b", switchboard.StatusDispatched)
	// holder: the store's preferred chain, then (in a savepoint) all others.
	hold, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `SELECT id FROM activity_head WHERE id = $1 FOR UPDATE`, s.chain); err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SAVEPOINT others`); err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, sqlHoldChains); err != nil {
		t.Fatal(err)
	}
	// other: the leader's lock, and b's row.
	if _, err := other.Exec(ctx, `SELECT pg_advisory_lock(42)`); err != nil {
		t.Fatal(err)
	}
	rows, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Rollback(ctx)
	if _, err := rows.Exec(ctx, `SELECT id FROM invocations WHERE id = 'b' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	taken := s.group.Taken()
	leadDone := make(chan error, 1)
	go func() {
		leadDone <- seam{s}.Tx(ctx, "lead", func(tx sqlstore.Tx) error {
			_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(42)`)
			return err
		})
	}()
	until(t, func() bool { return s.group.Taken() > taken })
	var wg sync.WaitGroup
	var doneErr, bErr error
	wg.Go(func() { _, doneErr = s.InvocationFinish(ctx, done, note(1), switchboard.StatusDispatched) })
	until(t, func() bool { _, n := s.group.Queued(); return n == 1 })
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		_, bErr = s.InvocationFinish(ctx, b, note(2), switchboard.StatusDispatched)
	}()
	until(t, func() bool { _, n := s.group.Queued(); return n == 2 })
	if _, err := rows.Exec(ctx, `SELECT pg_advisory_unlock(42)`); err != nil {
		t.Fatal(err)
	}
	if err := <-leadDone; err != nil {
		t.Fatal(err)
	}
	// The batch's first finish conflicts (every chain held); the second
	// waits for b's row.
	until(t, func() bool { return blockedBy(t, s, other.PgConn().PID()) })
	if _, err := hold.Exec(ctx, `ROLLBACK TO SAVEPOINT others`); err != nil {
		t.Fatal(err)
	}
	if err := rows.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for waited := false; !waited; {
		select {
		case <-bDone:
			waited = true
			continue
		default:
		}
		if blockedBy(t, s, holder.PgConn().PID()) {
			hold.Rollback(ctx)
			<-bDone
			t.Fatal("b's finish waited for the held preferred chain while others were free")
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if switchboard.CodeOf(doneErr) != switchboard.CodeConflict || bErr != nil {
		t.Fatalf("a-done %v, b %v; want CONFLICT and written", doneErr, bErr)
	}
}
