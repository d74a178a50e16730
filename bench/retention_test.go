package bench

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// retentionCalls is how many calls TestRetentionLongRun makes; the table
// in bench/README.md ("Retention and growth") is for 1,000,000:
//
//	go test -count=1 ./bench -run TestRetentionLongRun -v -timeout 2h -retention.calls 1000000
var retentionCalls = flag.Int("retention.calls", 20_000, "calls TestRetentionLongRun makes")

// retentionWindow is how many of the newest calls' records the run keeps:
// the sweep deletes records older than the newest window (the daemon's
// sweeper does the same by age, store.retention.invocations).
const retentionWindow = 10_000

// TestRetentionLongRun: Go-function calls through the broker on a SQLite
// file, with the retention sweep deleting expired records between
// batches, as the daemon's sweeper would. It logs the throughput of the
// first and the last 10,000 calls and the database's bytes per call
// (after a checkpoint): the ledger grows forever, the records do not.
func TestRetentionLongRun(t *testing.T) {
	// Minutes of calls (tens under -race on a busy machine): a
	// measurement, asked for by name, not a check every test run makes.
	if !strings.Contains(fmt.Sprint(testRunFlag()), "RetentionLongRun") {
		t.Skip("long run, asked for by name: go test ./bench -run TestRetentionLongRun -v")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bench.db")
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	br := broker.New(broker.Options{Store: st, Registry: reg})
	defer br.Close()
	pctx := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	if _, err := reg.Register(pctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
	}}); err != nil {
		t.Fatal(err)
	}
	br.Handle("tasks.create", brokerCreateTask)
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: &benchCaller}

	n := *retentionCalls
	const window = 10_000 // calls per throughput sample
	created := make([]time.Time, 0, n)
	var first, last float64
	sweep := func() {
		if len(created) <= retentionWindow {
			return
		}
		before := created[len(created)-retentionWindow]
		for {
			k, err := st.InvocationExpire(ctx, before, 128)
			if err != nil {
				t.Fatal(err)
			}
			if k < 128 {
				return
			}
		}
	}
	t0 := time.Now()
	for i := 1; i <= n; i++ {
		created = append(created, time.Now())
		if _, err := br.Call(pctx, req); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			sweep()
		}
		if i%window == 0 {
			rate := window / time.Since(t0).Seconds()
			if i == window {
				first = rate
			}
			last = rate
			if i%(10*window) == 0 {
				t.Logf("%d calls: %.0f calls/s", i, rate)
			}
			t0 = time.Now()
		}
	}
	sweep()
	// The same calls on a fresh store, interleaved with the aged one in
	// blocks, so both see the same machine load: the ratio the target
	// is stated in.
	fresh, freshBr := retentionBroker(t, filepath.Join(t.TempDir(), "fresh.db"))
	var aged, young time.Duration
	for range 10 {
		t0 := time.Now()
		for range 1000 {
			if _, err := br.Call(pctx, req); err != nil {
				t.Fatal(err)
			}
		}
		t1 := time.Now()
		for range 1000 {
			if _, err := freshBr.Call(pctx, req); err != nil {
				t.Fatal(err)
			}
		}
		aged, young = aged+t1.Sub(t0), young+time.Since(t1)
	}
	freshBr.Close()
	fresh.Close()
	t.Logf("interleaved, 10,000 calls each: aged store %.0f calls/s, fresh store %.0f calls/s (aged/fresh %.0f%%)",
		10000/aged.Seconds(), 10000/young.Seconds(), 100*young.Seconds()/aged.Seconds())
	br.Close()
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	var pages, size, free, records int64
	db.QueryRow(`PRAGMA page_count`).Scan(&pages)
	db.QueryRow(`PRAGMA page_size`).Scan(&size)
	db.QueryRow(`PRAGMA freelist_count`).Scan(&free)
	db.QueryRow(`SELECT count(*) FROM invocations`).Scan(&records)
	t.Logf("%d calls, %d records kept: %.0f bytes per call (file %d bytes, %d free pages); first %d calls %.0f calls/s, last %d %.0f calls/s (%.0f%%)",
		n, records, float64(pages*size)/float64(n), pages*size, free, window, first, window, last, 100*last/first)
}

// retentionBroker is a broker with the benchmark's tool over a SQLite file.
func retentionBroker(t *testing.T, path string) (*sqlite.Store, *broker.Broker) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	br := broker.New(broker.Options{Store: st, Registry: reg})
	pctx := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	if _, err := reg.Register(pctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
	}}); err != nil {
		t.Fatal(err)
	}
	br.Handle("tasks.create", brokerCreateTask)
	return st, br
}
