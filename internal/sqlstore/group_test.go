package sqlstore_test

import (
	"bufio"
	"context"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// Each group commit is measured: one observation of its duration and of
// its size per batch (switchboard_store_commit_*).
func TestGroupCommitIsMeasured(t *testing.T) {
	m := metrics.New(nil)
	count0, sum0 := batchSizes(t, m)

	release := make(chan struct{})
	var g sqlstore.Group[int]
	first := true
	g.Commit = func(batch []*sqlstore.Member[int]) {
		if first { // hold the first batch until three writes queue behind it
			first = false
			<-release
		}
	}
	var wg sync.WaitGroup
	do := func() {
		defer wg.Done()
		_ = g.Do(&sqlstore.Member[int]{Ctx: context.Background(), Op: "test", Fn: func(int) error { return nil }})
	}
	wg.Add(1)
	go do()
	for leading, _ := g.Queued(); !leading; leading, _ = g.Queued() {
		runtime.Gosched()
	}
	wg.Add(3)
	for range 3 {
		go do()
	}
	for _, n := g.Queued(); n != 3; _, n = g.Queued() {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()

	count, sum := batchSizes(t, m)
	if count-count0 != 2 || sum-sum0 != 4 {
		t.Fatalf("batch sizes: %v batches of %v writes; want 2 batches of 4 writes (1, then 3)", count-count0, sum-sum0)
	}
}

// batchSizes reads switchboard_store_commit_batch_size's count and sum.
func batchSizes(t *testing.T, m *metrics.Metrics) (count, sum float64) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	var seconds bool
	for sc.Scan() {
		name, v, _ := strings.Cut(sc.Text(), " ")
		f, _ := strconv.ParseFloat(v, 64)
		switch name {
		case "switchboard_store_commit_batch_size_count":
			count = f
		case "switchboard_store_commit_batch_size_sum":
			sum = f
		case "switchboard_store_commit_seconds_count":
			seconds = true
		}
	}
	if !seconds {
		t.Fatal("no switchboard_store_commit_seconds")
	}
	return count, sum
}
