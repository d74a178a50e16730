package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/postgres"
)

// TestLockedTableBounded (issue 14 item 4): a write that waits for a lock
// held elsewhere ends by the store's own bound with UNAVAILABLE, and
// nothing was written.
func TestLockedTableBounded(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 2, StatementTimeout: 300 * time.Millisecond})
	must(t, err)
	defer s.Close()

	locker, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer locker.Close(context.Background())
	lockTx, err := locker.Begin(ctx)
	must(t, err)
	_, err = lockTx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{schema, "invocations"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
	must(t, err)

	inv := switchboard.Invocation{ID: "inv-locked", Tool: "t", Status: switchboard.StatusDispatched}
	err = s.InvocationCreate(ctx, inv)
	if ctx.Err() != nil {
		t.Fatalf("the write waited for the test's outer deadline: %v", err)
	}
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("write under a table lock: %v, want UNAVAILABLE saying nothing was written", err)
	}
	if _, err := s.InvocationGet(ctx, inv.ID); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("read under a table lock: %v, want UNAVAILABLE", err)
	}

	must(t, lockTx.Rollback(ctx))
	if _, err := s.InvocationGet(ctx, inv.ID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("after the lock was released: %v, want NOT_FOUND (nothing written)", err)
	}
	must(t, s.InvocationCreate(ctx, inv))
}

// TestStatementTimeoutFromDSN: the DSN's statement_timeout is the bound
// when Options sets none, so `serve --store` can change it.
func TestStatementTimeoutFromDSN(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	s, err := postgres.Open(ctx, dsn+sep+"statement_timeout=250ms", &postgres.Options{Schema: schema, MaxConns: 2})
	must(t, err)
	defer s.Close()
	locker, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer locker.Close(context.Background())
	lockTx, err := locker.Begin(ctx)
	must(t, err)
	defer lockTx.Rollback(context.Background())
	_, err = lockTx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{schema, "invocations"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
	must(t, err)
	err = s.InvocationCreate(ctx, switchboard.Invocation{ID: "inv-dsn", Tool: "t", Status: switchboard.StatusDispatched})
	if ctx.Err() != nil || switchboard.CodeOf(err) != switchboard.CodeUnavailable || !strings.Contains(err.Error(), "250ms") {
		t.Fatalf("write under a table lock with statement_timeout=250ms: %v, want UNAVAILABLE naming 250ms", err)
	}
}

func TestBadStatementTimeoutDSN(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://postgres@127.0.0.1:1/test?statement_timeout=soon", nil)
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("Open with statement_timeout=soon: %v, want INVALID_INPUT", err)
	}
}

// A store URL whose search_path names a schema that does not exist is
// the operator's mistake to fix, said as such: INVALID_INPUT naming it.
func TestOpenWithMissingSearchPathSchema(t *testing.T) {
	dsn := testDSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	_, err := postgres.Open(context.Background(), dsn+sep+"search_path=sbtest_no_such_schema", nil)
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "CREATE SCHEMA") {
		t.Fatalf("Open with a missing search_path schema: %v, want INVALID_INPUT saying to create it", err)
	}
}
