package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// BenchmarkCallStore: a Go-function tool through the whole broker on a
// SQLite file, so what it measures is mostly the store writes of a call:
// p50 latency one call at a time, and calls/s with 64 in flight. read
// calls take the one-transaction path (Options.RecordAfter), mutate calls
// the two-transaction one; at 64 in flight both ride on group commit.
// bench/ has the benchmarks against baselines; this one exists to compare
// builds of the broker and store (issue 15).
//
//	go test ./broker -run '^$' -bench CallStore -benchtime 2000x
func BenchmarkCallStore(b *testing.B) {
	for _, class := range []switchboard.Class{switchboard.ClassRead, switchboard.ClassMutate} {
		for _, inFlight := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/inflight=%d", class, inFlight), func(b *testing.B) {
				e := newEnv(b, nil)
				tool := echoTool
				tool.Class = class
				tool.MaxConcurrency = 128
				e.goTool(b, tool, echo)
				ctx := context.Background()
				req := broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator}
				for range 100 {
					if _, err := e.b.Call(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				if inFlight == 1 {
					took := make([]time.Duration, 0, b.N)
					for range b.N {
						t0 := time.Now()
						if _, err := e.b.Call(ctx, req); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(t0))
					}
					b.StopTimer()
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
					return
				}
				b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				t0 := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := e.b.Call(ctx, req); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "calls/s")
			})
		}
	}
}
