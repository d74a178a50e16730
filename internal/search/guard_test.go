package search

import (
	"slices"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// guardIndex indexes catalog() with learned. The guards are measured
// against the field alone, so the per-tool gate (on by default) is off
// unless opts sets Neighbours.
func guardIndex(opts *Options, learned map[string][]Learned) *Index {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Neighbours == nil {
		o.Neighbours = &Neighbours{}
	}
	x := New(&o)
	x.Replace(catalog())
	x.ReplaceLearned(learned)
	return x
}

func hitNames(hs []switchboard.SearchHit) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

func scoreOf(hs []switchboard.SearchHit, name string) float64 {
	for _, h := range hs {
		if h.Name == name {
			return h.Score
		}
	}
	return 0
}

// With TopK, a tool the catalog's own words do not rank in the top K
// keeps its words-only score: learning reorders, it never injects.
func TestLearnedGuardTopKNeverInjects(t *testing.T) {
	t.Parallel()
	learned := map[string][]Learned{
		"comments.add": {{Query: "make the slides match the brand colours", Weight: 1}},
		"users.list":   {{Query: "show the brand overview", Weight: 1}},
	}
	// Only learned words match: the plain field finds the taught tool.
	const onlyLearned = "brand colours"
	if got := hitNames(hits(t, guardIndex(nil, learned), onlyLearned)); !slices.Contains(got, "comments.add") {
		t.Fatalf("the plain field does not find comments.add for %q: %v; the test proves nothing", onlyLearned, got)
	}
	guarded := guardIndex(&Options{Guard: &LearnedGuard{TopK: 10}}, learned)
	if got := hitNames(hits(t, guarded, onlyLearned)); len(got) != 0 {
		t.Fatalf("TopK injected tools no catalog word matches: %v", got)
	}
	// A tool among the words-only top K is lifted by what it learned.
	const q = "list brand"
	plain := guardIndex(nil, nil)
	if got := hitNames(hits(t, plain, q)); len(got) < 2 || got[0] == "users.list" {
		t.Fatalf("without learning %q ranks %v; want users.list matched but not first", q, got)
	}
	if got := hitNames(hits(t, guarded, q)); len(got) == 0 || got[0] != "users.list" {
		t.Fatalf("TopK 10: %q ranks %v, want users.list first", q, got)
	}
	// Outside the top K (K 1 here), the same tool keeps its words-only
	// score.
	one := guardIndex(&Options{Guard: &LearnedGuard{TopK: 1}}, learned)
	got, want := hits(t, one, q), hits(t, plain, q)
	if scoreOf(got, "users.list") != scoreOf(want, "users.list") {
		t.Fatalf("TopK 1: users.list scores %v, want its words-only %v", scoreOf(got, "users.list"), scoreOf(want, "users.list"))
	}
}

// With Distinct, a word every learning tool learned counts far less than
// one a single tool learned.
func TestLearnedGuardDistinctDiscountsSharedWords(t *testing.T) {
	t.Parallel()
	learned := map[string][]Learned{}
	for _, n := range []string{"deck.export", "deck.create", "deck.delete", "users.list"} {
		learned[n] = []Learned{{Query: "calculate the totals", Weight: 1}}
	}
	learned["comments.add"] = []Learned{{Query: "calculate the brand", Weight: 1}}
	plain := guardIndex(nil, learned)
	distinct := guardIndex(&Options{Guard: &LearnedGuard{Distinct: true}}, learned)
	// "calculate" is no catalog word: its score is the learned field's.
	shared := scoreOf(hits(t, distinct, "calculate"), "comments.add") / scoreOf(hits(t, plain, "calculate"), "comments.add")
	own := scoreOf(hits(t, distinct, "brand"), "comments.add") / scoreOf(hits(t, plain, "brand"), "comments.add")
	if !(shared < 0.2 && own > 0.4) {
		t.Fatalf("Distinct kept %.2f of a word five tools learned and %.2f of one only comments.add learned; want < 0.2 and > 0.4", shared, own)
	}
}

// With PerTool, a near learned query opens only its own tool's learned
// field; round 3's gate opened every tool's.
func TestNeighboursPerToolGate(t *testing.T) {
	t.Parallel()
	learned := map[string][]Learned{
		"deck.create":  {{Query: "make the slides match the brand colours", Weight: 1}},
		"users.invite": {{Query: "invite the brand team", Weight: 1}},
	}
	const q = "make the slides match our brand colours"
	gate := guardIndex(&Options{Neighbours: &Neighbours{Threshold: 0.5, Gate: true}}, learned)
	if got := hitNames(hits(t, gate, q)); !slices.Contains(got, "users.invite") {
		t.Fatalf("the shared gate does not open users.invite's field for %q: %v; the test proves nothing", q, got)
	}
	per := guardIndex(&Options{Neighbours: &Neighbours{Threshold: 0.5, Gate: true, PerTool: true}}, learned)
	got := hitNames(hits(t, per, q))
	if slices.Contains(got, "users.invite") || len(got) == 0 || got[0] != "deck.create" {
		t.Fatalf("per-tool gate: %q ranks %v, want deck.create first and users.invite absent", q, got)
	}
}
