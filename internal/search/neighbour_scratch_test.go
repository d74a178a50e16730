package search

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// refSimilar is similar computed the plain way (a map of dot products,
// idf from the live df on each use), to check the pooled dense slice and
// the idf table against.
func refSimilar(nb *nbIndex, words []string, threshold float64) (float64, map[string]nbMatch) {
	idf := func(t int32, ok bool) float64 {
		df := int32(0)
		if ok {
			df = nb.df[t]
		}
		return nb.idf(df)
	}
	dot := map[int32]float64{}
	q := 0.0
	for _, w := range words {
		t, ok := nb.terms[w]
		v := idf(t, ok)
		q += v * v
		if !ok {
			continue
		}
		for _, e := range nb.post[t] {
			if nb.entries[e].alive {
				dot[e] += v * v
			}
		}
	}
	best, out := 0.0, map[string]nbMatch{}
	for e, d := range dot {
		en := nb.entries[e]
		n := 0.0
		for _, t := range en.terms {
			v := idf(t, true)
			n += v * v
		}
		sim := d / (math.Sqrt(q) * math.Sqrt(n))
		best = max(best, sim)
		if sim < threshold {
			continue
		}
		if m, ok := out[en.tool]; !ok || sim*en.weight > m.sim*m.weight {
			out[en.tool] = nbMatch{en.tool, sim, en.weight}
		}
	}
	return best, out
}

// TestNeighboursScratchAcrossEdits: searches between edits that grow the
// entries past the pooled slice, tombstone them and compact, from many
// goroutines at once, find what the plain computation finds (run with
// -race: a pooled slice is never shared by two searches).
func TestNeighboursScratchAcrossEdits(t *testing.T) {
	t.Parallel()
	x := New(nil) // the default: the per-tool gate
	x.Replace(catalog())
	var names []string
	for _, tl := range catalog() {
		names = append(names, tl.Name)
	}
	words := []string{"slides", "brand", "colleagues", "roster", "money", "owed", "pdf", "team", "bill", "theme"}
	queries := [][]string{{"brand", "slides"}, {"roster", "team"}, {"money", "owed", "bill"}, {"pdf"}, {"unseen", "theme"}}
	check := func(step int) {
		x.mu.RLock()
		defer x.mu.RUnlock()
		for _, q := range queries {
			q = slices.Sorted(slices.Values(q))
			best, got := x.nb.similar(q, 0.2)
			wantBest, want := refSimilar(x.nb, q, 0.2)
			if math.Abs(best-wantBest) > 1e-12 || len(got) != len(want) {
				t.Fatalf("step %d %q: best %v, %d tools; want %v, %d tools", step, q, best, len(got), wantBest, len(want))
			}
			for _, m := range got {
				if w := want[m.tool]; math.Abs(m.sim-w.sim) > 1e-12 || m.weight != w.weight {
					t.Fatalf("step %d %q: %+v, want %+v", step, q, m, w)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				_, err := x.Search(switchboard.SearchQuery{Query: words[(g+i)%len(words)] + " " + words[i%len(words)], Limit: MaxLimit}, nil)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 3000 {
		tool := fmt.Sprint("t", i%7)
		if i%2 == 0 {
			tool = names[i%len(names)]
		}
		n := 1 + i%5 // the entries grow and shrink
		ls := make([]Learned, n)
		for j := range ls {
			ls[j] = Learned{Query: words[(i+j)%len(words)] + " " + words[(i/3+j)%len(words)], Weight: 1 / float64(1+j)}
		}
		x.SetLearned(tool, ls)
		if i%97 == 0 {
			check(i)
		}
	}
	wg.Wait()
	check(-1)
}

// TestNeighboursDeterministic: indexes loaded from the same learned
// queries (map order gives entries and terms other ids each time) rank
// the same, scores and ties included, with the default per-tool gate.
func TestNeighboursDeterministic(t *testing.T) {
	t.Parallel()
	learned := map[string][]Learned{}
	for i, tl := range catalog() {
		// Alike queries at equal weights: ties between tools.
		learned[tl.Name] = []Learned{{Query: "brand slides team", Weight: 0.5}, {Query: fmt.Sprint("roster ", []string{"money", "owed", "bill"}[i%3]), Weight: 0.5}}
	}
	build := func() *Index {
		x := New(nil)
		x.Replace(catalog())
		x.ReplaceLearned(learned)
		return x
	}
	first := build()
	for range 20 {
		x := build()
		for _, q := range []string{"brand slides", "team roster", "money owed", "roster bill pdf"} {
			if got, want := hits(t, x, q), hits(t, first, q); !slices.Equal(got, want) {
				t.Fatalf("%q: %v, then %v", q, want, got)
			}
		}
	}
}
