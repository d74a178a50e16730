package bench

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/benchkit"
	"github.com/switchboardhq/switchboard/internal/search"
)

var catalogSizes = []int{1_000, 10_000, 100_000}

func sizeName(n int) string {
	if n >= 1000 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// TestSearchLatency measures the index alone at 1k, 10k and 100k synthetic
// tools: build time, retained heap, search and upsert latency percentiles.
// It builds a 100k catalog, so it runs only when named:
// go test ./bench -run TestSearchLatency -v
func TestSearchLatency(t *testing.T) {
	if !strings.Contains(testRunFlag(), "TestSearchLatency") {
		t.Skip("run with -run TestSearchLatency")
	}
	queries := benchkit.SyntheticQueries(2000, 2)
	var b strings.Builder
	b.WriteString("\n| tools | build | heap | search p50 | p90 | p99 | max | mean hits | upsert p50 | upsert p99 |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range catalogSizes {
		tools := benchkit.SyntheticCatalog(n, 1)
		before := heapInUse()
		x := search.New(nil)
		start := time.Now()
		x.Replace(tools)
		build := time.Since(start)
		heap := heapInUse() - before

		for _, q := range queries[:200] { // warm the accumulator pool and caches
			search1(t, x, q)
		}
		lat := make([]time.Duration, len(queries))
		hits := 0
		for i, q := range queries {
			start := time.Now()
			hits += search1(t, x, q)
			lat[i] = time.Since(start)
		}
		up := make([]time.Duration, 500)
		for i := range up {
			tool := tools[(i*7919)%len(tools)]
			tool.Description += " Edited."
			start := time.Now()
			x.Upsert(tool)
			up[i] = time.Since(start)
		}
		slices.Sort(lat)
		slices.Sort(up)
		fmt.Fprintf(&b, "| %s | %s | %.0f MiB | %s | %s | %s | %s | %d | %s | %s |\n", sizeName(n),
			build.Round(time.Millisecond), float64(heap)/(1<<20),
			pct(lat, 50), pct(lat, 90), pct(lat, 99), lat[len(lat)-1].Round(time.Microsecond),
			hits/len(queries), pct(up, 50), pct(up, 99))
		runtime.KeepAlive(x)
	}
	t.Log(b.String())
}

func search1(t testing.TB, x *search.Index, q string) int {
	res, err := x.Search(switchboard.SearchQuery{Query: q}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Items)
}

func pct(sorted []time.Duration, p int) time.Duration {
	d := sorted[(len(sorted)-1)*p/100]
	return d.Round(time.Microsecond)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkSearch measures one search of a synthetic query, cycling through
// 2000 queries from terse keywords to long requests.
func BenchmarkSearch(b *testing.B) {
	queries := benchkit.SyntheticQueries(2000, 2)
	for _, n := range catalogSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			x := search.New(nil)
			x.Replace(benchkit.SyntheticCatalog(n, 1))
			i := 0
			for b.Loop() {
				search1(b, x, queries[i%len(queries)])
				i++
			}
		})
	}
}

// BenchmarkReplace measures a full rebuild from a catalog snapshot.
func BenchmarkReplace(b *testing.B) {
	for _, n := range catalogSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			tools := benchkit.SyntheticCatalog(n, 1)
			x := search.New(nil)
			for b.Loop() {
				x.Replace(tools)
			}
		})
	}
}

// BenchmarkUpsert measures replacing one tool's content in a 10k catalog.
func BenchmarkUpsert(b *testing.B) {
	tools := benchkit.SyntheticCatalog(10_000, 1)
	x := search.New(nil)
	x.Replace(tools)
	i := 0
	for b.Loop() {
		tool := tools[i%len(tools)]
		tool.Description += fmt.Sprint(" Edit ", i, ".")
		x.Upsert(tool)
		i++
	}
}
