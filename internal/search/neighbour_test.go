package search

import (
	"fmt"
	"slices"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func hits(t *testing.T, x *Index, q string) []switchboard.SearchHit {
	t.Helper()
	res, err := x.Search(switchboard.SearchQuery{Query: q, Limit: MaxLimit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Items
}

func neighbourIndex(th, scale float64, learned map[string][]Learned) *Index {
	x := New(&Options{Neighbours: &Neighbours{Threshold: th, Scale: scale}})
	x.Replace(catalog())
	x.ReplaceLearned(learned)
	return x
}

// A search unlike every learned query ranks, scores included, exactly as
// with nothing learned; the pooled learned field (the default) does not.
func TestNeighboursLeaveUnlikeSearchesAlone(t *testing.T) {
	t.Parallel()
	// The learned query shares "brand" and "invoice" with the search;
	// "invoice" is also catalog text, so indexing the learned words at all
	// would move its IDF.
	learned := map[string][]Learned{"deck.create": {{Query: "make the slides match the brand colours of the invoice", Weight: 1}}}
	plain := New(nil)
	plain.Replace(catalog())
	const q = "brand new invoice for the customer"
	want := hits(t, plain, q)

	field := New(nil)
	field.Replace(catalog())
	field.ReplaceLearned(learned)
	if got := hits(t, field, q); slices.Equal(got, want) {
		t.Fatalf("the learned field left %q alone too; the test proves nothing", q)
	}
	if got := hits(t, neighbourIndex(0.3, 1, learned), q); !slices.Equal(got, want) {
		t.Fatalf("neighbours changed a search unlike anything learned:\n got %v\nwant %v", got, want)
	}
}

// A near repeat of a learned query pulls its tool up, and learning
// makes an earlier cursor stale.
func TestNeighboursPullNearRepeats(t *testing.T) {
	t.Parallel()
	const q = "make the slides match our brand colours"
	plain := New(nil)
	plain.Replace(catalog())
	if got := top(t, plain, q); len(got) > 0 && got[0] == "deck.create" {
		t.Fatalf("deck.create already leads %q: %v; the test proves nothing", q, got)
	}
	// Scale 2: with nothing of its own matching, the taught tool's boost
	// (Scale × weight × similarity × best) must exceed the best tool's.
	x := neighbourIndex(0.3, 2, nil)
	res, err := x.Search(switchboard.SearchQuery{Query: "deck", Limit: 1}, nil)
	if err != nil || res.NextCursor == "" {
		t.Fatalf("want a cursor: %v %v", res, err)
	}
	x.SetLearned("deck.create", []Learned{{Query: "make the slides match the brand colours", Weight: 1}})
	if got := top(t, x, q); len(got) == 0 || got[0] != "deck.create" {
		t.Fatalf("after learning, %q ranks %v, want deck.create first", q, got)
	}
	_, err = x.Search(switchboard.SearchQuery{Query: "deck", Limit: 1, Cursor: res.NextCursor}, nil)
	if switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("cursor after learning: %v, want CONFLICT", err)
	}
	x.SetLearned("deck.create", nil)
	if got, want := hits(t, x, q), hits(t, plain, q); !slices.Equal(got, want) {
		t.Fatalf("forgotten: %v, want %v", got, want)
	}
}

// Poisoning is bounded: a tool taught the very query, at full weight, as
// many times as it may keep, gains at most Scale × the best words-only
// score, so it cannot pass a tool that matches that much better.
func TestNeighboursBoundPoisoning(t *testing.T) {
	t.Parallel()
	const q = "export the deck as pdf"
	var spam []Learned
	for i := range MaxLearned {
		spam = append(spam, Learned{Query: q + fmt.Sprint(" ", []string{"now", "please", "today", "quickly"}[i%4]), Weight: 1})
	}
	spam[0].Query = q
	plain := New(nil)
	plain.Replace(catalog())
	base := hits(t, plain, q)
	if base[0].Name != "deck.export" || slices.ContainsFunc(base, func(h switchboard.SearchHit) bool { return h.Name == "users.list" }) {
		t.Fatalf("base ranking %v: the test needs deck.export first and users.list absent", base)
	}
	x := neighbourIndex(0.3, 0.5, map[string][]Learned{"users.list": spam})
	got := hits(t, x, q)
	if got[0].Name != "deck.export" {
		t.Fatalf("a poisoned tool passed the right one: %v", got)
	}
	i := slices.IndexFunc(got, func(h switchboard.SearchHit) bool { return h.Name == "users.list" })
	if i < 0 || got[i].Score > 0.5*base[0].Score+1e-3 {
		t.Fatalf("users.list scores %v, want found and at most 0.5 × best %v", got, base[0].Score)
	}
}

// Entries replaced one tool at a time (tombstones, compaction) rank
// exactly as the same learned queries loaded at once.
func TestNeighboursIncrementalMatchesRebuild(t *testing.T) {
	t.Parallel()
	x := neighbourIndex(0.2, 1, nil)
	tools := []string{"deck.create", "deck.export", "users.list", "users.invite", "billing.invoice.list"}
	words := []string{"slides", "brand", "colleagues", "roster", "money", "owed", "pdf", "team", "bill", "theme"}
	final := map[string][]Learned{}
	for i := range 3000 { // enough replaced entries to compact more than once
		tool := tools[i%len(tools)]
		ls := []Learned{
			{Query: words[i%len(words)] + " " + words[(i/7)%len(words)], Weight: 1},
			{Query: words[(i/3)%len(words)] + " " + words[(i/11)%len(words)] + " list", Weight: 0.5},
		}
		x.SetLearned(tool, ls)
		final[tool] = ls
	}
	x.SetLearned("users.list", nil)
	delete(final, "users.list")
	fresh := neighbourIndex(0.2, 1, final)
	for _, q := range append(words, "brand slides", "team roster list", "money owed bill") {
		if got, want := hits(t, x, q), hits(t, fresh, q); !slices.Equal(got, want) {
			t.Fatalf("%q: incremental %v, rebuilt %v", q, got, want)
		}
	}
}

// Gated, the learned field counts only for a search near a learned query.
func TestNeighboursGateTheField(t *testing.T) {
	t.Parallel()
	x := New(&Options{Neighbours: &Neighbours{Threshold: 0.9, Gate: true}})
	x.Replace(catalog())
	x.SetLearned("deck.create", []Learned{{Query: "make the slides match the brand colours", Weight: 1}})
	if got := top(t, x, "brand invoice"); slices.Contains(got, "deck.create") {
		t.Fatalf("gate closed, yet the learned field matched: %v", got)
	}
	if got := top(t, x, "make the slides match the brand colours"); len(got) == 0 || got[0] != "deck.create" {
		t.Fatalf("gate open, yet deck.create ranks %v", got)
	}
}
