package search

import (
	"cmp"
	"fmt"
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
	// Words are up to GroupWords words its members' names share most
	// besides the key, the group's one-line summary of what it holds
	// ("issue", "pull", "release" for a namespace "github"). A word common
	// across the whole catalog ("get", "list") says nothing and is left out.
	Words []string `json:"words,omitempty"`
	// Examples are up to GroupExamples members by name, a taste of what
	// the group holds.
	Examples []string `json:"examples"`
}

// GroupExamples is how many member names a group shows.
const GroupExamples = 3

// GroupWords is how many summary words a group shows.
const GroupWords = 4

// Line renders g as one line of a deferred listing, the same in every
// listing that shows groups (MCP's search tool, the agent's prompt):
// "- github (40 tools about issue, pull, release): a, b, c, …". name maps a
// member's catalog name to the name the reader calls it by.
func (g Group) Line(name func(string) string) string {
	ex := make([]string, len(g.Examples))
	for i, n := range g.Examples {
		ex[i] = name(n)
	}
	more := ""
	if g.Count > len(ex) {
		more = ", …"
	}
	about := ""
	if len(g.Words) > 0 {
		about = " about " + strings.Join(g.Words, ", ")
	}
	return fmt.Sprintf("- %s (%d tools%s): %s%s", g.Key, g.Count, about, strings.Join(ex, ", "), more)
}

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
	// How many tools of the catalog each name word is in, before groups
	// are taken out of members: a summary word must not be a broad one.
	inCatalog := make(map[string]int, len(members))
	for c, ids := range members {
		if !c.ns {
			inCatalog[c.key] = len(ids)
		}
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
		var in []int
		for _, id := range members[best] {
			if covered[id] {
				continue
			}
			covered[id] = true
			in = append(in, id)
			left--
			if len(g.Examples) < GroupExamples {
				g.Examples = append(g.Examples, names[id])
			}
		}
		g.Words = summaryWords(best.key, in, names, func(w string) bool { return inCatalog[w] > broad })
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

// summaryWords is the GroupWords words most of a group's members' names
// (ids, by index in names) hold besides key, each in at least two of them;
// ties go to the word that sorts first, so the answer does not depend on
// map order.
func summaryWords(key string, ids []int, names []string, broad func(string) bool) []string {
	count := map[string]int{}
	for _, id := range ids {
		seen := map[string]bool{}
		splitWords(names[id], func(w string) {
			w = strings.ToLower(w)
			if len(w) < 3 || w == key || stopWords[w] || isDigits(w) || seen[w] || broad(w) {
				return
			}
			seen[w] = true
			count[w]++
		})
	}
	words := make([]string, 0, len(count))
	for w, n := range count {
		if n >= 2 {
			words = append(words, w)
		}
	}
	slices.SortFunc(words, func(a, b string) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if len(words) == 0 {
		return nil
	}
	return words[:min(len(words), GroupWords)]
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
