package panelspec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// Stage 5: budgets. A panel is a tree of at most MaxNodes nodes and
// MaxDepth levels under an existing root; every child exists and has
// exactly one parent; strings are bounded. These keep rendering, patching
// and repair hints cheap and keep agents from composing unreadable walls.

// maxKeyBytes bounds every object key outside /state.
const maxKeyBytes = 256

func (r *run) budgetStage() {
	s := r.spec
	if len(s.Nodes) > r.lim.MaxNodes {
		r.add(switchboard.CodeSpecBudget, "", "/nodes", fmt.Sprintf("%d nodes, over the budget of %d", len(s.Nodes), r.lim.MaxNodes),
			"split the panel, or show repeated items with one table or list node")
	}

	// Nodes are numbered by their position in r.ids; parent[i] is the
	// index of node i's one parent, or -1.
	n := len(r.ids)
	root := r.index(s.Root)
	t := &tree{parent: make([]int32, n), reached: make([]bool, n), kidStart: make([]int32, n+1), kids: make([]int32, 0, n)}
	for i := range t.parent {
		t.parent[i] = -1
	}
	for i, id := range r.ids {
		t.kidStart[i] = int32(len(t.kids))
		for j, c := range s.Nodes[id].Children {
			ci := r.index(c)
			if ci >= 0 && ci != i && ci != root && t.parent[ci] < 0 {
				t.parent[ci] = int32(i)
				t.kids = append(t.kids, int32(ci))
				continue
			}
			p := nodePtr(id, "children", strconv.Itoa(j))
			switch {
			case ci < 0:
				r.add(switchboard.CodeSpecBudget, id, p, fmt.Sprintf("child %s is not a node", quote(c)), didYouMean(c, r.ids))
			case ci == i:
				r.add(switchboard.CodeSpecBudget, id, p, "a node cannot be its own child", "remove it from its children")
			case ci == root:
				r.add(switchboard.CodeSpecBudget, id, p, fmt.Sprintf("the root %s cannot be a child", quote(c)), "")
			default:
				r.add(switchboard.CodeSpecBudget, id, p, fmt.Sprintf("node %s is already a child of %s; a node has one parent", quote(c), quote(r.ids[t.parent[ci]])),
					"give the copy its own id")
			}
		}
	}

	t.kidStart[n] = int32(len(t.kids))
	if root < 0 {
		var tops []string
		for i, id := range r.ids {
			if t.parent[i] < 0 {
				tops = append(tops, id)
			}
		}
		switch {
		case s.Root == "" && len(tops) == 1:
			r.add(switchboard.CodeSpecBudget, "", "/root", "missing root", fmt.Sprintf("use %q", tops[0]))
		case s.Root == "":
			r.add(switchboard.CodeSpecBudget, "", "/root", "missing root", "set root to the id of the top node")
		default:
			r.add(switchboard.CodeSpecBudget, "", "/root", fmt.Sprintf("root %s is not a node", quote(s.Root)), didYouMean(s.Root, tops))
		}
	} else {
		r.walkTree(t, root)
	}

	// Nodes the walk did not reach are in a cycle or simply orphaned.
	var inCycle []bool
	for i, id := range r.ids {
		if t.reached[i] || (inCycle != nil && inCycle[i]) {
			continue
		}
		var cycle []string
		for cur, steps := t.parent[i], 0; cur >= 0 && steps <= n; cur, steps = t.parent[cur], steps+1 {
			if int(cur) == i {
				if inCycle == nil {
					inCycle = make([]bool, n)
				}
				cycle = append(cycle, id)
				sort.Strings(cycle)
				for _, c := range cycle {
					inCycle[r.index(c)] = true
				}
				r.add(switchboard.CodeSpecBudget, cycle[0], nodePtr(cycle[0], "children"),
					fmt.Sprintf("nodes %s form a cycle", strings.Join(cycle, ", ")), "children must form a tree under the root")
				break
			}
			cycle = append(cycle, r.ids[cur])
		}
		if (inCycle == nil || !inCycle[i]) && !r.info[i].broken && root >= 0 {
			r.warn(switchboard.CodeSpecBudget, id, nodePtr(id), "node is not reachable from the root and will not render",
				"add it to a parent's children, or remove it")
		}
	}

	r.stringBudget()
}

