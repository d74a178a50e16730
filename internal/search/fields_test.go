package search

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func TestSummaryOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 40)
	for _, tc := range []struct {
		name, summary, desc, want string
	}{
		{"declared wins", "Export a deck.", "Long text. More.", "Export a deck."},
		{"declared collapsed", "  Export\n a   deck ", "", "Export a deck"},
		{"first sentence", "", "Exports a deck. Formats: PDF, PPTX.", "Exports a deck."},
		{"first line", "", "Exports a deck\nas PDF or PPTX", "Exports a deck"},
		{"leading blank lines", "", "\n\n  Lists users. Paged.", "Lists users."},
		{"abbreviation", "", "Opens a panel, e.g. the inspector. Then more.", "Opens a panel, e.g. the inspector."},
		{"lower case after dot", "", "Version 2. of the API. Next.", "Version 2. of the API."},
		{"dot inside word", "", "Reads config.yaml from disk. More.", "Reads config.yaml from disk."},
		{"question", "", "Is the tab open? Returns a boolean.", "Is the tab open?"},
		{"empty", "", "", ""},
		{"truncated at a word", "", long, strings.TrimSpace(strings.Repeat("word ", 23)) + "…"},
	} {
		got := SummaryOf(switchboard.Tool{Summary: tc.summary, Description: tc.desc})
		if got != tc.want {
			t.Errorf("%s: SummaryOf = %q, want %q", tc.name, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); tc.summary == "" && n > summaryMax {
			t.Errorf("%s: summary has %d runes, more than %d", tc.name, n, summaryMax)
		}
	}
	// One unbroken word longer than the bound is cut mid-word.
	got := SummaryOf(switchboard.Tool{Description: strings.Repeat("é", 300)})
	if want := strings.Repeat("é", summaryMax-1) + "…"; got != want {
		t.Errorf("long word: got %q", got)
	}
}

func TestTextsWalksSchema(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{
		"deck_id":{"type":"string","description":"Deck to export"},
		"format":{"enum":["pdf","pptx"],"title":"Output format"},
		"options":{"type":"object","properties":{"pageRange":{"type":"string"}}},
		"recipients":{"type":"array","items":{"properties":{"email":{"description":"Address"}}}},
		"target":{"anyOf":[{"properties":{"bucket":{}}},{"properties":{"path":{}}}]}}}`
	f := texts(switchboard.Tool{Name: "app.deck.export", Summary: " ", Description: "D", InputSchema: json.RawMessage(schema)})
	want := [numFields][]string{
		fieldName:        {"export"},
		fieldNamespace:   {"app.deck"},
		fieldDescription: {"D"},
		fieldParams:      {"deck_id", "format", "options", "pageRange", "recipients", "email", "target", "bucket", "path"},
		fieldParamDocs:   {"Deck to export", "Output format", "pdf", "pptx", "Address"},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
}

func TestTextsBoundsSchema(t *testing.T) {
	t.Parallel()
	// A schema nested deeper than the bound is walked only to the bound.
	s := `{"type":"string"}`
	for i := 0; i < 50; i++ {
		s = `{"properties":{"p":` + s + `}}`
	}
	f := texts(switchboard.Tool{Name: "deep", InputSchema: json.RawMessage(s)})
	if n := len(f[fieldParams]); n != maxSchemaDepth+1 {
		t.Errorf("deep schema: %d params, want %d", n, maxSchemaDepth+1)
	}
	// Invalid JSON contributes nothing rather than failing the catalog.
	f = texts(switchboard.Tool{Name: "bad", InputSchema: json.RawMessage(`{"properties":`)})
	if f[fieldParams] != nil {
		t.Errorf("invalid schema: params %q", f[fieldParams])
	}
}
