package search

import (
	"strings"
	"unicode"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/redact"
)

// Attribution of a multi-part request (docs/search.md, "Learning from
// use"): one search is often followed by calls to several tools, each
// doing one part of the request ("get the quote. Then create an
// administrator. Finally retrieve the guidelines."). Teaching every tool
// the whole request teaches each of them the other tools' words, which
// then pull it up for requests meant for those tools. Clauses and
// Attribute keep from each tool the parts that are plainly another called
// tool's. The registry attributes with Attribute since learning round 7
// (bench/README.md, "Attribution behind the per-tool gate");
// AttributeDisjoint, measured and not chosen, stays so the bench's tables
// can be reproduced.

// Clauses cuts a request into its sentences: at '.', '?', '!' or ';'
// followed by a space or the end, and at line breaks. Empty pieces are
// dropped.
func Clauses(q string) []string {
	var out []string
	start := 0
	rs := []rune(q)
	flush := func(end int) {
		if c := strings.TrimSpace(string(rs[start:end])); c != "" {
			out = append(out, c)
		}
		start = end
	}
	for i, r := range rs {
		switch {
		case r == '\n' || r == '\r':
			flush(i + 1)
		case strings.ContainsRune(".?!;", r) && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])):
			flush(i + 1)
		}
	}
	flush(len(rs))
	return out
}

// ScrubClauses returns the clauses of a search query that may be kept,
// each scrubbed as Scrub does, or ok false when nothing may be: a query
// Scrub would refuse whole (a secret) is refused whole. Quoted values,
// addresses and handles are stripped from the whole query before it is
// cut, so a value holding a sentence end is never split past them.
func ScrubClauses(q string) ([]string, bool) {
	// The secret check and stripValues run once, on the whole query: this
	// runs on every search while learning is on.
	if redact.String(q) != q {
		return nil, false
	}
	var out []string
	for _, c := range Clauses(stripValues(q)) {
		if s, ok := scrubWords(c); ok {
			out = append(out, s)
		}
	}
	return out, len(out) > 0
}

// Overlaps returns, for each clause, how many of its distinct terms each
// tool's own text holds (name, namespace, summary, description, parameter
// names and their descriptions; terms as the index analyses them; what the
// tool learned does not count).
func Overlaps(clauses []string, tools []switchboard.Tool) [][]int {
	var an analyzer // no memo: read-only use
	own := make([]map[string]bool, len(tools))
	for i, t := range tools {
		own[i] = map[string]bool{}
		f := texts(t)
		for fi, ss := range f {
			if field(fi) == fieldLearned {
				continue
			}
			for _, s := range ss {
				for _, term := range an.terms(nil, s, false) {
					own[i][term] = true
				}
			}
		}
	}
	out := make([][]int, len(clauses))
	for ci, c := range clauses {
		out[ci] = make([]int, len(tools))
		seen := map[string]bool{}
		for _, term := range an.terms(nil, c, false) {
			if seen[term] {
				continue
			}
			seen[term] = true
			for i := range tools {
				if own[i][term] {
					out[ci][i]++
				}
			}
		}
	}
	return out
}

// Attribute returns what each of tools, all called after one search,
// learns of the search's clauses (Clauses of the request, each already
// scrubbed by Scrub; refused ones left out): every clause except those
// that share strictly more words with another of the tools than with
// this one. A clause that names no tool (context: "I'm planning a trip")
// or names two tools alike stays with all of them; a single tool learns
// every clause. A tool every clause was withheld from learns them all
// (nothing says which part was its own). The clauses kept are joined in
// order and scrubbed again (Scrub bounds the length); "" only when
// nothing may be kept.
func Attribute(clauses []string, tools []switchboard.Tool) []string {
	out := make([]string, len(tools))
	ov := Overlaps(clauses, tools)
	for i := range tools {
		var kept []string
		for ci, c := range clauses {
			mine, best := ov[ci][i], 0
			for j := range tools {
				if j != i {
					best = max(best, ov[ci][j])
				}
			}
			if best <= mine {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			kept = clauses
		}
		out[i], _ = Scrub(strings.Join(kept, " "))
	}
	return out
}

// AttributeDisjoint returns what each of tools, all called after one
// search, learns of the search's clauses (as Attribute takes them): every
// clause except those the tool's own text shares no word with while
// another of the tools' does. Tools of one task (one API's endpoints)
// share words with each other's sentences and keep them; a chain of
// unrelated tools does not. A clause naming no tool stays with all; a
// single tool learns every clause; a tool every clause was withheld from
// learns them all.
func AttributeDisjoint(clauses []string, tools []switchboard.Tool) []string {
	out := make([]string, len(tools))
	ov := Overlaps(clauses, tools)
	for i := range tools {
		var kept []string
		for ci, c := range clauses {
			other := false
			for j := range tools {
				other = other || (j != i && ov[ci][j] > 0)
			}
			if ov[ci][i] > 0 || !other {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			kept = clauses
		}
		out[i], _ = Scrub(strings.Join(kept, " "))
	}
	return out
}