// tree is the parent/child structure of the nodes by index. The children
// of node i that have it as their one parent are kids[kidStart[i]:kidStart[i+1]].
type tree struct {
	parent   []int32
	kidStart []int32
	kids     []int32
	reached  []bool
}

func (t *tree) children(i int32) []int32 { return t.kids[t.kidStart[i]:t.kidStart[i+1]] }

// walkTree marks nodes reachable from the root and reports the first level
// past MaxDepth. Each node has one parent in t, so each is visited once.
func (r *run) walkTree(t *tree, root int) {
	type item struct {
		i     int32
		depth int
	}
	t.reached[root] = true
	stack := []item{{int32(root), 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth > r.lim.MaxDepth {
			id := r.ids[it.i]
			r.add(switchboard.CodeSpecBudget, id, nodePtr(id), fmt.Sprintf("node is at depth %d, over the budget of %d", it.depth, r.lim.MaxDepth),
				"flatten the layout: fewer nested stacks, rows and columns")
			t.markSubtree(it.i)
			continue
		}
		kids := t.children(it.i)
		for k := len(kids) - 1; k >= 0; k-- {
			t.reached[kids[k]] = true
			stack = append(stack, item{kids[k], it.depth + 1})
		}
	}
}

// markSubtree marks everything under i reached, without reporting depth
// again for each of them.
func (t *tree) markSubtree(i int32) {
	stack := []int32{i}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range t.children(cur) {
			t.reached[c] = true
			stack = append(stack, c)
		}
	}
}

// stringBudget bounds every string and key outside /state, which is data
// and bounded only by the byte limit. An image's data: URL gets the larger
// MaxDataURL budget. The parser recorded every candidate.
func (r *run) stringBudget() {
	from := len(r.issues)
	for _, lv := range r.parsed.long {
		if len(lv.path) > 0 && lv.path[0] == "state" {
			continue
		}
		switch {
		case lv.isKey && lv.n > maxKeyBytes:
			r.add(switchboard.CodeSpecBudget, nodeOf(lv.path), ptr(lv.path...), fmt.Sprintf("key of %d bytes, over the budget of %d", lv.n, maxKeyBytes), "")
		case lv.isKey:
		default:
			limit := r.lim.MaxString
			if lv.data && r.isImageURL(lv.path) {
				limit = r.lim.MaxDataURL
			}
			if r.isPreviewCode(lv.path) {
				limit = MaxPreviewCode
			}
			if lv.n > limit {
				r.add(switchboard.CodeSpecBudget, nodeOf(lv.path), ptr(lv.path...), fmt.Sprintf("string of %d bytes, over the budget of %d", lv.n, limit),
					"shorten it, or move bulk data into /state")
			}
		}
	}
	sortIssues(r.issues[from:])
}

// isImageURL reports whether path is /nodes/{id}/props/{p} with p an image
// URL prop of the node's type.
func (r *run) isImageURL(path []string) bool {
	if len(path) != 4 || path[0] != "nodes" || path[2] != "props" {
		return false
	}
	i := r.index(path[1])
	if i < 0 {
		return false
	}
	ni := r.info[i]
	return ni.entry != nil && !ni.unknown && ni.entry.urls[path[3]] == "image"
}

// nodeOf returns the node id a pointer path is under, if any.
func nodeOf(path []string) string {
	if len(path) >= 2 && path[0] == "nodes" {
		return path[1]
	}
	return ""
}

// sortIssues orders issues found in map order by pointer, so the result
// does not depend on map iteration order.
func sortIssues(list []Issue) {
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].Pointer != list[j].Pointer {
			return list[i].Pointer < list[j].Pointer
		}
		return list[i].Message < list[j].Message
	})
}
