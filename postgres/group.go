package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// Group commit on Postgres (the contract is sqlstore.Group's). Transactions
// (seam.Tx: the writes with a ledger entry, among them the call path's
// InvocationFinish and InvocationCreateFinished) that arrive while a batch
// is being committed are committed together by the next leader, on one
// pool connection: BEGIN, each member inside SAVEPOINT member, then one
// COMMIT.
//
// What it saves is round trips and time holding the chain-head lock. A
// lone finish is BEGIN, the compare-and-swap, the head read FOR UPDATE,
// the append, COMMIT: five round trips, the head locked for the last
// three, so concurrent finishes queue on that lock. In a batch the BEGIN
// and each SAVEPOINT and RELEASE travel in the same round trip as the
// member's next statement (a pgx pipeline), a chain's head is taken once
// per batch (the batch then holds its lock, so the head it caches stays
// exact), and one COMMIT ends all of it. Several replicas' batches take
// different chains (activity.go), so they do not wait for each other.
//
// Single-statement writes (seam.Write: InvocationCreate, the
// compare-and-swaps) are not batched: each commits by itself on a pool
// connection of its own, as many at once as the pool has. They hold no
// shared lock, so the pool already runs them in parallel; batching them
// too measured slower on the call path at 64 in flight (bench/README.md,
// "Call path on Postgres").
//
// Statements of a batch run with the batch's context (the store's bound),
// not a member's: a member whose caller gives up must not cancel a
// statement of the shared transaction. A member's context is checked
// before its first statement.

// Savepoint statements of a batch member.
const (
	sqlSavepoint  = `SAVEPOINT member`
	sqlRollbackTo = `ROLLBACK TO SAVEPOINT member`
	sqlRelease    = `RELEASE SAVEPOINT member`
)

// write runs a transaction (txn) through the group, and a single-statement
// write, or any write with group commit off, alone.
func (s *Store) write(ctx context.Context, op string, txn bool, key string, fn func(sqlstore.Tx) error) error {
	if err := s.check(op); err != nil {
		return err
	}
	if s.group.Max == 1 || !txn {
		return s.alone(ctx, op, txn, fn)
	}
	if err := ctx.Err(); err != nil {
		return s.translate(ctx, op, err)
	}
	m := &sqlstore.Member[sqlstore.Tx]{Ctx: ctx, Op: op, Tx: txn, Key: key, Fn: fn}
	if err := s.group.Do(m); err != nil {
		return s.translate(ctx, op, err)
	}
	return m.Err
}

// alone runs one write as it runs without group commit: a transaction
// (txn) or statements that each commit by themselves, on a pool connection
// of its own, bounded by the caller's context and the store's deadline.
func (s *Store) alone(ctx context.Context, op string, txn bool, fn func(sqlstore.Tx) error) error {
	deadline := s.deadline()
	actx, cancel := within(ctx, deadline)
	defer cancel()
	c, err := s.pool.Acquire(actx)
	if err != nil {
		return s.translate(ctx, op, err)
	}
	defer c.Release()
	if !txn {
		return s.inFlight(ctx, op, fn(tx{conn{c, deadline}, s.chain}))
	}
	t, err := c.Begin(actx)
	if err != nil {
		return s.translate(ctx, op, err)
	}
	if err := fn(tx{conn{t, deadline}, s.chain}); err != nil {
		t.Rollback(actx) // an expired actx closes the connection, which rolls back too
		return s.translate(ctx, op, err)
	}
	return s.inFlight(ctx, op, t.Commit(actx))
}

