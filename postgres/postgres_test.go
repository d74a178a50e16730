package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/storetest"
	"github.com/switchboardhq/switchboard/postgres"
)

const dsnEnv = "SWITCHBOARD_TEST_POSTGRES"

// testDSN returns the test database's DSN or skips the test.
func testDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		t.Skipf("Postgres tests need a database; run them with %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./postgres", dsnEnv)
	}
	return dsn
}

// freshSchema names a new schema and drops it (with everything in it) when
// the test ends, after the stores using it have closed.
func freshSchema(t *testing.T, dsn string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "sbtest_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

func open(t *testing.T, dsn, schema string) *postgres.Store {
	t.Helper()
	// A small pool: parallel tests share one server.
	s, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	dsn := testDSN(t)
	storetest.Exercise(t, func(t *testing.T) switchboard.Store {
		return open(t, dsn, freshSchema(t, dsn))
	})
}

// TestReplicas: several stores (replicas) on one schema, opened at once,
// migrate once, append to one unforked chain and agree on a single CAS
// winner.
func TestReplicas(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	ctx := context.Background()
	const replicas = 3
	stores := make([]*postgres.Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 4})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	var applied int
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&applied))
	files, err := filepath.Glob("migrations/*.sql")
	must(t, err)
	if applied != len(files) {
		t.Fatalf("schema_migrations has %d rows, want one per migration file (%d)", applied, len(files))
	}

	must(t, stores[0].InvocationCreate(ctx, switchboard.Invocation{ID: "inv-1", Tool: "t", Status: switchboard.StatusDispatched}))
	wins := make([]error, replicas*4)
	for i := range wins {
		wg.Go(func() {
			for j := range 5 {
				e := &switchboard.ActivityEntry{Actor: fmt.Sprintf("replica-%d", i%replicas), Verb: "v", Target: fmt.Sprint(j)}
				if err := stores[i%replicas].ActivityAppend(ctx, e); err != nil {
					t.Error(err)
				}
			}
			u := switchboard.Invocation{ID: "inv-1", Status: switchboard.StatusSucceeded, Result: json.RawMessage(fmt.Sprint(i))}
			_, wins[i] = stores[i%replicas].InvocationUpdate(ctx, u, switchboard.StatusDispatched)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range wins {
		switch switchboard.CodeOf(err) {
		case "":
			won++
		case switchboard.CodeConflict:
		default:
			t.Fatalf("CAS: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d replicas won the compare-and-swap, want 1", won)
	}
	entries, err := stores[1].ActivityList(ctx, switchboard.ActivityFilter{Limit: 1000})
	must(t, err)
	if len(entries) != len(wins)*5 {
		t.Fatalf("listed %d entries, want %d", len(entries), len(wins)*5)
	}
	prev := map[int]string{} // each chain's last hash
	for _, e := range entries {
		c, _ := e.Position()
		if e.PrevHash != prev[c] || e.Hash != e.ComputeHash(prev[c]) {
			t.Fatalf("chain broken at entry %d", e.ID)
		}
		prev[c] = e.Hash
	}
}

// TestNewerSchemaRefused: an old binary does not write to a schema it does
// not know.
func TestNewerSchemaRefused(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	must(t, open(t, dsn, schema).Close())
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+
		` (version, name) VALUES (9999, 'future')`)
	must(t, err)
	_, err = postgres.Open(ctx, dsn, &postgres.Options{Schema: schema})
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("open of a newer schema: %v, want UNAVAILABLE", err)
	}
}

// TestUnreachable needs no database: nothing listens on port 1.
func TestUnreachable(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", nil)
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("Open of an unreachable server: %v, want UNAVAILABLE", err)
	}
}

func TestBadDSN(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://%zz", nil)
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("Open of a malformed DSN: %v, want INVALID_INPUT", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunStartsRace: replicas starting one idle chat at once store one
// running run of it; every other start is CONFLICT naming the winner.
func TestRunStartsRace(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	ctx := context.Background()
	const replicas, rounds = 4, 30
	stores := make([]*postgres.Store, replicas)
	for i := range stores {
		s, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 2})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	for round := range rounds {
		thread := fmt.Sprintf("chat-%d", round)
		errs := make([]error, replicas)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				errs[i] = s.RunCreate(ctx, switchboard.RunRecord{RunInfo: switchboard.RunInfo{RunID: fmt.Sprintf("run-%d-%d", round, i),
					ThreadID: thread, Status: switchboard.RunRunning, CreatedAt: time.Now()}, Replica: fmt.Sprintf("rep-%d", i)})
			})
		}
		wg.Wait()
		won := ""
		for i, err := range errs {
			switch switchboard.CodeOf(err) {
			case "":
				if won != "" {
					t.Fatalf("round %d: two running runs of one chat were stored (%s and run-%d-%d)", round, won, round, i)
				}
				won = fmt.Sprintf("run-%d-%d", round, i)
			case switchboard.CodeConflict:
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for _, err := range errs {
			if err == nil {
				continue
			}
			if d, _ := switchboard.AsError(err).Details.(map[string]any); d["runId"] != won {
				t.Fatalf("round %d: a refusal names %v, want %s: %v", round, d, won, err)
			}
		}
	}
}

// TestAutovacuum: the store reports the server's autovacuum setting as
// pg_settings has it, and a closed store refuses.
func TestAutovacuum(t *testing.T) {
	dsn := testDSN(t)
	s := open(t, dsn, freshSchema(t, dsn))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	var want bool
	must(t, conn.QueryRow(ctx, `SELECT setting = 'on' FROM pg_settings WHERE name = 'autovacuum'`).Scan(&want))
	got, err := s.Autovacuum(ctx)
	if err != nil || got != want {
		t.Fatalf("Autovacuum() = %v, %v; the server's setting is on=%v", got, err, want)
	}
	must(t, s.Close())
	if _, err := s.Autovacuum(ctx); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("Autovacuum on a closed store: %v, want UNAVAILABLE", err)
	}
}
