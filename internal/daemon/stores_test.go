package daemon_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/postgres"
	"github.com/switchboardhq/switchboard/sqlite"
)

// durable is a database that outlives the stores opened over it, so a
// test can close a daemon and start another over the same data (a
// restart), and reach the rows with SQL of its own to seed what an older
// daemon or a crash leaves behind.
type durable struct {
	name string
	// open opens a new store over the database; the test closes it.
	open func(t *testing.T) switchboard.Store
	// exec runs SQL (with ? placeholders) on a connection of its own.
	exec func(t *testing.T, query string, args ...any)
	// now is an SQL expression for the current time in a created_at column.
	now string
	// bus, if set, opens a bus of the kind one process would have over the
	// database (Postgres: its own LISTEN/NOTIFY bus); the test closes it.
	bus func(t *testing.T) bus.Bus
}

// durables returns a fresh SQLite file, and a fresh Postgres schema when
// SWITCHBOARD_TEST_POSTGRES names a server.
func durables(t *testing.T) []durable {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	out := []durable{{
		name: "sqlite",
		open: func(t *testing.T) switchboard.Store {
			st, err := sqlite.Open(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		exec: func(t *testing.T, query string, args ...any) {
			t.Helper()
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(query, args...); err != nil {
				t.Fatal(err)
			}
		},
		now: "CAST(strftime('%s','now') AS INTEGER) * 1000000",
	}}
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		return out
	}
	schema := pgSchema(t, dsn)
	return append(out, durable{
		name: "postgres",
		bus: func(t *testing.T) bus.Bus {
			b, err := bus.OpenPostgres(context.Background(), dsn, &bus.PostgresOptions{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		open: func(t *testing.T) switchboard.Store {
			st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxConns: 8})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		exec: func(t *testing.T, query string, args ...any) {
			t.Helper()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			n := 0
			query = replaceEach(query, "?", func() string { n++; return "$" + itoa(n) })
			if _, err := conn.Exec(ctx, query, args...); err != nil {
				t.Fatal(err)
			}
		},
		now: "now()",
	})
}

// pgSchema names a fresh Postgres schema, dropped when the test ends.
func pgSchema(t *testing.T, dsn string) string {
	b := make([]byte, 8)
	rand.Read(b)
	schema := "sbtest_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	return schema
}

func replaceEach(s, old string, next func() string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			return b.String() + s
		}
		b.WriteString(s[:i] + next())
		s = s[i+len(old):]
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
