package search

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func words(s string) []string {
	out := []string{}
	splitWords(s, func(w string) { out = append(out, w) })
	return out
}

func TestSplitWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"deck.export_pdf", []string{"deck", "export", "pdf"}},
		{"deckExportPdf", []string{"deck", "Export", "Pdf"}},
		{"deck-export-pdf", []string{"deck", "export", "pdf"}},
		{"getHTTPResponse", []string{"get", "HTTP", "Response"}},
		{"HTTPServer2Go", []string{"HTTP", "Server", "2", "Go"}},
		{"utf8Decode", []string{"utf", "8", "Decode"}},
		{"v2API", []string{"v", "2", "API"}},
		{"ID", []string{"ID"}},
		{"listUsersByID", []string{"list", "Users", "By", "ID"}},
		{"__init__", []string{"init"}},
		{"a.b..c", []string{"a", "b", "c"}},
		{"Exports the deck, as PDF!", []string{"Exports", "the", "deck", "as", "PDF"}},
		{"ÉcoleNormale supérieure", []string{"École", "Normale", "supérieure"}},
		{"日本語テキスト", []string{"日本語テキスト"}},
		{"bad\xffbyte", []string{"bad", "byte"}},
	} {
		if diff := cmp.Diff(tc.want, words(tc.in)); diff != "" {
			t.Errorf("splitWords(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestTerms(t *testing.T) {
	t.Parallel()
	a := analyzer{}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Exports the deck as PDF", []string{"export", "deck", "pdf"}},
		{"deck.export", []string{"deck", "export"}},
		{"exporting decks", []string{"export", "deck"}},
		{"listUsersByID", []string{"list", "user", "id"}},
		{"invite_team_members", []string{"invit", "team", "member"}},
		{"the of and to", nil},
		{"x y z", nil}, // single characters carry no meaning
		{"404 errors", []string{"404", "error"}},
		{"Café crème", []string{"café", "crème"}}, // not English: verbatim
		{strings.Repeat("a", 100), []string{strings.Repeat("a", maxTokenBytes)}},
	} {
		if diff := cmp.Diff(tc.want, a.terms(nil, tc.in, false)); diff != "" {
			t.Errorf("terms(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzTerms checks the tokenizer's invariants on arbitrary input: terms
// are non-empty, bounded, lower-case, valid UTF-8 when the input is, and
// the memo changes nothing.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{"deck.export_pdf", "getHTTPResponse", "ÉcoleNormale", "bad\xffbyte",
		"Exports the deck, as PDF!", "v2API", "ǅungla", "ΣΑΣ", "İstanbul"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cached := analyzer{stems: map[string]string{}}
		first := cached.terms(nil, s, true)
		again := cached.terms(nil, s, true)
		plain := (&analyzer{}).terms(nil, s, false)
		if !slices.Equal(first, plain) || !slices.Equal(again, plain) {
			t.Fatalf("memo changed terms of %q: %q %q %q", s, first, again, plain)
		}
		for _, term := range plain {
			if term == "" || len(term) > maxTokenBytes {
				t.Fatalf("terms(%q) has term %q of length %d", s, term, len(term))
			}
			if utf8.ValidString(s) && !utf8.ValidString(term) {
				t.Fatalf("terms(%q) has invalid UTF-8 term %q", s, term)
			}
			if strings.ContainsAny(term, " ._-") {
				t.Fatalf("terms(%q) has unsplit term %q", s, term)
			}
		}
	})
}
