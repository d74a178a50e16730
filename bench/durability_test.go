package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/postgres"
	"github.com/switchboardhq/switchboard/sqlite"
)

// BenchmarkDurability measures what store.durability costs per call: the
// writes of one call (create, then finish with its ledger entry) on a store
// opened with durability process and on one opened with power, interleaved
// in one loop so both see the same machine:
//
//	go test ./bench -run '^$' -bench Durability -benchtime 2000x
//
// On SQLite, process is synchronous=NORMAL and power is FULL (an fsync per
// commit); on Postgres (SWITCHBOARD_TEST_POSTGRES) synchronous_commit off
// and on.
func BenchmarkDurability(b *testing.B) {
	ctx := context.Background()
	open := map[string]func(switchboard.Durability) switchboard.Store{
		"sqlite": func(d switchboard.Durability) switchboard.Store {
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), string(d)+".db"), &sqlite.Options{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	if dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES"); dsn != "" {
		open["postgres"] = func(d switchboard.Durability) switchboard.Store {
			st, err := postgres.Open(ctx, dsn, &postgres.Options{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}
	}
	for _, driver := range []string{"sqlite", "postgres"} {
		if open[driver] == nil {
			continue
		}
		b.Run(driver, func(b *testing.B) {
			process, power := open[driver](switchboard.DurabilityProcess), open[driver](switchboard.DurabilityPower)
			b.Cleanup(func() { process.Close(); power.Close() })
			wProcess, wPower := callWrites(b, process), callWrites(b, power)
			for range 100 {
				wProcess()
				wPower()
			}
			p, q := make(brokerDurations, 0, b.N), make(brokerDurations, 0, b.N)
			b.ResetTimer()
			for range b.N {
				p = append(p, wProcess())
				q = append(q, wPower())
			}
			b.StopTimer()
			b.ReportMetric(brokerUS(p.pct(0.5)), "process-p50-µs")
			b.ReportMetric(brokerUS(q.pct(0.5)), "power-p50-µs")
			b.ReportMetric(float64(q.pct(0.5))/float64(max(p.pct(0.5), time.Nanosecond)), "power/process")
		})
	}
}
