package bench

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestMetricsOverhead measures what the Prometheus metrics add to a
// Go-function call: the same mutate tool through broker.Call over two
// SQLite stores, each broker's entries observed by a ledger as in the
// daemon, one ledger also feeding metrics.Metrics (the target:
// under 5%). The two sides are interleaved call by call in one run
// (harness_test.go), so the ratio is what to read:
//
//	go test -count=1 ./bench -run 'TestMetricsOverhead$' -v
//
// Without -run naming it, it runs a handful of calls and times nothing.
func TestMetricsOverhead(t *testing.T) {
	heavy := strings.Contains(testRunFlag(), "TestMetricsOverhead")
	if !heavy && testing.Short() {
		t.Skip("smoke run skipped in -short")
	}
	n, rounds, warm := 12, 1, 4
	if heavy {
		n, rounds = benchSize(3000, 1)
		warm = 500
		t.Logf("machine: %d CPUs, %s; %s", runtime.NumCPU(), runtime.Version(), loadAverage())
	}
	plain := meteredBroker(t, false)
	metered := meteredBroker(t, true)
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: &benchCaller}
	cmp := runComparison(t, n, 1, rounds, warm,
		side{"Go-function tool, ledger observer only", func(context.Context) error { _, err := plain.Call(benchAdmin, req); return err }},
		side{"the same with metrics", func(context.Context) error { _, err := metered.Call(benchAdmin, req); return err }},
	)
	if heavy {
		t.Logf("metrics-row: | Go-function call, 1 in flight, %d calls × %d rounds | %s | %s | %s× | %s |",
			n, rounds, fmtMMM(cmp.p50(0), 0), fmtMMM(cmp.p50(1), 0), fmtMMM(cmp.p50Ratio(1), 3), fmtMMM(cmp.added(1), 1))
	}
}

// meteredBroker is brokerEnv with the daemon's ledger observer, which
// feeds metrics (labelled from the registry, as internal/daemon/metrics.go does)
// when metered.
func meteredBroker(tb testing.TB, metered bool) *broker.Broker {
	tb.Helper()
	return observedBroker(tb, metered, nil)
}

// observedBroker is meteredBroker whose broker records its spans to tp
// (nil: OpenTelemetry's global provider, a no-op here, as in a daemon
// started without OTEL_* configuration).
func observedBroker(tb testing.TB, metered bool, tp trace.TracerProvider) *broker.Broker {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "bench.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	lo := &activity.Options{}
	if metered {
		m := metrics.New(&metrics.Options{Tool: func(name string) (string, string, bool) {
			t, err := reg.Get(context.Background(), name)
			return string(t.Class), "go", err == nil
		}})
		lo.OnEntry = m.Entry
	}
	ledger, err := activity.New(ctx, st, lo)
	if err != nil {
		tb.Fatal(err)
	}
	br := broker.New(broker.Options{Store: st, Registry: reg, OnActivity: ledger.Observe, TracerProvider: tp})
	tb.Cleanup(br.Close)
	if _, err := reg.Register(benchAdmin, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
	}}); err != nil {
		tb.Fatal(err)
	}
	br.Handle("tasks.create", brokerCreateTask)
	return br
}
