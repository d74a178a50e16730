package editdist

import (
	"slices"
	"strings"
)

// maxSuggestions bounds a did-you-mean list.
const maxSuggestions = 3

// Suggest returns the candidates a mistyped word most likely meant, nearest
// first: those within a small edit distance (a transposition counts as one
// edit, so titel finds title), and those the word is a prefix of. Case is
// ignored. Nothing is suggested for the empty word.
func Suggest(word string, candidates []string) []string {
	w := strings.ToLower(word)
	if w == "" {
		return nil
	}
	limit := 2
	if len([]rune(w)) <= 3 {
		limit = 1
	}
	type scored struct {
		name string
		d    int
	}
	var hits []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if seen[c] || c == word {
			continue
		}
		seen[c] = true
		d := Distance(w, lc)
		if d > limit && !(len(w) >= 3 && strings.HasPrefix(lc, w)) {
			continue
		}
		hits = append(hits, scored{c, d})
	}
	slices.SortStableFunc(hits, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, h := range hits {
		if len(out) == maxSuggestions {
			break
		}
		out = append(out, h.name)
	}
	return out
}

// OrList joins names for a question: "a", "a or b", "a, b or c".
func OrList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
