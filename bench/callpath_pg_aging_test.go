package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/postgres"
)

// TestCallPathPGAging asks whether a Postgres schema that has served many
// calls without VACUUM (a server with autovacuum off) makes the mutate
// call path slower: the Go-function mutate tool through broker.Call at 64
// in flight on three stores, interleaved round by round (who goes first
// rotates): a fresh schema each round; a schema aged by PRE calls and
// never vacuumed; one aged the same and vacuumed (VACUUM ANALYZE of its
// tables) before each round. It logs calls/s, the ratios, and each aged
// schema's dead row versions and size (bench/README.md, "Call path on
// Postgres").
//
// Opt in: it runs only when -run names it, with SWITCHBOARD_TEST_POSTGRES:
//
//	SWITCHBOARD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -count=1 ./bench -run 'TestCallPathPGAging$' -v
//
// SWITCHBOARD_BENCH_N (default 2,000 calls a store and round),
// SWITCHBOARD_BENCH_ROUNDS (5), SWITCHBOARD_BENCH_PRE (20,000) and
// SWITCHBOARD_BENCH_DURABILITY (process) size it.
func TestCallPathPGAging(t *testing.T) {
	if !strings.Contains(testRunFlag(), "TestCallPathPGAging") {
		t.Skip("opt-in benchmark: name it in -run")
	}
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set SWITCHBOARD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	env := func(k string, d int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return d
	}
	pre, n, rounds := env("SWITCHBOARD_BENCH_PRE", 20000), env("SWITCHBOARD_BENCH_N", 2000), env("SWITCHBOARD_BENCH_ROUNDS", 5)
	durability := switchboard.DurabilityProcess
	if d := os.Getenv("SWITCHBOARD_BENCH_DURABILITY"); d != "" {
		durability = switchboard.Durability(d)
	}
	const inflight = 64
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// open is a store in a schema of its own, dropped at the end, and its
	// mutate tool.
	open := func() (string, side) {
		schema := fmt.Sprintf("sbbench_aging_%d", time.Now().UnixNano())
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, Durability: durability})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			st.Close()
			_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		})
		return schema, brokerSide("mutate", brokerOn(t, st), "tasks.create")
	}
	agedSchema, aged := open()
	vacSchema, vac := open()
	for _, s := range []side{aged, vac} {
		if _, _, err := runBlock(ctx, pre, inflight, s.call); err != nil {
			t.Fatal(err)
		}
	}
	vacuum := func(schema string) {
		rows, _ := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{schema, tb}.Sanitize()); err != nil {
				t.Fatal(err)
			}
		}
	}
	stats := func(schema string) string {
		var dead, hot, upd, size int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(n_dead_tup), 0), coalesce(sum(n_tup_hot_upd), 0), coalesce(sum(n_tup_upd), 0),
			coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_stat_user_tables WHERE schemaname = $1`, schema).Scan(&dead, &hot, &upd, &size); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d dead row versions, %d of %d updates HOT, %d kB with indexes", dead, hot, upd, size/1024)
	}
	t.Logf("after %d calls: aged %s; aged+vacuum %s", pre, stats(agedSchema), stats(vacSchema))
	for r := range rounds {
		vacuum(vacSchema)
		_, fresh := open()
		if _, _, err := runBlock(ctx, min(n, 500), 16, fresh.call); err != nil { // warmed as runComparison warms
			t.Fatal(err)
		}
		stores := []struct {
			name string
			s    side
		}{{"fresh", fresh}, {"aged", aged}, {"aged+vacuum", vac}}
		perSec := map[string]float64{}
		for k := range stores {
			s := stores[(k+r)%len(stores)]
			_, wall, err := runBlock(ctx, n, inflight, s.s.call)
			if err != nil {
				t.Fatal(err)
			}
			perSec[s.name] = float64(n) / wall.Seconds()
		}
		t.Logf("aging-row: round %d | fresh %.0f | aged %.0f | aged+vacuum %.0f calls/s | aged÷fresh %.2f | aged+vacuum÷fresh %.2f | aged÷aged+vacuum %.2f | %s",
			r+1, perSec["fresh"], perSec["aged"], perSec["aged+vacuum"], perSec["aged"]/perSec["fresh"],
			perSec["aged+vacuum"]/perSec["fresh"], perSec["aged"]/perSec["aged+vacuum"], loadAverage())
	}
	t.Logf("at the end: aged %s; aged+vacuum %s", stats(agedSchema), stats(vacSchema))
}
