package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// The writer fast path. Every tool call writes twice (the invocation record,
// then its outcome with the ledger entry), so these writes skip what
// database/sql and the driver would redo on every call:
//
//   - statements are prepared once per connection and kept, BEGIN IMMEDIATE,
//     COMMIT and ROLLBACK included (parsing was a fifth of the write path);
//   - statements run with a context that cannot be cancelled, so neither
//     database/sql (a goroutine per transaction) nor the driver (one per
//     statement) starts a watcher goroutine. The caller's context still
//     bounds the wait for the writer connection and is checked before the
//     first statement; a running statement takes microseconds, and a wait
//     for another process's lock is bounded by the busy timeout.
//
// Every write of the store takes this path (sqlstore runs its statements
// on a wconn); reads and migrations use database/sql.

// maxHotStmts bounds the statement cache; a query text past it is prepared
// and finalized per call (only unusual from-status lists get there).
const maxHotStmts = 64

// Statements the fast path always uses.
const (
	sqlBegin    = `BEGIN IMMEDIATE`
	sqlCommit   = `COMMIT`
	sqlRollback = `ROLLBACK`
)

// hot is the state of the fast path: the statement cache of the writer
// connection and the cached head of the activity chain. Access is
// serialized by holding the writer connection (there is one) and by mu.
type hot struct {
	mu     sync.Mutex
	closed bool // set by closeHot: nothing may be prepared any more
	conn   any  // the driver connection stmts were prepared on
	stmts  map[string]driver.Stmt
	// head caches the last activity entry's id and hash so an append need
	// not read them. It is only a hint: the SQLite store is single-process
	// per data root, but if anything else appended (another process, a
	// statement outside the fast path) the insert collides with that
	// entry's id (the primary key), and the append reads the real head and
	// retries. Unset until the first append reads it.
	head chainHead
	// failCommit, set only by tests, fails a COMMIT the way the disk
	// would: the transaction is rolled back and err reported.
	failCommit func() error
	// batches and members count committed transactions and the writes
	// they held (tests read them).
	batches, members int
}

type chainHead struct {
	id   int64
	hash string
	ok   bool
}

// wconn is the writer connection during one fast-path call; it is the
// sqlstore.Querier (and, in a transaction, sqlstore.Tx) of the write.
// Statements ignore the caller's context (see bg).
type wconn struct {
	h    *hot
	c    driver.Conn
	head chainHead // set by an append; becomes h.head when the write commits
}

var _ sqlstore.Tx = (*wconn)(nil)

// Exec runs a statement and returns how many rows it changed.
func (w *wconn) Exec(_ context.Context, query string, args ...any) (int64, error) {
	res, err := w.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow runs a statement and returns its first row.
func (w *wconn) QueryRow(_ context.Context, query string, args ...any) sqlstore.Row {
	return w.queryRow(query, args...)
}

// bg is the context statements run with: it never ends, so no watcher
// goroutines are started (see above).
var bg = context.Background()

// fast runs fn on the writer connection, inside BEGIN IMMEDIATE … COMMIT
// when tx is set (otherwise a lone fn's statement commits by itself), and
// translates its error. A failed fn is rolled back. Calls that arrive
// while another write holds the connection are committed together
// (group commit, below); to the caller that is invisible.
func (s *Store) fast(ctx context.Context, op string, tx bool, fn func(*wconn) error) error {
	if err := s.check(op); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return translate(ctx, op, err)
	}
	m := &member{Ctx: ctx, Op: op, Tx: tx, Fn: fn}
	if err := s.group.Do(m); err != nil { // left the queue before its batch
		return translate(ctx, op, err)
	}
	return m.Err
}

// Group commit (the queue and the contract are sqlstore.Group's, shared
// with the postgres driver). The writer connection runs one transaction at
// a time; writes that arrive meanwhile queue up, and when it is free the
// first of them (the leader) takes the whole queue and commits it as one
// transaction: BEGIN IMMEDIATE, then each member's statements inside a
// SAVEPOINT of its own, then one COMMIT. A member whose statements fail is
// rolled back to its savepoint and gets its own error, the others are not
// affected; a failed BEGIN or COMMIT fails every member. Nobody is
// answered before the COMMIT that holds their writes returned. Ledger
// appends chain in batch order: each member's Append continues from the
// previous member's entry (wconn.head), a rolled-back member's entry is
// forgotten, and the cached chain head moves only when the COMMIT
// succeeds. When a batch is done, the leader hands the lead to the first
// write queued meanwhile. Batching saves a BEGIN/COMMIT pair and a WAL
// write per member, which is what an api call spent most of its store
// time on; it costs a lone writer nothing (a batch of one is exactly the
// old transaction, no savepoint).

