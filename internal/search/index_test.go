package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func tool(name, summary, desc, schema string) switchboard.Tool {
	if schema == "" {
		schema = `{"type":"object"}`
	}
	return switchboard.Tool{Name: name, Summary: summary, Description: desc,
		InputSchema: json.RawMessage(schema), Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead}
}

func browserTool(name, desc string) switchboard.Tool {
	t := tool(name, "", desc, "")
	t.Surface, t.Class, t.ViewStateOnly = switchboard.SurfaceBrowser, switchboard.ClassUI, true
	return t
}

// catalog is a small app catalog for ranking tests.
func catalog() []switchboard.Tool {
	return []switchboard.Tool{
		tool("deck.export", "Export a deck as PDF or PPTX.", "Renders every slide of a deck to a file.",
			`{"properties":{"deck_id":{"type":"string"},"format":{"enum":["pdf","pptx"]}}}`),
		tool("deck.create", "Create a new deck.", "Creates an empty deck with a title.",
			`{"properties":{"title":{"type":"string"}}}`),
		tool("deck.delete", "Delete a deck.", "Moves a deck to the trash.", `{"properties":{"deck_id":{}}}`),
		tool("users.list", "List users.", "Lists the users of the workspace, paged.", ""),
		tool("users.invite", "Invite a user by email.", "Sends an invitation to join the workspace.",
			`{"properties":{"email":{"description":"Address of the person to invite"},"role":{"enum":["admin","member"]}}}`),
		tool("billing.invoice.create", "Create an invoice.", "Bills a customer for an amount.",
			`{"properties":{"customer_id":{},"amount_cents":{"type":"integer"}}}`),
		tool("billing.invoice.list", "List invoices.", "Lists invoices of a customer.", `{"properties":{"customer_id":{}}}`),
		tool("comments.add", "", "Adds a comment to a slide. The comment is visible to collaborators.",
			`{"properties":{"slide_id":{},"text":{}}}`),
		browserTool("page.scroll", "Scrolls the current page to a section."),
		browserTool("panel.open", "Opens a side panel, e.g. the inspector."),
	}
}

func names(res switchboard.SearchResult) []string {
	out := []string{}
	for _, h := range res.Items {
		out = append(out, h.Name)
	}
	return out
}

func TestRanking(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	for _, tc := range []struct {
		query string
		top   string
	}{
		{"export the deck as pdf", "deck.export"},
		{"exporting decks", "deck.export"},
		{"deckExport", "deck.export"},
		{"make a new presentation deck", "deck.create"},
		{"remove deck", "deck.delete"},
		{"invite a colleague by email", "users.invite"},
		{"list the people in the workspace", "users.list"},
		{"bill the customer", "billing.invoice.create"},
		{"show invoices", "billing.invoice.list"},
		{"billing", "billing.invoice.create"},         // namespace match; tie broken by name
		{"amount in cents", "billing.invoice.create"}, // parameter names count
		{"leave a note on a slide", "comments.add"},
		{"scroll to the pricing section", "page.scroll"},
		{"open the inspector", "panel.open"},
	} {
		res, err := x.Search(switchboard.SearchQuery{Query: tc.query}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) == 0 || res.Items[0].Name != tc.top {
			t.Errorf("%q: got %v, want %s first", tc.query, names(res), tc.top)
		}
	}
}

