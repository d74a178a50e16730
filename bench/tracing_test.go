package bench

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/tracing"
)

// TestTracingOverhead measures what OpenTelemetry tracing adds to a
// Go-function call: the same mutate tool through broker.Call over one
// SQLite store and one broker (with the daemon's ledger observer, as
// TestMetricsOverhead), calls with tracing off (the global no-op provider:
// a daemon without OTEL_* configuration) against calls recording their
// execute_tool span with the SDK — every span sampled, batched and
// handed to an exporter that discards it, so what is measured is the
// daemon's side, not a network (the target: under 5%). Interleaved call by
// call in one run (harness_test.go), so the ratio is what to read:
//
//	go test -count=1 ./bench -run 'TestTracingOverhead$' -v
//
// Without -run naming it, it runs a handful of calls and times nothing.
func TestTracingOverhead(t *testing.T) {
	heavy := strings.Contains(testRunFlag(), "TestTracingOverhead")
	if !heavy && testing.Short() {
		t.Skip("smoke run skipped in -short")
	}
	n, rounds, warm := 12, 1, 4
	if heavy {
		n, rounds = benchSize(3000, 1)
		warm = 500
		t.Logf("machine: %d CPUs, %s; %s", runtime.NumCPU(), runtime.Version(), loadAverage())
	}
	exp := &discard{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(exp))
	// One broker and one store for every side: two stores differ by more
	// than tracing costs (an earlier run measured a second untraced
	// broker 9% faster than the first). The broker's tracer picks per
	// call: the SDK's when the call's context asks, else the global no-op
	// a daemon without OTEL_* configuration uses.
	br := observedBroker(t, false, switchProvider{on: tp.Tracer("bench"), off: otel.Tracer("bench")})
	traced := context.WithValue(benchAdmin, tracedKey{}, true)
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: &benchCaller}
	cmp := runComparison(t, n, 1, rounds, warm,
		side{"Go-function tool, tracing off", func(context.Context) error { _, err := br.Call(benchAdmin, req); return err }},
		side{"the same again (control: the noise floor of a ratio)", func(context.Context) error { _, err := br.Call(benchAdmin, req); return err }},
		side{"the same, every call's span sampled and exported to nowhere", func(context.Context) error { _, err := br.Call(traced, req); return err }},
	)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exp.spans.Load() == 0 {
		t.Fatal("the traced broker exported no spans")
	}
	if heavy {
		// The ratio's noise floor (the control) is several percent on a
		// shared machine, more than a span costs: the span's own cost,
		// timed alone (start, the call id, end, into the batcher), says
		// what the ratio cannot resolve.
		tpOn := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(&discard{}))
		defer tpOn.Shutdown(context.Background())
		on, off := spanCost(tpOn.Tracer("bench"), 50000), spanCost(otel.Tracer("bench"), 50000)
		t.Logf("%d spans exported; one execute_tool span alone: %.2f µs recorded, %.3f µs off; recorded span / untraced call p50 = %.2f%%",
			exp.spans.Load(), on, off, 100*on/cmp.p50(0).med)
		t.Logf("tracing-span: | %.2f | %.3f | %.2f%% |", on, off, 100*on/cmp.p50(0).med)
		t.Logf("tracing-row: | Go-function call, 1 in flight, %d calls × %d rounds | %s | %s | %s× | %s | %s× |",
			n, rounds, fmtMMM(cmp.p50(0), 0), fmtMMM(cmp.p50(2), 0), fmtMMM(cmp.p50Ratio(2), 3), fmtMMM(cmp.added(2), 1), fmtMMM(cmp.p50Ratio(1), 3))
	}
}

// spanCost is the mean µs of one execute_tool span as the broker makes it.
func spanCost(tr trace.Tracer, n int) float64 {
	ctx := context.Background()
	start := time.Now()
	for range n {
		_, span := tracing.StartTool(ctx, tr, "tasks.create")
		tracing.ToolCall(span, "inv_0123456789abcdef")
		tracing.End(span, nil)
	}
	return float64(time.Since(start).Microseconds()) / float64(n)
}

// tracedKey in a call's context makes switchProvider's tracer record it.
type tracedKey struct{}

// switchProvider hands out a tracer that starts each span with on when the
// context carries tracedKey, else with off.
type switchProvider struct {
	embedded.TracerProvider
	on, off trace.Tracer
}

func (p switchProvider) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return switchTracer{on: p.on, off: p.off}
}

type switchTracer struct {
	embedded.Tracer
	on, off trace.Tracer
}

func (t switchTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if ctx.Value(tracedKey{}) != nil {
		return t.on.Start(ctx, name, opts...)
	}
	return t.off.Start(ctx, name, opts...)
}

// discard is a span exporter that counts and drops every batch: the
// sampler and the batch processor run as with a collector, the network
// does not.
type discard struct{ spans atomic.Int64 }

func (d *discard) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	d.spans.Add(int64(len(s)))
	return nil
}
func (*discard) Shutdown(context.Context) error { return nil }