// Savepoint statements of a batch member.
const (
	sqlSavepoint  = `SAVEPOINT member`
	sqlRollbackTo = `ROLLBACK TO member`
	sqlRelease    = `RELEASE member`
)

// member is one write in the group (sqlstore.Group, which queues the
// writes and elects the leader; commit below is its Commit).
type member = sqlstore.Member[*wconn]

// commit is the group's Commit: batch as one transaction, each member's Err set.
func (s *Store) commit(batch []*member) {
	live := make([]*member, 0, len(batch))
	for _, m := range batch {
		if err := m.Ctx.Err(); err != nil { // checked before its first statement
			m.Err = translate(m.Ctx, m.Op, err)
			continue
		}
		live = append(live, m)
	}
	if len(live) == 0 {
		return
	}
	fail := func(err error) {
		for _, m := range live {
			if m.Err == nil {
				if cerr := s.check(m.Op); cerr != nil {
					m.Err = cerr // closed while this write waited
				} else {
					m.Err = translate(m.Ctx, m.Op, err)
				}
			}
		}
	}
	if err := s.check(live[0].Op); err != nil {
		fail(err)
		return
	}
	// The connection is waited for without a caller's context: it is
	// shared by every member (and held only for the length of a write or,
	// in memory, a read).
	conn, err := s.w.Conn(bg)
	if err != nil {
		fail(err)
		return
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		s.hot.mu.Lock()
		defer s.hot.mu.Unlock()
		w, err := s.hot.attach(dc)
		if err != nil {
			return err
		}
		if len(live) == 1 {
			return w.one(live[0])
		}
		if _, err := w.exec(sqlBegin); err != nil {
			return err
		}
		for _, m := range live {
			if err := w.member(m); err != nil {
				return w.rollback(err)
			}
		}
		if err := w.commit(); err != nil {
			return w.rollback(err)
		}
		s.hot.batches, s.hot.members = s.hot.batches+1, s.hot.members+len(live)
		if w.head.ok {
			s.hot.head = w.head
		}
		return nil
	})
	if err != nil {
		fail(err)
	}
}

// one runs a batch of one member exactly as a lone write: its own
// transaction (or none, for a non-transactional write).
func (w *wconn) one(m *member) error {
	if !m.Tx {
		if err := m.Fn(w); err != nil {
			m.Err = translate(m.Ctx, m.Op, err)
		}
		return nil
	}
	if _, err := w.exec(sqlBegin); err != nil {
		return err
	}
	if err := m.Fn(w); err != nil {
		m.Err = translate(m.Ctx, m.Op, err)
		if rerr := w.rollback(err); rerr != err {
			return rerr // the connection is bad; the member has its error
		}
		return nil
	}
	if err := w.commit(); err != nil {
		return w.rollback(err)
	}
	w.h.batches, w.h.members = w.h.batches+1, w.h.members+1
	if w.head.ok {
		w.h.head = w.head
	}
	return nil
}

// commit sends COMMIT.
func (w *wconn) commit() error {
	if w.h.failCommit != nil {
		if err := w.h.failCommit(); err != nil {
			return err
		}
	}
	_, err := w.exec(sqlCommit)
	return err
}

// member runs m's statements inside a savepoint of the batch's
// transaction. A failure of m's own is rolled back to the savepoint and
// kept as m.Err; the error returned fails the whole batch.
func (w *wconn) member(m *member) error {
	saved := w.head
	if _, err := w.exec(sqlSavepoint); err != nil {
		return err
	}
	if err := m.Fn(w); err != nil {
		w.head = saved // its entry is rolled back with it
		m.Err = translate(m.Ctx, m.Op, err)
		if _, rerr := w.exec(sqlRollbackTo); rerr != nil {
			return rerr
		}
	}
	_, err := w.exec(sqlRelease)
	return err
}

// attach returns the fast path on dc, starting a fresh statement cache if
// the pool replaced the connection. The statements of a replaced
// connection cannot be finalized any more (it is closed); that happens only
// after a failed rollback, which finalizes them first (rollback).
func (h *hot) attach(dc any) (*wconn, error) {
	if h.closed {
		return nil, sql.ErrConnDone // the store is closing
	}
	c, ok := dc.(driver.Conn)
	if !ok {
		return nil, fmt.Errorf("sqlite driver connection is %T", dc)
	}
	if h.conn != dc {
		h.conn, h.stmts, h.head = dc, map[string]driver.Stmt{}, chainHead{}
	}
	return &wconn{h: h, c: c}, nil
}

