// Package postgres is the switchboard.Store driver for deployments that run
// several daemon replicas against one Postgres database.
//
// It talks to Postgres through a pgx connection pool; no pgx type appears
// in its API. The schema is created by versioned migrations embedded in the
// binary and applied by Open under an advisory lock, so replicas starting
// together do not race. Options.Schema confines the store to one Postgres
// schema (created if missing), which is also how tests isolate themselves.
// Concurrency between replicas is handled in the database: compare-and-swap
// updates are single statements and activity appends lock the head of one
// of the ledger's chains, a free one (activity.go).
// Every operation is bounded (Options.StatementTimeout, bound.go): a lock
// held elsewhere makes a call fail with UNAVAILABLE, not wait forever.
// The SQL itself is shared with the sqlite driver (internal/sqlstore); this
// package holds the pool, the transactions, the chains' head locks and
// Postgres's error codes. The driver passes the storetest conformance
// suite, like the sqlite driver.
package postgres

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// Options tune a Store. A nil *Options means defaults.
type Options struct {
	// Schema, if set, is created when missing, receives the migrations and
	// is the only entry of every connection's search_path. Default: the
	// server's search_path (usually public).
	Schema string
	// MaxConns bounds the connection pool. Default: pgx's default
	// (the larger of 4 and the number of CPUs), or pool_max_conns in the DSN.
	MaxConns int32
	// StatementTimeout bounds every store operation: each statement, and
	// each wait for a lock, is cancelled by the server after it (the
	// session parameters statement_timeout and lock_timeout), and the whole
	// operation, the wait for a pool connection included, ends on the
	// client after twice it. A bound that is hit before anything was
	// written answers UNAVAILABLE. Default: the DSN's statement_timeout if
	// it sets one, else DefaultStatementTimeout; negative means no bound.
	StatementTimeout time.Duration
	// Durability sets synchronous_commit on every connection: process
	// means off (a server crash may lose the last few hundred milliseconds
	// of acknowledged commits; the daemon's crash loses nothing), power
	// means on. Default: the server's own setting (on unless changed).
	Durability switchboard.Durability
	// MaxBatch bounds how many concurrent transactions (the writes with a
	// ledger entry) are committed together as one (group commit,
	// group.go). 1 turns group commit off: every transaction then runs on
	// its own pool connection, as many at once as the pool has. Default
	// sqlstore.MaxBatch.
	MaxBatch int
	// Now stamps activity entries that arrive without a timestamp and
	// closes sessions closed at the zero time. Default time.Now.
	Now func() time.Time
}

// Activity paging limits (ActivityFilter.Limit).
const (
	DefaultActivityLimit = sqlstore.DefaultActivityLimit
	MaxActivityLimit     = sqlstore.MaxActivityLimit
)

// core is the shared SQL of both drivers; Store's methods are its.
type core = sqlstore.Store

// Store is a switchboard.Store backed by a Postgres database.
type Store struct {
	*core
	pool   *pgxpool.Pool
	closed atomic.Bool
	// timeout is the statement bound (Options.StatementTimeout); 0: none.
	timeout time.Duration
	// group queues writes for group commit (group.go).
	group sqlstore.Group[sqlstore.Tx]
	// chain is the ledger chain this store's appends try first
	// (activity.go): drawn at open, so replicas mostly keep apart.
	chain int
	// failCommit, set only by tests, fails a batch's COMMIT the way the
	// server would.
	failCommit func() error
	// batches and members count committed batches and the writes they
	// held, trips the round trips batches made (tests read them).
	batches, members, trips atomic.Int64
	// locks are the presence locks HoldLock keeps (lock.go); Close ends
	// them.
	locksMu sync.Mutex
	locks   map[*heldLock]bool
	// fence is the replica this store's sessions belong to (fence.go).
	fence *fenceState
}

