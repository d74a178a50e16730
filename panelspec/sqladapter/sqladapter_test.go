package sqladapter_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/panelspec/sqladapter"
)

// db is one real database with a fresh projects table.
type db struct {
	sql     *sql.DB
	dialect sqladapter.Dialect
	table   string
}

func openSQLite(t *testing.T) db {
	t.Helper()
	d, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return setup(t, db{sql: d, dialect: sqladapter.SQLite, table: "projects"},
		`CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT, budget INTEGER, public BOOLEAN NOT NULL DEFAULT 0, due DATE, tenant TEXT NOT NULL DEFAULT 't1')`)
}

// openPostgres uses $SWITCHBOARD_TEST_POSTGRES (skipped without it), with
// a table of its own that is dropped afterwards.
func openPostgres(t *testing.T) db {
	t.Helper()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set SWITCHBOARD_TEST_POSTGRES to run the Postgres cases")
	}
	d, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	table := "sqladapter_" + hex.EncodeToString(b)
	t.Cleanup(func() { _, _ = d.Exec(`DROP TABLE IF EXISTS "` + table + `"`) })
	return setup(t, db{sql: d, dialect: sqladapter.Postgres, table: table},
		`CREATE TABLE "`+table+`" (id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT, budget BIGINT, public BOOLEAN NOT NULL DEFAULT false, due DATE, tenant TEXT NOT NULL DEFAULT 't1')`)
}

func setup(t *testing.T, d db, create string) db {
	t.Helper()
	if _, err := d.sql.Exec(create); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		id, name, status string
		budget           int
		public           bool
		due              any
		tenant           string
	}{
		{"apollo", "Apollo launch site", "active", 1200, true, "2026-12-15", "t1"},
		{"borealis", "Borealis rebrand", "paused", 800, false, nil, "t1"},
		{"cascade", "Cascade onboarding", "active", 300, false, "2027-01-31", "t2"},
	}
	for _, r := range rows {
		ph := "?, ?, ?, ?, ?, ?, ?"
		if d.dialect == sqladapter.Postgres {
			ph = "$1, $2, $3, $4, $5, $6, $7"
		}
		if _, err := d.sql.Exec(`INSERT INTO "`+d.table+`" (id, name, status, budget, public, due, tenant) VALUES (`+ph+`)`,
			r.id, r.name, r.status, r.budget, r.public, r.due, r.tenant); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d db) adapter(t *testing.T, scoped bool) *sqladapter.Adapter {
	t.Helper()
	tbl := sqladapter.Table{Name: d.table, Key: "id", Columns: []string{"name", "status", "budget", "public", "due"}}
	if scoped {
		tbl.Writable = []string{"id", "name"}
		tbl.ScopeColumn = "tenant"
		tbl.ScopeValue = func(s panelspec.AdapterScope) (any, error) {
			if s.Principal.ID == "" {
				return nil, switchboard.Errorf(switchboard.CodeForbidden, "no tenant")
			}
			return s.Principal.ID, nil
		}
	}
	a, err := sqladapter.New(d.sql, d.dialect, tbl)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	exercise(t, openSQLite)
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	exercise(t, openPostgres)
}

func ids(recs []panelspec.Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r["id"].(string))
	}
	return out
}

