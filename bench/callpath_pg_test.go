package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/postgres"
)

// The gofunc family on Postgres (SWITCHBOARD_TEST_POSTGRES; skipped
// without it): the same Go function as a mutate tool and as a read tool
// through broker.Call, and the bare writes of one call, on a Postgres
// store in a schema of its own, against the function called directly.

// pgBenchStore opens a Postgres store in a fresh schema, dropped at the
// end, or skips without SWITCHBOARD_TEST_POSTGRES.
func pgBenchStore(tb testing.TB, o postgres.Options) *postgres.Store {
	tb.Helper()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		tb.Skip("postgres call path: set SWITCHBOARD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	o.Schema = fmt.Sprintf("sbbench_callpath_%d", time.Now().UnixNano())
	st, err := postgres.Open(context.Background(), dsn, &o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		st.Close()
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{o.Schema}.Sanitize()+" CASCADE")
			conn.Close(ctx)
		}
	})
	return st
}

// brokerOn is a broker and registry over st with the gofunc family's
// mutate tool (tasks.create) and read tool (tasks.preview).
func brokerOn(tb testing.TB, st switchboard.Store) *broker.Broker {
	tb.Helper()
	reg, err := registry.New(context.Background(), st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	br := broker.New(broker.Options{Store: st, Registry: reg})
	tb.Cleanup(br.Close)
	for name, class := range map[string]switchboard.Class{"tasks.create": switchboard.ClassMutate, "tasks.preview": switchboard.ClassRead} {
		if _, err := reg.Register(benchAdmin, switchboard.SourceHost, []switchboard.Tool{{
			Name: name, Description: "A task.", Class: class,
			InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
		}}); err != nil {
			tb.Fatal(err)
		}
		br.Handle(name, brokerCreateTask)
	}
	return br
}

// brokerSide calls tool through br.
func brokerSide(name string, br *broker.Broker, tool string) side {
	req := broker.CallRequest{Tool: tool, Input: brokerInput, Caller: &benchCaller}
	return side{name, func(context.Context) error {
		_, err := br.Call(benchAdmin, req)
		return err
	}}
}

// goFuncPGSides: the function called directly; through broker.Call on
// Postgres as a mutate tool (two transactions), with group commit (the
// default) and without (every write its own transaction on the pool); the
// bare writes of a mutate call; the read tool (one transaction); and the
// mutate tool with durability power (synchronous_commit on), with and
// without group commit. Each store has the default pool.
func goFuncPGSides(tb testing.TB) []side {
	open := func(d switchboard.Durability, maxBatch int) *broker.Broker {
		return brokerOn(tb, pgBenchStore(tb, postgres.Options{Durability: d, MaxBatch: maxBatch}))
	}
	process := pgBenchStore(tb, postgres.Options{Durability: switchboard.DurabilityProcess})
	br := brokerOn(tb, process)
	writes := callWritesErr(process)
	return []side{
		{"function called directly", func(ctx context.Context) error {
			_, err := brokerCreateTask(ctx, brokerInput)
			return err
		}},
		brokerSide("Go-function tool via broker.Call, Postgres", br, "tasks.create"),
		brokerSide("the same, Postgres without group commit", open(switchboard.DurabilityProcess, 1), "tasks.create"),
		{"its store writes alone (create; finish + ledger), Postgres", func(context.Context) error { return writes() }},
		brokerSide("the same function as a read tool (one transaction), Postgres", br, "tasks.preview"),
		brokerSide("Go-function tool via broker.Call, Postgres, durability power", open(switchboard.DurabilityPower, 0), "tasks.create"),
		brokerSide("the same, durability power without group commit", open(switchboard.DurabilityPower, 1), "tasks.create"),
	}
}
