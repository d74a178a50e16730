package panelspec

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/editdist"
)

// This file holds the small text helpers behind issues: JSON pointers,
// "did you mean" suggestions by edit distance, and bounded quoting.

// escapePointer escapes one RFC 6901 reference token.
func escapePointer(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// ptr joins reference tokens into a JSON pointer.
func ptr(toks ...string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

// nodePtr is the pointer of node id, optionally extended by tokens.
func nodePtr(id string, toks ...string) string {
	return ptr(append([]string{"nodes", id}, toks...)...)
}

// closest returns the candidate nearest to s by case-insensitive edit
// distance, or "" when none is close enough to be a plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := editdist.Distance(ls, lc)
		// A candidate that contains s or is contained by it ("head" for
		// "heading", "form" for "field-form") is a good guess too.
		if len(ls) >= 3 && (strings.Contains(lc, ls) || strings.Contains(ls, lc)) {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := max(2, utf8.RuneCountInString(s)/3)
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// didYouMean phrases a suggestion for s among candidates: the closest one
// if any is close, else the whole list when it is short.
func didYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return "did you mean " + strconv.Quote(c) + "?"
	}
	return oneOf(candidates)
}

// oneOf phrases a short list of allowed values.
func oneOf(candidates []string) string {
	if len(candidates) == 0 || len(candidates) > 24 {
		return ""
	}
	c := append([]string(nil), candidates...)
	sort.Strings(c)
	q := make([]string, len(c))
	for i, s := range c {
		q[i] = strconv.Quote(s)
	}
	return "use one of " + strings.Join(q, ", ")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// quote quotes s for a message, bounded so hostile values cannot flood the
// issue list.
func quote(s string) string { return strconv.Quote(truncate(s, 60)) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
