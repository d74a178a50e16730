package search

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func top(t *testing.T, x *Index, q string) []string {
	t.Helper()
	res, err := x.Search(switchboard.SearchQuery{Query: q, Limit: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return names(res)
}

func TestLearnedFieldRanks(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	const q = "make slides match the brand"
	if got := top(t, x, q); slices.Contains(got, "deck.export") && got[0] == "deck.export" {
		t.Fatalf("before learning deck.export already leads %q: %v; the test proves nothing", q, got)
	}
	x.SetLearned("deck.export", []Learned{{Query: "brand slides", Weight: 1}})
	if got := top(t, x, q); len(got) == 0 || got[0] != "deck.export" {
		t.Fatalf("after learning, %q ranks %v, want deck.export first", q, got)
	}

	// A new description keeps what was learned.
	cat := catalog()
	cat[0].Description = "Writes the deck to a file."
	x.Upsert(cat[0])
	if got := top(t, x, "brand"); len(got) == 0 || got[0] != "deck.export" {
		t.Fatalf("after a description change, brand ranks %v", got)
	}
	// A removed tool keeps its learned queries in the index until the
	// registry forgets them, and they apply again when it is re-added.
	x.Remove("deck.export")
	if got := top(t, x, "brand"); len(got) != 0 {
		t.Fatalf("removed tool still found: %v", got)
	}
	x.Upsert(cat[0])
	if got := top(t, x, "brand"); len(got) == 0 || got[0] != "deck.export" {
		t.Fatalf("re-added tool lost its learned queries: %v", got)
	}
	x.SetLearned("deck.export", nil)
	if got := top(t, x, "brand"); len(got) != 0 {
		t.Fatalf("forgotten learned query still matches: %v", got)
	}
}

func TestLearnedWeightAndCursor(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	x.SetLearned("users.list", []Learned{{Query: "roster", Weight: 0.25}})
	x.SetLearned("deck.create", []Learned{{Query: "roster", Weight: 1}})
	if got := top(t, x, "roster"); !slices.Equal(got, []string{"deck.create", "users.list"}) {
		t.Fatalf("heavier learned query should rank first: %v", got)
	}
	res, err := x.Search(switchboard.SearchQuery{Query: "roster", Limit: 1}, nil)
	if err != nil || res.NextCursor == "" {
		t.Fatalf("want a cursor: %v %v", res, err)
	}
	// Learning changes ranking, so an earlier cursor is stale.
	x.SetLearned("users.list", []Learned{{Query: "roster", Weight: 1}})
	_, err = x.Search(switchboard.SearchQuery{Query: "roster", Limit: 1, Cursor: res.NextCursor}, nil)
	if switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("cursor after learning: %v, want CONFLICT", err)
	}
	// ReplaceLearned rebuilds with a new set; duplicates and zero weights
	// are dropped.
	x.ReplaceLearned(map[string][]Learned{"users.invite": {{Query: "roster", Weight: 1}, {Query: "roster", Weight: 1}, {Query: "colleague", Weight: 0}}})
	if got := top(t, x, "roster"); !slices.Equal(got, []string{"users.invite"}) {
		t.Fatalf("after ReplaceLearned: %v", got)
	}
	if got := x.LearnedOf("users.invite"); len(got) != 1 {
		t.Fatalf("LearnedOf = %v", got)
	}
	if got := top(t, x, "colleague"); len(got) != 0 {
		t.Fatalf("zero-weight query indexed: %v", got)
	}
}

func TestLearnedBounded(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	var ls []Learned
	for _, w := range strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber beige coral denim ebony fawn ginger hazel ivory jade") {
		ls = append(ls, Learned{Query: w, Weight: 1})
	}
	x.SetLearned("users.list", ls)
	if got := len(x.LearnedOf("users.list")); got != MaxLearned {
		t.Fatalf("kept %d learned queries, want %d", got, MaxLearned)
	}
	if got := top(t, x, "jade"); len(got) != 0 { // the 37th, past the bound
		t.Fatalf("query past the bound indexed: %v", got)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"export the deck as PDF", "export the deck as pdf"},
		{"invoice customer 4821 for $120.50 on 2024-03-01", "invoice customer for on"},
		{"email bob@example.com the report", "email the report"},
		{"open https://example.com/a?b=c and www.foo.org or kick.com", "open and or"},
		{"find 'gmhikaru' channel clips", "find channel clips"},
		{`rename "Q3 plan" to draft`, "rename to draft"},
		{"look up order inv_8f3a and 550e8400-e29b-41d4-a716-446655440000", "look up order and"},
		{"ping @alice about #launch", "ping about"},
		{"tokenize supercalifragilisticexpialidocious words", "tokenize words"},
		{"read /home/bob/notes and ~/plans or ./a/b", "read and or"},
		{`copy C:\Users\bob\plans to \\fileserver\share and/or back`, "copy to and or back"},
		{"summarize my notes (/home/bob/secretplans) and dir=/srv/acme, [~/diary]", "summarize my notes and dir"},
		{"dates 10/12 w/o café/bar", "dates w o café bar"},
	} {
		got, ok := Scrub(c.in)
		if !ok || got != c.want {
			t.Errorf("Scrub(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{
		"use key sk-ant-abcdefghijklmnopqrstuvwx to call",
		"login with password=hunter2",
		"Bearer abcdefghijklmnop",
		"12345 678",
		"the of and",
		"",
	} {
		if got, ok := Scrub(in); ok {
			t.Errorf("Scrub(%q) = %q, want refused", in, got)
		}
	}
}

func FuzzScrub(f *testing.F) {
	f.Add("export the deck as PDF for bob@example.com")
	f.Add("'quoted' https://x.y/z 42")
	f.Fuzz(func(t *testing.T, in string) {
		out, ok := Scrub(in)
		if !ok {
			return
		}
		if len(out) > MaxLearnedQueryBytes || strings.ContainsFunc(out, func(r rune) bool { return r >= '0' && r <= '9' }) ||
			strings.Contains(out, "@") || strings.Contains(out, "://") {
			t.Fatalf("Scrub(%q) kept %q", in, out)
		}
	})
}

// The boost (off by default) bounds what learned words add: a tool taught
// the query can pass another only within Cap of the best base score, and
// with TopN only if its own text already put it among the TopN.
func TestLearnedBoostBounded(t *testing.T) {
	t.Parallel()
	tools := []switchboard.Tool{
		{Name: "doc.export_pdf", Description: "Exports the document as a PDF file."},
		{Name: "doc.print", Description: "Prints the document; can also write a PDF."},
		{Name: "doc.archive", Description: "Moves old documents to the archive."},
	}
	learned := []Learned{{Query: "export pdf", Weight: 1}, {Query: "export the pdf now", Weight: 1}}
	// build indexes tools with learned queries for the tools taught; the
	// learned field gets no BM25F weight, so only the boost scores it.
	build := func(b LearnedBoost, taught ...string) *Index {
		f := DefaultFields()
		f.Learned = Field{}
		x := New(&Options{Fields: &f, Boost: &b})
		x.Replace(tools)
		for _, name := range taught {
			x.SetLearned(name, learned)
		}
		return x
	}
	score := func(x *Index, q, name string) float64 {
		res, err := x.Search(switchboard.SearchQuery{Query: q, Limit: 10}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Items {
			if h.Name == name {
				return h.Score
			}
		}
		return 0
	}
	const q = "export pdf"
	// Base scores over the same corpus (learned text moves document
	// frequencies), boost off.
	base := build(LearnedBoost{}, "doc.print", "doc.archive")
	best, second := score(base, q, "doc.export_pdf"), score(base, q, "doc.print")
	if best <= second || second == 0 || score(base, q, "doc.archive") != 0 {
		t.Fatalf("base scores %v, %v: the test needs export_pdf ahead, doc.print matching, doc.archive not", best, second)
	}

	uncapped := build(LearnedBoost{Scale: 10, B: 0.75}, "doc.print", "doc.archive")
	if got := top(t, uncapped, q); got[0] != "doc.print" {
		t.Fatalf("an uncapped boost should lift doc.print: %v", got)
	}

	capped := build(LearnedBoost{Scale: 10, Cap: 0.1, B: 0.75}, "doc.print", "doc.archive")
	if got, want := score(capped, q, "doc.print"), second+0.1*best; got > want+1e-3 || got <= second {
		t.Fatalf("capped boost gives %v, want above base %v and at most base + 0.1 × best %v", got, second, best)
	}
	if got := top(t, capped, q); got[0] != "doc.export_pdf" {
		t.Fatalf("a capped boost let doc.print pass the right tool: %v", got)
	}

	// Re-ranking the top 1: neither doc.print (second) nor doc.archive
	// (no base match) gains anything.
	topN := build(LearnedBoost{Scale: 10, B: 0.75, TopN: 1}, "doc.print", "doc.archive")
	if got := top(t, topN, q); got[0] != "doc.export_pdf" || slices.Contains(got, "doc.archive") {
		t.Fatalf("re-ranking the top 1 ranked %v", got)
	}
	if got := score(topN, q, "doc.print"); got != second {
		t.Fatalf("doc.print outside the top 1 was boosted: %v, base %v", got, second)
	}
}

// BenchmarkScrubClauses is what the registry does to every search while
// learning is on (noteSearch).
func BenchmarkScrubClauses(b *testing.B) {
	const q = "I'm planning a trip to Lisbon next month. Could you find the weather forecast for the first week? Then convert 300 euros to dollars, and book a table for two at a seafood place near the river."
	for b.Loop() {
		ScrubClauses(q)
	}
}