// rollback undoes the transaction after err. If even ROLLBACK fails the
// connection's state is unknown: its statements are finalized and it is
// reported bad, so database/sql closes it and opens a fresh one.
func (w *wconn) rollback(err error) error {
	w.h.head = chainHead{}
	if _, rerr := w.exec(sqlRollback); rerr != nil {
		w.h.closeStmts()
		return fmt.Errorf("%w (rollback failed: %v; %w)", err, rerr, driver.ErrBadConn)
	}
	return err
}

// closeStmts finalizes every cached statement.
func (h *hot) closeStmts() {
	for q, st := range h.stmts {
		st.Close()
		delete(h.stmts, q)
	}
	h.conn = nil
}

// closeHot finalizes the cached statements and stops the fast path;
// Store.Close calls it before closing the connection, which SQLite would
// otherwise keep open as long as statements exist. A write that was
// waiting for the connection then fails with UNAVAILABLE.
func (s *Store) closeHot() {
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		return
	}
	defer conn.Close()
	conn.Raw(func(dc any) error {
		s.hot.mu.Lock()
		defer s.hot.mu.Unlock()
		s.hot.closed = true
		if s.hot.conn == dc {
			s.hot.closeStmts()
		}
		return nil
	})
}

// stmt returns the prepared statement for query, preparing it on first
// use. done must be called after use; it finalizes statements that were
// not cached.
func (w *wconn) stmt(query string) (st driver.Stmt, done func(), err error) {
	if st := w.h.stmts[query]; st != nil {
		return st, func() {}, nil
	}
	st, err = w.c.(driver.ConnPrepareContext).PrepareContext(bg, query)
	if err != nil {
		return nil, nil, err
	}
	if len(w.h.stmts) >= maxHotStmts {
		return st, func() { st.Close() }, nil
	}
	w.h.stmts[query] = st
	return st, func() {}, nil
}

// exec runs a statement that returns no rows.
func (w *wconn) exec(query string, args ...any) (driver.Result, error) {
	nv, err := namedValues(args)
	if err != nil {
		return nil, err
	}
	st, done, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.(driver.StmtExecContext).ExecContext(bg, nv)
}

// queryRow runs a statement and returns its first row, or sql.ErrNoRows.
func (w *wconn) queryRow(query string, args ...any) row {
	nv, err := namedValues(args)
	if err != nil {
		return row{err: err}
	}
	st, done, err := w.stmt(query)
	if err != nil {
		return row{err: err}
	}
	defer done()
	rows, err := st.(driver.StmtQueryContext).QueryContext(bg, nv)
	if err != nil {
		return row{err: err}
	}
	vals := make([]driver.Value, len(rows.Columns()))
	err = rows.Next(vals)
	if cerr := rows.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if errors.Is(err, io.EOF) {
		err = sql.ErrNoRows
	}
	return row{vals: vals, err: err}
}

// namedValues converts arguments to the driver's value types.
func namedValues(args []any) ([]driver.NamedValue, error) {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			a = int64(v)
		case nil, int64, float64, string, []byte, bool:
		default:
			return nil, fmt.Errorf("sqlite fast path: argument %d has unsupported type %T", i+1, a)
		}
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv, nil
}

// row is one result row of queryRow; Scan works like sql.Row.Scan for the
// destination types this package uses.
type row struct {
	vals []driver.Value
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(r.vals))
	}
	for i, d := range dest {
		if err := assign(d, r.vals[i]); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

// assign stores one driver value in a Scan destination.
func assign(dest any, v driver.Value) error {
	if sc, ok := dest.(sql.Scanner); ok {
		return sc.Scan(v)
	}
	switch d := dest.(type) {
	case *string:
		switch v := v.(type) {
		case string:
			*d = v
			return nil
		case []byte:
			*d = string(v)
			return nil
		}
	case *int64:
		if v, ok := v.(int64); ok {
			*d = v
			return nil
		}
	case *int:
		if v, ok := v.(int64); ok {
			*d = int(v)
			return nil
		}
	case *float64:
		switch v := v.(type) {
		case float64:
			*d = v
			return nil
		case int64:
			*d = float64(v)
			return nil
		}
	}
	return fmt.Errorf("cannot store %T in %T", v, dest)
}
