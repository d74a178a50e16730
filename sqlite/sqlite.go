// Package sqlite is the default switchboard.Store driver: one SQLite file in
// WAL mode, opened through the pure-Go modernc.org/sqlite driver so the
// daemon stays a single static binary.
//
// Every write goes through one connection, so writes serialize inside the
// process and transactions start with BEGIN IMMEDIATE (no lock upgrades, no
// deadlocks); reads use a separate pool of read-only connections and run
// concurrently with the writer. Writes take a fast path with statements
// prepared once (writer.go). The SQL itself is shared with the postgres
// driver (internal/sqlstore); this package holds the connections, the
// transactions, the ledger's chain-head cache and SQLite's error codes. The
// schema is created by versioned migrations embedded in the binary and
// applied by Open. The driver passes the storetest conformance suite, like
// the postgres driver.
//
// One process per database file: the SQLite store is meant to be opened by
// one daemon per data root. Several processes on one file stay correct
// (SQLite's locks serialize them, and the cached head of the activity chain
// is checked by the insert's uniqueness constraints), but every write then
// risks waiting up to the busy timeout and the fast path's caches miss;
// deployments with several replicas use the postgres driver.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Defaults for Options.
const (
	DefaultBusyTimeout = 5 * time.Second
	DefaultMaxReaders  = 4
)

// Memory is the path that opens a private in-memory database. It lives as
// long as the Store and is served by a single connection.
const Memory = ":memory:"

// Options tune a Store. A nil *Options means defaults.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// process before failing with UNAVAILABLE. Default DefaultBusyTimeout.
	BusyTimeout time.Duration
	// MaxReaders bounds the read-only connection pool. Default
	// DefaultMaxReaders.
	MaxReaders int
	// Now stamps activity entries that arrive without a timestamp and
	// closes sessions closed at the zero time. Default time.Now.
	Now func() time.Time
	// Durability picks synchronous=NORMAL (process, the default: WAL
	// commits survive a daemon crash) or FULL (power: each commit is
	// fsynced before it is acknowledged).
	Durability switchboard.Durability
}

// Activity paging limits (ActivityFilter.Limit).
const (
	DefaultActivityLimit = sqlstore.DefaultActivityLimit
	MaxActivityLimit     = sqlstore.MaxActivityLimit
)

// core is the shared SQL of both drivers; Store's methods are its.
type core = sqlstore.Store

// Store is a switchboard.Store backed by one SQLite database.
type Store struct {
	*core
	w      *sql.DB // exactly one connection: every write, serialized
	r      *sql.DB // read-only connections; the same pool as w in memory
	closed atomic.Bool
	hot    hot                    // the writer fast path (writer.go)
	group  sqlstore.Group[*wconn] // writes waiting for the writer: group commit (writer.go)
}

// dialect is SQLite's: ? placeholders, times as microseconds since the
// epoch (what Postgres keeps, so both drivers round-trip alike).
var dialect = sqlstore.Dialect{
	Time:        func(t time.Time) any { return t.UnixMicro() },
	MillisSince: `(? - created_at) / 1000.0`,
	MigrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`,
	Translate: translate,
}

var _ switchboard.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path, or a private
// in-memory database for Memory, and applies pending migrations.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	if path == "" {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "open sqlite: empty path")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.MaxReaders <= 0 {
		o.MaxReaders = DefaultMaxReaders
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if _, err := switchboard.ParseDurability(string(o.Durability)); err != nil {
		return nil, err
	}

	memory := path == Memory
	w, err := sql.Open("sqlite", dsn(path, o.BusyTimeout, o.Durability, false))
	if err != nil {
		return nil, translate(ctx, "open sqlite", err)
	}
	// One connection that is never recycled: writes serialize here, and an
	// in-memory database would vanish with its connection.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, r: w}
	s.group.Commit = s.commit
	s.core = sqlstore.New(seam{s}, dialect, o.Now)
	if err := connect(ctx, w, o.BusyTimeout); err != nil {
		w.Close()
		return nil, translate(ctx, "open sqlite", err)
	}
	if err := migrate(ctx, w, o.Now()); err != nil {
		w.Close()
		return nil, err
	}
	if !memory {
		r, err := sql.Open("sqlite", dsn(path, o.BusyTimeout, o.Durability, true))
		if err != nil {
			w.Close()
			return nil, translate(ctx, "open sqlite readers", err)
		}
		r.SetMaxOpenConns(o.MaxReaders)
		r.SetMaxIdleConns(o.MaxReaders)
		s.r = r
	}
	return s, nil
}

// connect opens the writer connection. Switching a new file to WAL needs an
// exclusive lock, and when two processes open the file at once SQLite
// reports SQLITE_BUSY at once instead of waiting (a lock upgrade deadlock),
// so retry for up to the busy timeout.
func connect(ctx context.Context, w *sql.DB, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for {
		err := w.PingContext(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(connectRetry):
		}
	}
}

// connectRetry spaces connect's attempts.
const connectRetry = 5 * time.Millisecond

// dsn builds a modernc.org/sqlite URI. The writer sets WAL (persistent in
// the file) and takes its lock at BEGIN; readers are query_only so a bug
// cannot write around the single writer.
func dsn(path string, busy time.Duration, d switchboard.Durability, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if d == switchboard.DurabilityPower {
		q.Add("_pragma", "synchronous(FULL)")
	} else {
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Set("_txlock", "immediate")
	}
	// SQLite decodes %HH in URI paths; escape what would end the path.
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + p + "?" + q.Encode()
}

// Close closes the database. It is safe to call more than once; every
// later call on the Store fails with UNAVAILABLE.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.closeHot()
	var err error
	if s.r != s.w {
		err = s.r.Close()
	}
	if werr := s.w.Close(); werr != nil {
		err = werr
	}
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "close sqlite: %w", err)
	}
	return nil
}

// check refuses calls on a closed Store with a coded error instead of
// database/sql's uncoded "database is closed".
func (s *Store) check(op string) error {
	if s.closed.Load() {
		return sqlstore.Closed(op)
	}
	return nil
}

// seam is the Store as sqlstore sees it: reads on the reader pool, every
// write on the writer fast path (writer.go).
type seam struct{ s *Store }

func (m seam) Read(op string) (sqlstore.Reader, error) {
	if err := m.s.check(op); err != nil {
		return nil, err
	}
	return pool{m.s.r}, nil
}

func (m seam) Write(ctx context.Context, op string, fn func(sqlstore.Querier) error) error {
	return m.s.fast(ctx, op, false, func(w *wconn) error { return fn(w) })
}

func (m seam) Tx(ctx context.Context, op string, fn func(sqlstore.Tx) error) error {
	return m.s.fast(ctx, op, true, func(w *wconn) error { return fn(w) })
}

// pool runs statements through database/sql: the reader pool, or the
// migration's transaction.
type pool struct {
	db interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

func (p pool) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := p.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (p pool) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return p.db.QueryRowContext(ctx, query, args...)
}

func (p pool) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := p.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// sqlRows is *sql.Rows with the Close of sqlstore.Rows (the error of Close
// is Err's).
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }
