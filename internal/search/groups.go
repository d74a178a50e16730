package search

import (
	"cmp"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// Group is one line of a grouped listing: tools that share a namespace
// (the part of their names before the first dot) or a word of their
// names. A model reads the groups of a large catalog instead of one line
// a tool, and lists a group by searching for its key.
type Group struct {
	// Key is the namespace or the word the members share.
	Key string `json:"group"`
	// Namespace is true when Key is a namespace (every member is named
	// "Key.…"); otherwise Key is a word of every member's name.
	Namespace bool `json:"namespace,omitempty"`
	Count     int  `json:"count"`
	// Examples are up to GroupExamples members by name, a taste of what
	// the group holds.
	Examples []string `json:"examples"`
}

// GroupExamples is how many member names a group shows.
const GroupExamples = 3

// stopWords never key a group: they say nothing about what a tool is for.
var stopWords = map[string]bool{
	"api": true, "and": true, "the": true, "for": true, "with": true, "from": true,
	"by": true, "of": true, "to": true, "in": true, "on": true, "v1": true, "v2": true,
}

// Groups folds tools into at most max groups, biggest first, and returns
// how many tools no group holds. A group's key is the namespace or name
// word that covers the most tools not yet grouped (a namespace wins a
// tie: it is exact); a key shared by more than an eighth of a large
// catalog ("get", "list") is too broad to tell a model anything and is
// passed over, and a key of one tool is not a group. The answer depends
// only on the tools, never on their order.
func Groups(tools []switchboard.Tool, max int) (groups []Group, other int) {
	type cand struct {
		key string
		ns  bool
	}
	members := map[cand][]int{}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	order := make([]int, len(tools))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for _, i := range order {
		name := names[i]
		seen := map[cand]bool{}
		if ns, _, ok := strings.Cut(name, "."); ok && ns != "" {
			c := cand{ns, true}
			seen[c] = true
			members[c] = append(members[c], i)
		}
		splitWords(name, func(w string) {
			w = strings.ToLower(w)
			c := cand{w, false}
			if len(w) < 3 || stopWords[w] || isDigits(w) || seen[c] {
				return
			}
			seen[c] = true
			members[c] = append(members[c], i)
		})
	}
	broad := len(tools) / 8
	if len(tools) < 40 {
		broad = len(tools) // a small catalog has no "too broad" word
	}
	covered := make([]bool, len(tools))
	left := len(tools)
	for len(groups) < max && left > 0 {
		var best cand
		bestN := 0
		for c, ids := range members {
			if !c.ns && len(ids) > broad {
				continue
			}
			n := 0
			for _, id := range ids {
				if !covered[id] {
					n++
				}
			}
			if n > bestN || (n == bestN && n > 0 && better(c.key, c.ns, best.key, best.ns)) {
				best, bestN = c, n
			}
		}
		if bestN < 2 {
			break
		}
		g := Group{Key: best.key, Namespace: best.ns, Count: bestN}
		for _, id := range members[best] {
			if covered[id] {
				continue
			}
			covered[id] = true
			left--
			if len(g.Examples) < GroupExamples {
				g.Examples = append(g.Examples, names[id])
			}
		}
		delete(members, best)
		groups = append(groups, g)
	}
	slices.SortStableFunc(groups, func(a, b Group) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return groups, left
}

// better orders candidates of equal coverage: a namespace, then the key
// that sorts first, so ties never depend on map order.
func better(key string, ns bool, than string, thanNS bool) bool {
	if ns != thanNS {
		return ns
	}
	return key < than
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