// commit is the group's Commit: batch as one transaction.
func (s *Store) commit(batch []*sqlstore.Member[sqlstore.Tx]) {
	live := make([]*sqlstore.Member[sqlstore.Tx], 0, len(batch))
	for _, m := range batch {
		if err := m.Ctx.Err(); err != nil { // checked before its first statement
			m.Err = s.translate(m.Ctx, m.Op, err)
			continue
		}
		live = append(live, m)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		m := live[0]
		m.Err = s.alone(m.Ctx, m.Op, m.Tx, m.Fn)
		return
	}
	// Members run in the order of the rows they lock first, not as they
	// came: two replicas' batches finishing the same invocations then lock
	// them in one order, and neither waits for a row the other holds while
	// holding one it wants (a deadlock Postgres breaks only after
	// deadlock_timeout, failing a member). Unkeyed members go first; the
	// chain head is taken SKIP LOCKED, so it makes no cycle.
	slices.SortStableFunc(live, func(a, b *sqlstore.Member[sqlstore.Tx]) int { return strings.Compare(a.Key, b.Key) })
	fail := func(err error) {
		for _, m := range live {
			if m.Err == nil {
				if cerr := s.check(m.Op); cerr != nil {
					m.Err = cerr // closed while this write waited
				} else {
					m.Err = s.inFlight(m.Ctx, m.Op, err)
				}
			}
		}
	}
	ctx, cancel := within(context.Background(), s.deadline())
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		fail(err)
		return
	}
	defer c.Release()
	b := &batchTx{s: s, c: c, ctx: ctx, pending: []string{"BEGIN"}}
	for i, m := range live {
		if err := b.member(m, i > 0); err != nil {
			b.rollback()
			fail(err)
			return
		}
	}
	if s.failCommit != nil {
		if err := s.failCommit(); err != nil {
			b.rollback()
			fail(err)
			return
		}
	}
	b.pending = nil // COMMIT releases the last savepoint
	tag, err := c.Exec(ctx, "COMMIT")
	if err == nil && tag.String() != "COMMIT" {
		// Postgres answers COMMIT of an aborted transaction with ROLLBACK
		// and no error; no member may be told it was written.
		err = errors.New("the batch's transaction was aborted and rolled back at COMMIT")
	}
	if err != nil {
		b.rollback()
		fail(err)
		return
	}
	s.batches.Add(1)
	s.members.Add(int64(len(live)))
}

// batchTx is the transaction of a batch as its members see it
// (sqlstore.Tx): statements queued in pending (BEGIN, SAVEPOINT, RELEASE)
// go in the same round trip as the next statement.
type batchTx struct {
	s       *Store
	c       *pgxpool.Conn
	ctx     context.Context
	pending []string
	// broken is set when a statement of the batch's own (pending) failed:
	// the transaction cannot go on.
	broken error
	// head is the chain head after the last append of this batch; the
	// batch holds the head's row lock from its first append on.
	head chainHead
}

var _ sqlstore.Tx = (*batchTx)(nil)

// member runs m's statements inside a savepoint. A failure of m's own is
// rolled back to the savepoint and kept as m.Err; the error returned fails
// the batch (the connection or the transaction is broken).
func (b *batchTx) member(m *sqlstore.Member[sqlstore.Tx], release bool) error {
	if release {
		b.pending = append(b.pending, sqlRelease)
	}
	b.pending = append(b.pending, sqlSavepoint)
	saved := b.head
	err := m.Fn(b)
	if err == nil && len(b.pending) > 0 { // m ran no statement: take its savepoint anyway
		_, err = b.Exec(b.ctx, "SELECT 1")
	}
	if b.broken != nil {
		return b.broken
	}
	if err == nil {
		return nil
	}
	if b.c.Conn().IsClosed() {
		return err
	}
	b.head = saved // its entry is rolled back with it
	m.Err = b.s.translate(m.Ctx, m.Op, err)
	_, err = b.c.Exec(b.ctx, sqlRollbackTo)
	return err
}

// rollback ends a failed batch's transaction; a connection it cannot be
// rolled back on is closed, which rolls it back too.
func (b *batchTx) rollback() {
	if b.c.Conn().IsClosed() {
		return
	}
	if _, err := b.c.Exec(b.ctx, "ROLLBACK"); err != nil {
		b.c.Conn().Close(context.Background())
	}
}

// send runs query after the pending statements, in one round trip, and
// hands its result to read. The pending statements' own failure sets
// broken.
func (b *batchTx) send(query string, args []any, read func(pgx.BatchResults) error) error {
	if b.broken != nil {
		return b.broken
	}
	bt := &pgx.Batch{}
	for _, p := range b.pending {
		bt.Queue(p)
	}
	bt.Queue(query, args...)
	n := len(b.pending)
	b.pending = b.pending[:0]
	br := b.c.SendBatch(b.ctx, bt)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			b.broken = err
			return err
		}
	}
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// Exec runs a statement with the batch's context (not ctx).
func (b *batchTx) Exec(_ context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := b.send(query, args, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// QueryRow runs a statement with the batch's context (not ctx) and reads
// its row when scanned.
func (b *batchTx) QueryRow(_ context.Context, query string, args ...any) sqlstore.Row {
	return batchRow{b, query, args}
}

type batchRow struct {
	b     *batchTx
	query string
	args  []any
}

func (r batchRow) Scan(dest ...any) error {
	return r.b.send(r.query, r.args, func(br pgx.BatchResults) error { return br.QueryRow().Scan(dest...) })
}

// Append inserts p after the chain head: the entry an earlier member of
// this batch appended, else the head of a chain the batch takes (its lock
// is then held until the batch ends, so nothing else appends to that
// chain meanwhile).
func (b *batchTx) Append(ctx context.Context, p *sqlstore.Entry) error {
	return appendOn(ctx, b, b.s.chain, &b.head, p)
}
