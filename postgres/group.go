package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// Group commit on Postgres (the contract is sqlstore.Group's). Transactions
// (seam.Tx: the writes with a ledger entry, among them the call path's
// InvocationFinish and InvocationCreateFinished, and others: runs,
// sessions, expiry) that arrive while a batch
// is being committed are committed together by the next leader, on one
// pool connection: BEGIN, each member inside SAVEPOINT member, then one
// COMMIT.
//
// What it saves is round trips and time holding the chain-head lock. A
// transaction written on its own would be BEGIN, the compare-and-swap,
// the head read FOR UPDATE, the append, COMMIT: five round trips, the head
// locked for the last three, so concurrent finishes queue on that lock.
// Here every statement whose answer no member needs before its next one
// travels with the next statement in one round trip (a pgx pipeline):
// BEGIN, SAVEPOINT and RELEASE, and the append itself (its entry is linked
// in Go from the head the batch holds, so the member knows its id and
// hash at once). The head is taken once per batch, with ids for every
// member that may append: right after the batch's first statement when
// its first member is keyed (a finish, which appends next), else at the
// first append (the batch then holds its lock, so the head it caches
// stays exact), and the
// last append goes with COMMIT. A lone finish is then two round trips
// (BEGIN, the compare-and-swap and the head; the append and COMMIT), and
// each further member of a batch one (its RELEASE, SAVEPOINT and
// compare-and-swap, after the member before's append). A batch of one runs without a savepoint, as the write alone.
// Several replicas' batches take different chains (activity.go), so they
// do not wait for each other.
//
// Single-statement writes (seam.Write: InvocationCreate, the
// compare-and-swaps) are not batched: each commits by itself on a pool
// connection of its own, as many at once as the pool has. They hold no
// shared lock, so the pool already runs them in parallel; batching them
// too measured slower on the call path at 64 in flight (bench/README.md,
// "Call path on Postgres").
//
// Statements of a batch of several run with the batch's context (the
// store's bound), not a member's: a member whose caller gives up must not
// cancel a statement of the shared transaction. A member's context is
// checked before its first statement.

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
	if len(live) == 0 {
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
	// A batch of one is the write alone, bounded by its caller's context
	// as well; a batch of several must not let one member's caller cancel
	// the others' statements.
	base := context.Background()
	if len(live) == 1 {
		base = live[0].Ctx
	}
	ctx, cancel := within(base, s.deadline())
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		fail(err)
		return
	}
	defer c.Release()
	// Only keyed writes (a finish, a finished call's create) surely append
	// after their first statement; most transactions (runs, sessions,
	// expiry) append nothing and must not hold a chain head.
	b := &batchTx{s: s, c: c, ctx: ctx, savepoints: len(live) > 1, pending: []stmt{{query: "BEGIN"}}, speculate: live[0].Key != ""}
	for i, m := range live {
		if err := b.member(m, i > 0, len(live)-i); err != nil {
			b.rollback()
			fail(err)
			return
		}
	}
	if !b.savepoints && live[0].Err != nil { // the one member failed: nothing to commit
		b.rollback()
		return
	}
	if s.failCommit != nil {
		if err := s.failCommit(); err != nil {
			b.rollback()
			fail(err)
			return
		}
	}
	if err := b.commit(); err != nil {
		b.rollback()
		if !errors.Is(err, errMemberFailed) {
			fail(err)
		}
		return
	}
	s.batches.Add(1)
	s.members.Add(int64(len(live)))
}

// errMemberFailed: the batch's one member failed at COMMIT's round trip,
// with its own error (set); the others have nothing to be told.
var errMemberFailed = errors.New("the batch's member failed")

// batchTx is the transaction of a batch as its members see it
// (sqlstore.Tx). Statements without an answer a member needs wait in
// pending and go in the same round trip as the next statement: BEGIN,
// SAVEPOINT and RELEASE, and an append (its entry is linked, so the
// member knows its id and hash before it is stored). The last of them go
// with COMMIT.
type batchTx struct {
	s   *Store
	c   *pgxpool.Conn
	ctx context.Context
	// savepoints: each member runs inside a savepoint of its own (a batch
	// of one runs without, as the write alone would).
	savepoints bool
	pending    []stmt
	// broken is set when a statement of the batch's own (pending) failed:
	// the transaction cannot go on.
	broken error
	// cur is the member running; saved is the chain head before it.
	cur   *sqlstore.Member[sqlstore.Tx]
	saved chainHead
	// head is the chain head after the last append of this batch; the
	// batch holds the head's row lock from its first append on. ids are
	// entry ids drawn with it and not used yet.
	head chainHead
	ids  []int64
	// left is how many members, the running one included, may still
	// append: the ids drawn with the head.
	left int
	// speculate: the next statement sent takes the head with it; busy:
	// it found every chain held.
	speculate, busy bool
}

// stmt is a pending statement; owner is set for an append, the member
// whose entry it stores, and saved is the chain head before that member.
type stmt struct {
	query string
	args  []any
	owner *sqlstore.Member[sqlstore.Tx]
	saved chainHead
}

var _ sqlstore.Tx = (*batchTx)(nil)

