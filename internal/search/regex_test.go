package search

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

func TestRegexSearch(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	search := func(q switchboard.SearchQuery, allow func(switchboard.Tool) bool) []string {
		t.Helper()
		q.Regex = true
		res, err := x.Search(q, allow)
		if err != nil {
			t.Fatal(err)
		}
		return names(res)
	}
	if got := search(switchboard.SearchQuery{Query: `^deck\.`}, nil); !slices.Equal(got, []string{"deck.create", "deck.delete", "deck.export"}) {
		t.Fatalf(`^deck\. = %v`, got)
	}
	// Name matches outrank summary matches, which outrank description ones.
	if got := search(switchboard.SearchQuery{Query: `(?i)invoice`}, nil); !slices.Equal(got[:2], []string{"billing.invoice.create", "billing.invoice.list"}) {
		t.Fatalf("invoice = %v", got)
	}
	if got := search(switchboard.SearchQuery{Query: `trash`}, nil); !slices.Equal(got, []string{"deck.delete"}) {
		t.Fatalf("trash (description only) = %v", got)
	}
	// The same visibility and surface filters as word search.
	noDecks := func(tl switchboard.Tool) bool { return !strings.HasPrefix(tl.Name, "deck.") }
	if got := search(switchboard.SearchQuery{Query: `^deck\.`}, noDecks); len(got) != 0 {
		t.Fatalf("hidden tools found: %v", got)
	}
	if got := search(switchboard.SearchQuery{Query: `.`, Surface: switchboard.SurfaceBrowser}, nil); !slices.Equal(got, []string{"page.scroll", "panel.open"}) {
		t.Fatalf("browser surface = %v", got)
	}
	// Paging: a cursor continues the regex, and is not valid for the word
	// query of the same text.
	res, err := x.Search(switchboard.SearchQuery{Query: `^deck\.`, Regex: true, Limit: 2}, nil)
	if err != nil || res.NextCursor == "" {
		t.Fatalf("page 1: %v %v", res, err)
	}
	next, err := x.Search(switchboard.SearchQuery{Query: `^deck\.`, Regex: true, Limit: 2, Cursor: res.NextCursor}, nil)
	if err != nil || !slices.Equal(names(next), []string{"deck.export"}) {
		t.Fatalf("page 2: %v %v", names(next), err)
	}
	if _, err := x.Search(switchboard.SearchQuery{Query: `^deck\.`, Limit: 2, Cursor: res.NextCursor}, nil); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("regex cursor on a word query: %v", err)
	}
}

func TestRegexRefused(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	for _, p := range []string{`(a`, `(\w+)\1`, `(?=x)`, strings.Repeat("a", MaxRegexBytes+1)} {
		_, err := x.Search(switchboard.SearchQuery{Query: p, Regex: true}, nil)
		if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("regex %q: %v, want INVALID_INPUT", p, err)
		}
	}
	// A pattern that would backtrack exponentially elsewhere is linear in
	// RE2: it answers.
	if _, err := x.Search(switchboard.SearchQuery{Query: `(a+)+$`, Regex: true}, nil); err != nil {
		t.Fatal(err)
	}
}

// A short pattern can compile to a program big enough to take most of a
// second over one long description: it is refused by its size.
func TestRegexTooComplex(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	for _, p := range []string{`(?:(?:\w*\s*){30}){30}Q`, `(?:\w*\s*){999}Q`, `[\s\S]{1000}x`} {
		_, err := x.Search(switchboard.SearchQuery{Query: p, Regex: true}, nil)
		if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "too complex") {
			t.Errorf("regex %q: %v, want INVALID_INPUT (too complex)", p, err)
		}
	}
	// Ordinary patterns stay well inside the bound.
	for _, p := range []string{`^billing\.invoice\.`, `(?i)\b(send|email|mail)\b.*\binvoice`, `(?i)[a-z_]{3,40}\.(export|import)_[a-z]+`, `\pL{200}`} {
		if _, err := x.Search(switchboard.SearchQuery{Query: p, Regex: true}, nil); err != nil {
			t.Errorf("regex %q: %v", p, err)
		}
	}
}

// The scan reads its clock by the work it did, not every few hundred
// tools: a few long descriptions under a costly pattern are enough for
// a clock past the budget to refuse the scan.
func TestRegexDeadlineByWork(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("abcdefghij klmnopqrs tuvwxyz ", 280)
	var ts []switchboard.Tool
	for _, n := range []string{"a.one", "a.two", "a.three", "a.four"} {
		ts = append(ts, switchboard.Tool{Name: n, Description: long, Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead})
	}
	x := New(nil)
	x.Replace(ts)
	start := time.Unix(0, 0)
	reads := 0
	late := func() time.Time {
		reads++
		if reads == 1 {
			return start
		}
		return start.Add(time.Second)
	}
	top := &topK{k: 10, docs: x.c.docs}
	err := x.c.match(`\w{100}Q`, top, func(uint32) bool { return true }, late)
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "took longer") {
		t.Fatalf("scan past its budget: %v, want INVALID_INPUT", err)
	}
	// A cheap pattern over the same tools does not read the clock at all.
	reads = 0
	if err := x.c.match(`^a\.one$`, &topK{k: 10, docs: x.c.docs}, func(uint32) bool { return true }, late); err != nil || reads != 1 {
		t.Fatalf("cheap scan: %v after %d clock reads", err, reads)
	}
}
