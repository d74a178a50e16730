package search

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

// manyTools returns n tools sharing vocabulary, so queries match many of
// them with many tied scores.
func manyTools(n int, seed uint64) []switchboard.Tool {
	r := rand.New(rand.NewPCG(seed, 1))
	nouns := []string{"deck", "slide", "user", "invoice", "report", "comment"}
	verbs := []string{"get", "list", "create", "update", "delete", "export"}
	var tools []switchboard.Tool
	for i := range n {
		v, o := verbs[r.IntN(len(verbs))], nouns[r.IntN(len(nouns))]
		t := tool(fmt.Sprintf("ns%d.%s_%s_%d", i%7, v, o, i), "",
			fmt.Sprintf("%s the %s. A tool for every %s.", v, o, nouns[r.IntN(len(nouns))]), "")
		if i%3 == 0 {
			t.Surface = switchboard.SurfaceBrowser
		}
		tools = append(tools, t)
	}
	return tools
}

// pageAll follows cursors to the end and returns every hit in order.
func pageAll(t *testing.T, x *Index, q switchboard.SearchQuery, allow func(switchboard.Tool) bool) []switchboard.SearchHit {
	t.Helper()
	var all []switchboard.SearchHit
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		res, err := x.Search(q, allow)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Items...)
		if res.NextCursor == "" {
			return all
		}
		q.Cursor = res.NextCursor
	}
}

func TestPagingReturnsEveryHitOnce(t *testing.T) {
	t.Parallel()
	tools := manyTools(400, 1)
	x := New(nil)
	x.Replace(tools)
	even := func(t switchboard.Tool) bool { return len(t.Name)%2 == 0 }
	for _, tc := range []struct {
		name  string
		q     switchboard.SearchQuery
		allow func(switchboard.Tool) bool
		match func(switchboard.Tool) bool
	}{
		{"every tool matches", switchboard.SearchQuery{Query: "tool", Limit: 7}, nil, nil},
		{"empty query", switchboard.SearchQuery{Limit: 13}, nil, nil},
		{"surface", switchboard.SearchQuery{Query: "tool deck", Surface: switchboard.SurfaceBrowser, Limit: 9}, nil,
			func(t switchboard.Tool) bool { return t.Surface == switchboard.SurfaceBrowser }},
		{"allow", switchboard.SearchQuery{Query: "tool", Limit: 100}, even, even},
	} {
		hits := pageAll(t, x, tc.q, tc.allow)
		var want, got []string
		for _, tool := range tools {
			if tc.match == nil || tc.match(tool) {
				want = append(want, tool.Name)
			}
		}
		for i, h := range hits {
			got = append(got, h.Name)
			// Order holds across page boundaries: score down, then name up.
			if i > 0 {
				p := hits[i-1]
				if p.Score < h.Score || (p.Score == h.Score && p.Name >= h.Name) {
					t.Errorf("%s: %v before %v", tc.name, p, h)
				}
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: hits over all pages (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestCatalogIndependence checks that ranking and cursors depend only on the
// catalog: another insertion order, a history of edits, or compaction give
// the same pages, and a cursor from one index works on the other (as on
// another replica).
func TestCatalogIndependence(t *testing.T) {
	t.Parallel()
	tools := manyTools(1500, 2)
	final := tools[:300]

	a := New(nil)
	a.Replace(final)

	b := New(nil)
	shuffled := slices.Clone(tools)
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, t := range shuffled {
		changed := t
		changed.Description += " Outdated."
		b.Upsert(changed)
	}
	for _, t := range shuffled {
		b.Upsert(t) // an edit back to the final content
	}
	for _, t := range tools[300:] {
		b.Remove(t.Name) // enough tombstones to force compaction
	}
	b.Remove("no.such.tool")
	if a.Len() != 300 || b.Len() != 300 {
		t.Fatalf("Len = %d, %d; want 300", a.Len(), b.Len())
	}
	if b.c.dead >= 1024 {
		t.Errorf("no compaction: %d tombstones", b.c.dead)
	}
	for _, q := range []string{"export deck", "tool", "", "slide comment report"} {
		qa := switchboard.SearchQuery{Query: q, Limit: 20}
		ra, err := a.Search(qa, nil)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Search(qa, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ra, rb); diff != "" {
			t.Errorf("%q: rebuilt vs edited index (-a +b):\n%s", q, diff)
		}
		if ra.NextCursor != "" {
			qa.Cursor = ra.NextCursor
			if _, err := b.Search(qa, nil); err != nil {
				t.Errorf("%q: cursor of a rejected by b: %v", q, err)
			}
		}
	}
}

func TestCursorAfterCatalogChange(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	q := switchboard.SearchQuery{Query: "deck", Limit: 1}
	first, err := x.Search(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	q.Cursor = first.NextCursor

	// Re-upserting identical content (as a registry resync does) keeps
	// cursors valid, even if unindexed fields changed.
	same := catalog()[0]
	same.TimeoutMs = 5000
	x.Upsert(same)
	x.Replace(catalog())
	if _, err := x.Search(q, nil); err != nil {
		t.Fatalf("cursor after no-op writes: %v", err)
	}

	x.Upsert(tool("deck.share", "Share a deck.", "", ""))
	_, err = x.Search(q, nil)
	if !errors.Is(err, &switchboard.Error{Code: switchboard.CodeConflict}) {
		t.Errorf("cursor after a change: err = %v, want CONFLICT", err)
	}
}

// TestConcurrentUse runs searches while the catalog changes; run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	tools := manyTools(200, 4)
	x := New(nil)
	x.Replace(tools[:100])
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				q := switchboard.SearchQuery{Query: []string{"deck", "export tool", ""}[(w+i)%3], Limit: 5}
				if _, err := x.Search(q, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i, tool := range tools[100:] {
			x.Upsert(tool)
			x.Remove(tools[i].Name)
			if i%25 == 0 {
				x.Replace(tools[i+1 : i+101])
			}
		}
	})
	wg.Wait()
	if x.Len() != 100 {
		t.Errorf("Len = %d, want 100", x.Len())
	}
}