// member runs m's statements (inside a savepoint when the batch has
// several members). A failure of m's own is rolled back to the savepoint
// and kept as m.Err; the error returned fails the batch (the connection
// or the transaction is broken).
func (b *batchTx) member(m *sqlstore.Member[sqlstore.Tx], release bool, left int) error {
	if b.savepoints {
		if release {
			b.pending = append(b.pending, stmt{query: sqlRelease})
		}
		b.pending = append(b.pending, stmt{query: sqlSavepoint})
	}
	b.cur, b.saved, b.left = m, b.head, left
	b.busy = false // what an earlier member found is stale
	err := m.Fn(b)
	if b.broken != nil {
		return b.broken
	}
	if err == nil {
		return nil
	}
	if b.c.Conn().IsClosed() {
		return err
	}
	// Its own append, if still pending, goes with it unsent.
	if n := len(b.pending); n > 0 && b.pending[n-1].owner == m {
		b.pending = b.pending[:n-1]
	}
	b.head = b.saved // its entry is rolled back with it
	b.speculate = false
	m.Err = b.s.translate(m.Ctx, m.Op, err)
	if !b.savepoints {
		return nil // commit rolls the whole transaction back
	}
	_, err = b.Exec(b.ctx, sqlRollbackTo)
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
// hands its result to read. A pending append the server refuses is its
// member's failure: an earlier member is rolled back to its savepoint and
// told, and the rest is sent again; the running member's is returned as
// the statement's error. Any other failure of a pending statement sets
// broken (a failed connection may have run the COMMIT that followed).
func (b *batchTx) send(query string, args []any, read func(pgx.BatchResults) error) error {
	if b.broken != nil {
		return b.broken
	}
	bt := &pgx.Batch{}
	for _, p := range b.pending {
		bt.Queue(p.query, p.args...)
	}
	bt.Queue(query, args...)
	// The batch's first statement takes the chain head too when its
	// member is a finish (speculate), after it, so the row it locks is
	// still locked before the head.
	take := b.speculate && !b.head.ok
	b.speculate = false
	if take {
		bt.Queue(sqlTakeChain, b.s.chain, b.left)
	}
	pending := b.pending
	b.pending = nil
	b.s.trips.Add(1)
	br := b.c.SendBatch(b.ctx, bt)
	for i, p := range pending {
		_, err := br.Exec()
		if err == nil {
			continue
		}
		br.Close()
		var refused *pgconn.PgError
		switch {
		case p.owner == nil || !errors.As(err, &refused) || b.c.Conn().IsClosed():
			// Not an append the server refused (and skipped what followed):
			// the connection failed, and what it ran is not known.
			b.broken = err
			return err
		case p.owner == b.cur:
			return err
		}
		if !b.savepoints { // the one member's append, sent with COMMIT
			p.owner.Err = b.s.translate(p.owner.Ctx, p.owner.Op, err)
			return errMemberFailed
		}
		// An earlier member's append: its savepoint is the open one (what
		// followed was not run).
		if _, rerr := b.c.Exec(b.ctx, sqlRollbackTo); rerr != nil {
			b.broken = rerr
			return rerr
		}
		p.owner.Err = b.s.translate(p.owner.Ctx, p.owner.Op, err)
		b.head, b.saved = p.saved, p.saved
		b.pending = append(b.pending, pending[i+1:]...)
		return b.send(query, args, read)
	}
	err := read(br)
	if take {
		// Read even when the statement found no row (a compare-and-swap
		// that failed): the head was taken all the same.
		switch ids, terr := scanHead(br.QueryRow(), &b.head); {
		case terr == nil:
			b.ids = ids
		case errors.Is(terr, pgx.ErrNoRows): // every chain is held: Append waits for one
			b.busy = true
		case err == nil:
			err = terr
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// commit sends what is pending and COMMIT in one round trip. A pending
// append that fails fails its member alone: rolled back to its savepoint,
// and the rest committed; in a batch of one it is the member's failure
// (errMemberFailed, the transaction to be rolled back).
func (b *batchTx) commit() error {
	var tag pgconn.CommandTag
	b.cur, b.speculate = nil, false // no member is running: a failing append is an earlier member's
	err := b.send("COMMIT", nil, func(br pgx.BatchResults) (err error) {
		tag, err = br.Exec()
		return err
	})
	if err == nil && tag.String() != "COMMIT" {
		// Postgres answers COMMIT of an aborted transaction with ROLLBACK
		// and no error; no member may be told it was written.
		err = errors.New("the batch's transaction was aborted and rolled back at COMMIT")
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

// Append links p after the chain head — the entry an earlier member of
// this batch appended, else the head of a chain the batch takes (its lock
// is then held until the batch ends, so nothing else appends to that
// chain meanwhile) — and leaves its insert pending.
func (b *batchTx) Append(ctx context.Context, p *sqlstore.Entry) error {
	// An append still pending goes first: this entry chains from it, so it
	// must be known stored (or rolled back) before.
	for _, q := range b.pending {
		if q.owner != nil {
			if _, err := b.Exec(ctx, "SELECT 1"); err != nil {
				return err
			}
			break
		}
	}
	if !b.head.ok {
		busy := b.busy
		b.speculate, b.busy = false, false
		ids, err := takeChain(ctx, b, b.s.chain, b.left, busy, &b.head)
		if err != nil {
			return err
		}
		b.ids = ids
	}
	if len(b.ids) == 0 {
		var id int64
		if err := b.QueryRow(ctx, sqlNextID).Scan(&id); err != nil {
			return err
		}
		b.ids = []int64{id}
	}
	args := link(&b.head, b.ids[0], p)
	b.ids = b.ids[1:]
	// A late refusal rolls the whole member back to its savepoint: its
	// earlier entries and the chain lock it took go too.
	b.pending = append(b.pending, stmt{query: sqlAppend, args: args, owner: b.cur, saved: b.saved})
	return nil
}