// exercise is the behaviour both databases must show.
func exercise(t *testing.T, open func(*testing.T) db) {
	ctx := context.Background()
	scope := panelspec.AdapterScope{Principal: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "t1"}}

	t.Run("query", func(t *testing.T) {
		t.Parallel()
		a := open(t).adapter(t, false)
		for _, tc := range []struct {
			name, query string
			want        []string
		}{
			{"all, by key", ``, []string{"apollo", "borealis", "cascade"}},
			{"equality", `{"where": {"status": "active"}}`, []string{"apollo", "cascade"}},
			{"any of", `{"where": {"id": ["cascade", "borealis", "nope"]}}`, []string{"borealis", "cascade"}},
			{"is null", `{"where": {"due": null}}`, []string{"borealis"}},
			{"boolean", `{"where": {"public": true}}`, []string{"apollo"}},
			{"integer", `{"where": {"budget": 800}}`, []string{"borealis"}},
			{"order and limit", `{"orderBy": "budget", "desc": true, "limit": 2}`, []string{"apollo", "borealis"}},
			{"empty any-of", `{"where": {"id": []}}`, []string{}},
			{"a value is never SQL", `{"where": {"name": "x' OR '1'='1"}}`, []string{}},
		} {
			recs, err := a.Query(ctx, scope, json.RawMessage(tc.query))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if diff := cmp.Diff(tc.want, ids(recs)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
		}
	})

	t.Run("records carry JSON types", func(t *testing.T) {
		t.Parallel()
		a := open(t).adapter(t, false)
		recs, err := a.Query(ctx, scope, json.RawMessage(`{"where": {"id": "apollo"}}`))
		if err != nil || len(recs) != 1 {
			t.Fatalf("%v %v", recs, err)
		}
		want := panelspec.Record{"id": "apollo", "name": "Apollo launch site", "status": "active", "budget": int64(1200), "public": true, "due": "2026-12-15"}
		if diff := cmp.Diff(want, recs[0]); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	})

	t.Run("bad queries are INVALID_INPUT", func(t *testing.T) {
		t.Parallel()
		a := open(t).adapter(t, false)
		for _, q := range []string{
			`{"where": {"tenant": "t2"}}`,          // not a declared column
			`{"where": {"name; DROP TABLE x": 1}}`, // nor is this
			`{"orderBy": "name DESC; --"}`,         // order by a column only
			`{"select": "*"}`,                      // unknown member
			`{"where": {"name": {"$gt": "a"}}}`,    // no operators
			`[1, 2]`,                               // not an object
		} {
			_, err := a.Query(ctx, scope, json.RawMessage(q))
			if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
				t.Errorf("%s: got %v, want INVALID_INPUT", q, err)
			}
		}
	})

	t.Run("create, update, delete", func(t *testing.T) {
		t.Parallel()
		d := open(t)
		tbl := sqladapter.Table{Name: d.table, Key: "id", Columns: []string{"name", "status", "budget", "public", "due"},
			Writable: []string{"id", "name", "status", "budget", "public", "due"}}
		a, err := sqladapter.New(d.sql, d.dialect, tbl)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpCreate, Values: panelspec.Record{"id": "delta", "name": "Delta", "budget": float64(50), "public": true, "due": "2027-03-01"}})
		if err != nil || rec["id"] != "delta" || rec["budget"] != int64(50) || rec["public"] != true || rec["due"] != "2027-03-01" {
			t.Fatalf("create: %v %v", rec, err)
		}
		rec, err = a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpUpdate, Key: "apollo", Values: panelspec.Record{"name": "Apollo 2", "public": false, "budget": nil}})
		if err != nil || rec["name"] != "Apollo 2" || rec["public"] != false || rec["budget"] != nil || rec["status"] != "active" {
			t.Fatalf("update: %v %v", rec, err)
		}
		if _, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpUpdate, Key: "nope", Values: panelspec.Record{"name": "x"}}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("update of a missing record: %v", err)
		}
		if _, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpDelete, Key: "borealis"}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpDelete, Key: "borealis"}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("delete twice: %v", err)
		}
		recs, _ := a.Query(ctx, scope, nil)
		if diff := cmp.Diff([]string{"apollo", "cascade", "delta"}, ids(recs)); diff != "" {
			t.Fatal(diff)
		}
		for _, m := range []panelspec.Mutation{
			{Op: panelspec.OpUpdate, Key: "apollo", Values: panelspec.Record{"tenant": "t2"}},           // not writable
			{Op: panelspec.OpUpdate, Key: "apollo", Values: panelspec.Record{}},                         // nothing to write
			{Op: panelspec.OpUpdate, Key: "apollo", Values: panelspec.Record{"name": map[string]any{}}}, // not a scalar
			{Op: panelspec.OpUpdate, Values: panelspec.Record{"name": "x"}},                             // no key
			{Op: "upsert", Key: "apollo"},
		} {
			if _, err := a.Mutate(ctx, scope, m); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
				t.Errorf("%+v: got %v, want INVALID_INPUT", m, err)
			}
		}
		// A constraint the database enforces comes back as its refusal.
		if _, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpCreate, Values: panelspec.Record{"id": "apollo", "name": "dup"}}); switchboard.CodeOf(err) != switchboard.CodeUpstreamError {
			t.Fatalf("duplicate key: %v", err)
		}
	})

	t.Run("the key is not writable by default", func(t *testing.T) {
		t.Parallel()
		a := open(t).adapter(t, false)
		if _, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpUpdate, Key: "apollo", Values: panelspec.Record{"id": "zeus"}}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("scope narrows reads and writes", func(t *testing.T) {
		t.Parallel()
		a := open(t).adapter(t, true)
		t2 := panelspec.AdapterScope{Principal: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "t2"}}
		recs, err := a.Query(ctx, t2, nil)
		if err != nil || cmp.Diff([]string{"cascade"}, ids(recs)) != "" {
			t.Fatalf("t2 sees %v %v", ids(recs), err)
		}
		recs, _ = a.Query(ctx, t2, json.RawMessage(`{"where": {"id": "apollo"}}`))
		if len(recs) != 0 {
			t.Fatalf("t2 sees apollo: %v", recs)
		}
		if _, err := a.Mutate(ctx, t2, panelspec.Mutation{Op: panelspec.OpUpdate, Key: "apollo", Values: panelspec.Record{"name": "mine"}}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("t2 updates apollo: %v", err)
		}
		if _, err := a.Mutate(ctx, t2, panelspec.Mutation{Op: panelspec.OpDelete, Key: "apollo"}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("t2 deletes apollo: %v", err)
		}
		rec, err := a.Mutate(ctx, t2, panelspec.Mutation{Op: panelspec.OpCreate, Values: panelspec.Record{"id": "echo", "name": "New"}})
		if err != nil || rec["id"] != "echo" {
			t.Fatalf("create in scope: %v %v", rec, err)
		}
		if recs, _ := a.Query(ctx, t2, nil); cmp.Diff([]string{"cascade", "echo"}, ids(recs)) != "" {
			t.Fatalf("create did not set the scope column: t2 sees %v", ids(recs))
		}
		if _, err := a.Query(ctx, panelspec.AdapterScope{}, nil); switchboard.CodeOf(err) != switchboard.CodeForbidden {
			t.Fatalf("no scope: %v", err)
		}
	})

	t.Run("subscribers hear every mutation until cancelled", func(t *testing.T) {
		t.Parallel()
		a := open(t).adapter(t, false)
		sctx, cancel := context.WithCancel(ctx)
		heard := make(chan struct{}, 8)
		if err := a.Subscribe(sctx, scope, json.RawMessage(`{"where": {"status": "active"}}`), func() { heard <- struct{}{} }); err != nil {
			t.Fatal(err)
		}
		if err := a.Subscribe(ctx, scope, json.RawMessage(`{"where": {"nope": 1}}`), func() {}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Fatalf("bad query: %v", err)
		}
		if _, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpUpdate, Key: "borealis", Values: panelspec.Record{"status": "active"}}); err != nil {
			t.Fatal(err)
		}
		if len(heard) != 1 {
			t.Fatalf("heard %d notifications, want 1", len(heard))
		}
		// A failed mutation changes nothing and says nothing.
		_, _ = a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpUpdate, Key: "nope", Values: panelspec.Record{"status": "x"}})
		cancel()
		if _, err := a.Mutate(ctx, scope, panelspec.Mutation{Op: panelspec.OpDelete, Key: "apollo"}); err != nil {
			t.Fatal(err)
		}
		if len(heard) != 1 {
			t.Fatalf("heard %d notifications, want 1 (a failure and a cancelled subscription say nothing)", len(heard))
		}
	})

	t.Run("a cancelled context is CANCELLED", func(t *testing.T) {
		t.Parallel()
		a := open(t).adapter(t, false)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := a.Query(cctx, scope, nil)
		if switchboard.CodeOf(err) != switchboard.CodeCancelled && !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestNewRefusesBadIdentifiers(t *testing.T) {
	t.Parallel()
	d, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tbl := range []sqladapter.Table{
		{Name: `p"; DROP TABLE x; --`, Key: "id"},
		{Name: "p", Key: "id", Columns: []string{"a b"}},
		{Name: "p", Key: "id", Columns: []string{"a"}, Writable: []string{"b"}},
		{Name: "p", Key: "id", ScopeColumn: "tenant"},
	} {
		if _, err := sqladapter.New(d, sqladapter.SQLite, tbl); err == nil {
			t.Errorf("%+v: accepted", tbl)
		}
	}
}
