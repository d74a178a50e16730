package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/search"
)

// TestLearnedSearchLatency compares what a search costs with the learned
// field behind the per-tool gate (production since learning round 7:
// every search is also compared with the stored requests) against the
// ungated field it replaced, each index holding what its own rule learns
// from a set's training half. The two are searched interleaved, query by
// query, over the evaluation half, in several rounds; reported are
// per-search medians and p99 and their ratio.
func TestLearnedSearchLatency(t *testing.T) {
	const rounds = 5
	for _, set := range loadSets(t) {
		train, eval := split(set.Queries)
		tools, fwd, _ := learnTools(set)
		byName := map[string]switchboard.Tool{}
		for _, tl := range tools {
			byName[tl.Name] = tl
		}
		d := search.DefaultFields()
		d.Learned = search.Field{Weight: 0.5, B: 0.3}
		before := search.New(&search.Options{Fields: &d, Neighbours: &search.Neighbours{}})
		before.ReplaceLearned(learnedFrom(train, fwd, attrWhole, byName))
		before.Replace(tools)
		after := search.New(nil)
		after.ReplaceLearned(learnedFrom(train, fwd, attrExclude, byName))
		after.Replace(tools)
		sides := []*search.Index{before, after}
		times := [2][]time.Duration{}
		for r := range rounds {
			for _, q := range eval {
				for i := range sides {
					x := sides[(i+r)%2] // alternate which goes first
					start := time.Now()
					if _, err := x.Search(switchboard.SearchQuery{Query: q.Query, Limit: 10}, nil); err != nil {
						t.Fatal(err)
					}
					times[(i+r)%2] = append(times[(i+r)%2], time.Since(start))
				}
			}
		}
		pct := func(ds []time.Duration, p float64) time.Duration {
			s := slices.Clone(ds)
			slices.Sort(s)
			return s[int(p*float64(len(s)-1))]
		}
		t.Logf("learned-latency: %s, %d tools, %d searches a side: ungated field (before) p50 %v p99 %v; per-tool gate (after) p50 %v p99 %v; p50 ratio %.2f×, p99 ratio %.2f×",
			set.Name, len(tools), len(times[0]), pct(times[0], 0.5), pct(times[0], 0.99), pct(times[1], 0.5), pct(times[1], 0.99),
			float64(pct(times[1], 0.5))/float64(pct(times[0], 0.5)), float64(pct(times[1], 0.99))/float64(pct(times[0], 0.99)))
	}
}
