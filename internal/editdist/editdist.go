// Package editdist measures how far apart two short strings are, for the
// "did you mean" suggestions of the CLI, the manifest reader and the panel
// spec validator, and picks those suggestions (Suggest).
package editdist

// maxRunes bounds the inputs (names, keys, types) so the quadratic cost
// stays small; longer inputs are compared by their first maxRunes runes.
const maxRunes = 64

// Distance is the optimal string alignment distance between a and b, by
// rune: insertions, deletions, substitutions and adjacent transpositions
// each cost 1, so "titel" is one edit from "title".
func Distance(a, b string) int {
	ra, rb := runes(a), runes(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// runes is s as runes, at most maxRunes of them, without converting more
// of a huge string than it keeps.
func runes(s string) []rune {
	out := make([]rune, 0, min(len(s), maxRunes))
	for _, r := range s {
		if len(out) == maxRunes {
			break
		}
		out = append(out, r)
	}
	return out
}