// dialect is Postgres's: $n placeholders, timestamptz times.
var dialect = sqlstore.Dialect{
	Numbered:    true,
	Chains:      true,
	Time:        func(t time.Time) any { return t },
	MillisSince: `(EXTRACT(EPOCH FROM (CAST(? AS timestamptz) - created_at)) * 1000)::double precision`,
	MigrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    int         PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`,
	Translate: translate,
}

var _ switchboard.Store = (*Store)(nil)

// Open connects to the database named by dsn (a postgres:// URL or a
// keyword/value string), checks that it answers, and applies pending
// migrations.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	const op = "open postgres"
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %w", op, err)
	}
	if o.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.Schema}.Sanitize()
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	switch d, err := switchboard.ParseDurability(string(o.Durability)); {
	case err != nil:
		return nil, err
	case d == switchboard.DurabilityProcess:
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	case d == switchboard.DurabilityPower:
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	}
	timeout, err := statementTimeout(o.StatementTimeout, cfg.ConnConfig.RuntimeParams)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %w", op, err)
	}
	// pgx prepares each statement once per connection and keeps it
	// (QueryExecModeCacheStatement, 512 statements) unless the DSN asks
	// otherwise (default_query_exec_mode, e.g. for PgBouncer in transaction
	// mode); the call path's statements are constant texts so they hit it.
	fence := &fenceState{base: cfg.ConnConfig.RuntimeParams["application_name"]}
	if fence.base == "" {
		fence.base = "switchboard"
		cfg.ConnConfig.RuntimeParams["application_name"] = fence.base
	}
	cfg.BeforeConnect, cfg.AfterConnect = fence.beforeConnect, fence.afterConnect
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, translate(ctx, op, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, translate(ctx, op, err)
	}
	if err := migrate(ctx, pool, o.Schema, o.Now()); err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, timeout: timeout, chain: 1 + rand.IntN(chains), fence: fence}
	s.group.Max, s.group.Commit = o.MaxBatch, s.commit
	d := dialect
	d.Translate = s.translate
	s.core = sqlstore.New(seam{s}, d, o.Now)
	return s, nil
}

// Close closes the pool. It is safe to call more than once; every later
// call on the Store fails with UNAVAILABLE.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.releaseLocks()
		s.pool.Close()
	}
	return nil
}

// check refuses calls on a closed Store with a coded error.
func (s *Store) check(op string) error {
	if s.closed.Load() {
		return sqlstore.Closed(op)
	}
	return nil
}

// seam is the Store as sqlstore sees it: single statements on the pool
// (each commits by itself), transactions with pgx.BeginFunc.
type seam struct{ s *Store }

func (m seam) Read(op string) (sqlstore.Reader, error) {
	if err := m.s.check(op); err != nil {
		return nil, err
	}
	return conn{m.s.pool, m.s.deadline()}, nil
}

// Write runs fn on one pool connection, or in a batch (group commit). A
// write that the server cancels (statement_timeout, lock_timeout) was
// rolled back: every Write fn makes at most one change, and its follow-up
// read runs only when the change did not apply. One the client's deadline
// cuts off may have committed.
func (m seam) Write(ctx context.Context, op string, fn func(sqlstore.Querier) error) error {
	return m.s.write(ctx, op, false, "", func(t sqlstore.Tx) error { return fn(t) })
}

// Tx runs fn in one transaction, alone or in a batch. Until COMMIT is
// sent, any failure (a bound included) leaves nothing written.
func (m seam) Tx(ctx context.Context, op string, fn func(sqlstore.Tx) error) error {
	return m.s.write(ctx, op, true, "", fn)
}

// TxKeyed is Tx, run in its batch in the order of key (commit).
func (m seam) TxKeyed(ctx context.Context, op, key string, fn func(sqlstore.Tx) error) error {
	return m.s.write(ctx, op, true, key, fn)
}

// conn runs statements on the pool or in a transaction.
type conn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
	// deadline ends every statement (Store.deadline); zero: no bound.
	deadline time.Time
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	ctx, cancel := c.bounded(ctx)
	return row{c.q.QueryRow(ctx, query, args...), cancel}
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	ctx, cancel := c.bounded(ctx)
	r, err := c.q.Query(ctx, query, args...)
	if err != nil {
		cancel()
		return nil, err
	}
	return rows{r, cancel}, nil
}

// tx is a transaction; it appends to the ledger (activity.go), trying
// chain prefer first.
type tx struct {
	conn
	prefer int
}

var _ sqlstore.Tx = tx{}