func TestSearchHits(t *testing.T) {
	t.Parallel()
	x := New(nil)
	cat := catalog()
	for i := range cat {
		if cat[i].Name == "comments.add" {
			cat[i].Class, cat[i].Approval = switchboard.ClassMutate, switchboard.ApprovalHITL
		}
	}
	x.Replace(cat)
	res, err := x.Search(switchboard.SearchQuery{Query: "comment slide"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := res.Items[0]
	// The hit carries the declared approval: a listing shows which calls
	// wait for the user.
	want := switchboard.SearchHit{Name: "comments.add", Summary: "Adds a comment to a slide.",
		Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, Approval: switchboard.ApprovalHITL, Score: h.Score}
	if diff := cmp.Diff(want, h); diff != "" || h.Score <= 0 {
		t.Errorf("hit (-want +got):\n%s (score %v)", diff, h.Score)
	}
	// No term matches: no hits, and a query of stop words matches nothing.
	for _, q := range []string{"quantum chromodynamics", "the of and"} {
		res, err := x.Search(switchboard.SearchQuery{Query: q}, nil)
		if err != nil || len(res.Items) != 0 || res.NextCursor != "" {
			t.Errorf("%q: %v %v", q, res, err)
		}
	}
}

func TestSearchFilters(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	for _, tc := range []struct {
		name  string
		q     switchboard.SearchQuery
		allow func(switchboard.Tool) bool
		want  []string
	}{
		{"empty query lists by name", switchboard.SearchQuery{Limit: 4}, nil,
			[]string{"billing.invoice.create", "billing.invoice.list", "comments.add", "deck.create"}},
		{"browser surface", switchboard.SearchQuery{Surface: switchboard.SurfaceBrowser}, nil,
			[]string{"page.scroll", "panel.open"}},
		{"surface with query", switchboard.SearchQuery{Query: "open scroll deck", Surface: switchboard.SurfaceBrowser}, nil,
			[]string{"page.scroll", "panel.open"}},
		{"allow", switchboard.SearchQuery{Query: "deck"},
			func(t switchboard.Tool) bool { return t.Name != "deck.export" && t.Name != "deck.create" },
			[]string{"deck.delete"}},
	} {
		res, err := x.Search(tc.q, tc.allow)
		if err != nil {
			t.Fatal(err)
		}
		got := names(res)
		if tc.name == "surface with query" {
			slices.Sort(got)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestSearchInvalid(t *testing.T) {
	t.Parallel()
	x := New(nil)
	x.Replace(catalog())
	first, err := x.Search(switchboard.SearchQuery{Query: "deck", Limit: 1}, nil)
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %v %v", first, err)
	}
	long := make([]byte, MaxQueryBytes+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct {
		name string
		q    switchboard.SearchQuery
		code switchboard.Code
	}{
		{"negative limit", switchboard.SearchQuery{Limit: -1}, switchboard.CodeInvalidInput},
		{"unknown surface", switchboard.SearchQuery{Surface: "desktop"}, switchboard.CodeInvalidInput},
		{"long query", switchboard.SearchQuery{Query: string(long)}, switchboard.CodeInvalidInput},
		{"garbage cursor", switchboard.SearchQuery{Query: "deck", Cursor: "!!"}, switchboard.CodeInvalidInput},
		{"truncated cursor", switchboard.SearchQuery{Query: "deck", Cursor: first.NextCursor[:5]}, switchboard.CodeInvalidInput},
		{"other query", switchboard.SearchQuery{Query: "user", Cursor: first.NextCursor}, switchboard.CodeInvalidInput},
		{"other surface", switchboard.SearchQuery{Query: "deck", Surface: switchboard.SurfaceAPI, Cursor: first.NextCursor}, switchboard.CodeInvalidInput},
	} {
		_, err := x.Search(tc.q, nil)
		var e *switchboard.Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("%s: err = %v, want %s", tc.name, err, tc.code)
		}
	}
}

func TestLimit(t *testing.T) {
	t.Parallel()
	var tools []switchboard.Tool
	for i := range 150 {
		tools = append(tools, tool(fmt.Sprintf("t.tool%03d", i), "", "A tool.", ""))
	}
	x := New(nil)
	x.Replace(tools)
	for _, tc := range []struct{ limit, want int }{{0, DefaultLimit}, {5, 5}, {1000, MaxLimit}} {
		res, err := x.Search(switchboard.SearchQuery{Query: "tool", Limit: tc.limit}, nil)
		if err != nil || len(res.Items) != tc.want || res.NextCursor == "" {
			t.Errorf("limit %d: %d items, cursor %q, err %v", tc.limit, len(res.Items), res.NextCursor, err)
		}
	}
}

// TestDerivedSummaryNotCounted checks that a stored summary derived from the
// description (the registry stores one when none is declared) ranks like
// no summary at all, while a summary of its own counts.
func TestDerivedSummaryNotCounted(t *testing.T) {
	t.Parallel()
	base := tool("deck.export", "", "Exports a deck as PDF. Every slide is rendered.", "")
	derived := base
	derived.Summary = SummaryOf(base)
	own := base
	own.Summary = "Export slides to PDF."
	score := func(tl switchboard.Tool) float64 {
		x := New(nil)
		x.Replace([]switchboard.Tool{tl, tool("other.tool", "", "Unrelated PDF viewer.", "")})
		res, err := x.Search(switchboard.SearchQuery{Query: "export pdf"}, nil)
		if err != nil || res.Items[0].Name != "deck.export" {
			t.Fatalf("%v %v", res, err)
		}
		return res.Items[0].Score
	}
	if a, b := score(base), score(derived); a != b {
		t.Errorf("derived summary changed the score: %v → %v", a, b)
	}
	if a, b := score(base), score(own); b <= a {
		t.Errorf("a summary of its own did not raise the score: %v → %v", a, b)
	}
}
