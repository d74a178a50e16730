// Package sqlstore is the SQL both store drivers share: column lists, row
// scanners, the compare-and-swap builders, the activity hash chain, and the
// migration runner over an fs.FS. Store implements every method of
// switchboard.Store but Close over a small seam that each driver provides:
// a Dialect (placeholders, time encoding, error translation, one SQL
// expression that differs) and a DB (where reads and writes run, and how a
// ledger entry is put after the chain head).
//
// The drivers (sqlite, postgres) keep their connection handling, their
// transactions and SQLite's single-writer fast path; they embed a *Store
// and add Close. Queries are written once with ? placeholders; for Postgres
// each text is rewritten to $n on first use and the rewrite is kept, so the
// statement texts of the call path stay constants that prepared-statement
// caches hit.
package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Activity paging limits (ActivityFilter.Limit); approvals page alike.
const (
	DefaultActivityLimit = 100
	MaxActivityLimit     = 1000
)

// Row is one result row (sql.Row, pgx.Row). Scan returns an error that
// errors.Is sql.ErrNoRows when there is no row.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set being read.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs the statements of a write: a pool, a connection or a
// transaction.
type Querier interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Reader is a Querier that also reads result sets.
type Reader interface {
	Querier
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Tx is a Querier inside one transaction that can also append to the
// activity ledger.
type Tx interface {
	Querier
	// Append puts e after the chain head (Entry.Link) and inserts it
	// (ActivityInsert with Entry.Args), so that no other append can fork
	// the chain.
	Append(ctx context.Context, e *Entry) error
}

// DB is where a driver runs the Store's statements. Every method refuses a
// closed store with UNAVAILABLE, and Write and Tx translate fn's error
// (Dialect.Translate) before returning it.
type DB interface {
	// Read returns where reads run.
	Read(op string) (Reader, error)
	// Write runs fn's statements on one writer; each may commit by
	// itself. It suits one statement, or a compare-and-swap and the read
	// of the row it failed against.
	Write(ctx context.Context, op string, fn func(Querier) error) error
	// Tx runs fn in one transaction: all of it or nothing.
	Tx(ctx context.Context, op string, fn func(Tx) error) error
}

// KeyedDB is a DB that commits several transactions as one (group
// commit) and runs them in the order of a key naming the row each locks
// first, so that two writers' batches lock shared rows in one order and
// cannot deadlock. A keyed transaction locks its row with its first
// statement and then appends to the ledger (a finish), which lets the
// Postgres driver take the chain head in that statement's round trip. A
// DB without it runs TxKeyed as Tx.
type KeyedDB interface {
	TxKeyed(ctx context.Context, op, key string, fn func(Tx) error) error
}

// txKeyed runs fn as DB.Tx, keyed by the row it locks first when the DB
// batches transactions.
func (s *Store) txKeyed(ctx context.Context, op, key string, fn func(Tx) error) error {
	if k, ok := s.db.(KeyedDB); ok {
		return k.TxKeyed(ctx, op, key, fn)
	}
	return s.db.Tx(ctx, op, fn)
}

// Dialect is what differs between the databases in SQL text and values.
type Dialect struct {
	// Numbered placeholders ($1, $2, ...) instead of ?.
	Numbered bool
	// Chains: the activity table has chain and seq columns (a ledger of
	// several chains); without them every entry is at position id of
	// chain 1.
	Chains bool
	// Time binds a non-zero time, already in UTC at microsecond precision,
	// as the database keeps it. Scanning accepts what it binds (timeCol).
	Time func(time.Time) any
	// MillisSince is an SQL expression: the milliseconds from created_at
	// to the time bound to its one placeholder, as a float.
	MillisSince string
	// MigrationsTable creates schema_migrations (version, name, applied_at)
	// if it does not exist.
	MigrationsTable string
	// Translate turns a driver error into a coded *switchboard.Error,
	// keeping errors that already carry a code.
	Translate func(ctx context.Context, op string, err error) error
}

// Store implements switchboard.Store, but Close, over a driver's DB.
type Store struct {
	db  DB
	d   Dialect
	now func() time.Time
	// rebound caches queries rewritten for numbered placeholders.
	rebound sync.Map // string → string
}

// New returns a Store over db. now stamps what arrives without a time.
func New(db DB, d Dialect, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, d: d, now: now}
}

// sql is query, written with ? placeholders, as the dialect wants it. The
// rewrite is made once per query text.
func (s *Store) sql(query string) string {
	if !s.d.Numbered {
		return query
	}
	if q, ok := s.rebound.Load(query); ok {
		return q.(string)
	}
	q := Numbered(query)
	s.rebound.Store(query, q)
	return q
}

// Numbered rewrites each ? of query to $1, $2, ...
func Numbered(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// time binds t (NULL for the zero time) at the precision the store keeps.
func (s *Store) time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.d.Time(normTime(t))
}

// stamp is t, or now when t is zero.
func (s *Store) stamp(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}

// read runs fn on the reader and translates its error.
func (s *Store) read(ctx context.Context, op string, fn func(Reader) error) error {
	q, err := s.db.Read(op)
	if err != nil {
		return err
	}
	return s.d.Translate(ctx, op, fn(q))
}

// check refuses calls on a closed store.
func (s *Store) check(op string) error {
	_, err := s.db.Read(op)
	return err
}

// notFound is NOT_FOUND for a missing kind id. The message names no
// store operation ("job get: ..."): it reaches API and CLI users as is.
func notFound(kind, id string) error {
	return switchboard.Errorf(switchboard.CodeNotFound, "no %s %q", kind, id)
}

// in is "IN (?, ?, ...)" for n values.
func in(n int) string {
	return "IN (?" + strings.Repeat(", ?", n-1) + ")"
}
