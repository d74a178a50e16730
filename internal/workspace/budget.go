package workspace

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/switchboardhq/switchboard"
)

// The budget's drop order. While a digest is over its target, recent
// activity goes first (oldest entry first), then background contexts (the
// least recent first, counted). While it is still over the hard cap, the
// rest goes in this order: panels of visible contexts, jobs, agents (idle
// before busy), visible contexts, panels of focused contexts, focused
// contexts, pending approvals — what is waiting for the user goes last.
// Jobs go before agents because every job is also a background agent
// session in agents, and seeing who else is at work is what the digest is
// for.
type dropLevel int

const (
	dropActivity dropLevel = iota
	dropBackground
	dropVisiblePanel
	dropJob
	dropAgent
	dropVisibleContext
	dropFocusedPanel
	dropFocusedContext
	dropApproval
	dropNothing
)

// budget trims d to about target tokens and never past hard (the tokens
// field is set to its size, counted exactly).
func budget(m *tokenMemo, d switchboard.WorkspaceDigest, dropped switchboard.DigestDropped, target, hard int) switchboard.WorkspaceDigest {
	d, _ = trim(m, d, dropped, target, hard)
	return d
}

// trim is budget reporting the levels it dropped at, in order (tests hold
// it to the stated order).
func trim(m *tokenMemo, d switchboard.WorkspaceDigest, dropped switchboard.DigestDropped, target, hard int) (switchboard.WorkspaceDigest, []dropLevel) {
	b := newBudgeter(m, d, dropped)
	var trace []dropLevel
	note := func(l dropLevel) {
		if n := len(trace); n == 0 || trace[n-1] != l {
			trace = append(trace, l)
		}
	}
	for b.total > target {
		l := b.drop(dropActivity, dropBackground)
		if l == dropNothing {
			break
		}
		note(l)
	}
	limit := hard - capMargin
	for {
		for b.total > limit {
			l := b.drop(dropVisiblePanel, dropApproval)
			if l == dropNothing {
				break
			}
			note(l)
		}
		out := b.digest()
		out.Tokens = 0
		body, _ := json.Marshal(out)
		// One count: the tokens field's number is its own piece (o200k
		// splits digits from punctuation, three digits a token), so its
		// final value changes the count by its extra digit groups only.
		n := Tokens(string(body))
		out.Tokens = n + numberTokens(n) - 1
		out.Tokens = n + numberTokens(out.Tokens) - 1
		if out.Tokens <= hard || b.empty() {
			return out, trace
		}
		b.total = out.Tokens + capMargin // the estimate ran short: drop more, count again
	}
}

// budgeter holds a digest's items with their token costs.
type budgeter struct {
	d        switchboard.WorkspaceDigest
	dropped  switchboard.DigestDropped
	total    int
	activity []int
	ctxBase  []int   // a context without its panels
	panels   [][]int // its panels
	agents   []int
	jobs     []int
	approval []int
}

func newBudgeter(m *tokenMemo, d switchboard.WorkspaceDigest, dropped switchboard.DigestDropped) *budgeter {
	b := &budgeter{d: d, dropped: dropped}
	cost := m.cost
	b.d.Contexts = slices.Clone(d.Contexts)
	b.d.RecentActivity = slices.Clone(d.RecentActivity)
	b.d.Agents, b.d.Jobs, b.d.PendingApprovals = slices.Clone(d.Agents), slices.Clone(d.Jobs), slices.Clone(d.PendingApprovals)
	// The skeleton with every count at four digits bounds the fixed part.
	skel := switchboard.WorkspaceDigest{User: d.User, Tokens: 9999, Handoffs: d.Handoffs, Tasks: d.Tasks, Dropped: &switchboard.DigestDropped{
		RecentActivity: 9999, BackgroundContexts: 9999, Panels: 9999, Agents: 9999, Jobs: 9999, Contexts: 9999, PendingApprovals: 9999}}
	b.total = cost(skel)
	for _, a := range b.d.RecentActivity {
		b.activity = append(b.activity, cost(a))
	}
	for i, c := range b.d.Contexts {
		bare := c
		bare.Panels = nil
		b.ctxBase = append(b.ctxBase, cost(bare))
		ps := make([]int, len(c.Panels))
		for j, p := range c.Panels {
			ps[j] = cost(p)
		}
		b.panels = append(b.panels, ps)
		b.d.Contexts[i].Panels = slices.Clone(c.Panels)
	}
	for _, a := range b.d.Agents {
		b.agents = append(b.agents, cost(a))
	}
	for _, j := range b.d.Jobs {
		b.jobs = append(b.jobs, cost(j))
	}
	for _, a := range b.d.PendingApprovals {
		b.approval = append(b.approval, cost(a))
	}
	b.total += sum(b.activity) + sum(b.ctxBase) + sum(b.agents) + sum(b.jobs) + sum(b.approval)
	for _, ps := range b.panels {
		b.total += sum(ps)
	}
	return b
}

// drop removes the next item at the first level from..to that has one.
func (b *budgeter) drop(from, to dropLevel) dropLevel {
	for l := from; l <= to; l++ {
		if b.dropAt(l) {
			return l
		}
	}
	return dropNothing
}

func (b *budgeter) dropAt(l dropLevel) bool {
	switch l {
	case dropActivity:
		if len(b.activity) == 0 {
			return false
		}
		b.total -= b.activity[0]
		b.activity, b.d.RecentActivity = b.activity[1:], b.d.RecentActivity[1:]
		b.dropped.RecentActivity++
	case dropBackground:
		return b.dropContext(switchboard.AttentionBackground, &b.dropped.BackgroundContexts)
	case dropVisiblePanel:
		return b.dropPanel(switchboard.AttentionVisible)
	case dropAgent:
		return popLast(&b.agents, &b.d.Agents, &b.total, &b.dropped.Agents)
	case dropJob:
		return popLast(&b.jobs, &b.d.Jobs, &b.total, &b.dropped.Jobs)
	case dropVisibleContext:
		return b.dropContext(switchboard.AttentionVisible, &b.dropped.Contexts)
	case dropFocusedPanel:
		return b.dropPanel(switchboard.AttentionFocused)
	case dropFocusedContext:
		return b.dropContext(switchboard.AttentionFocused, &b.dropped.Contexts)
	case dropApproval:
		return popLast(&b.approval, &b.d.PendingApprovals, &b.total, &b.dropped.PendingApprovals)
	default:
		return false
	}
	return true
}

// lastWith is the index of the last context with attention a (contexts
// are in attention order, the least recent of each attention last).
func (b *budgeter) lastWith(a switchboard.Attention) int {
	for i := len(b.d.Contexts) - 1; i >= 0; i-- {
		if b.d.Contexts[i].Attention == a {
			return i
		}
	}
	return -1
}

func (b *budgeter) dropContext(a switchboard.Attention, count *int) bool {
	i := b.lastWith(a)
	if i < 0 {
		return false
	}
	b.total -= b.ctxBase[i] + sum(b.panels[i])
	b.d.Contexts = slices.Delete(b.d.Contexts, i, i+1)
	b.ctxBase = slices.Delete(b.ctxBase, i, i+1)
	b.panels = slices.Delete(b.panels, i, i+1)
	*count++
	return true
}

// dropPanel removes the last panel of the least recent context with
// attention a that has one.
func (b *budgeter) dropPanel(a switchboard.Attention) bool {
	for i := len(b.d.Contexts) - 1; i >= 0; i-- {
		c := &b.d.Contexts[i]
		if c.Attention != a || len(c.Panels) == 0 {
			continue
		}
		n := len(c.Panels) - 1
		b.total -= b.panels[i][n]
		c.Panels, b.panels[i] = c.Panels[:n], b.panels[i][:n]
		b.dropped.Panels++
		return true
	}
	return false
}

func popLast[T any](costs *[]int, items *[]T, total, count *int) bool {
	n := len(*items)
	if n == 0 {
		return false
	}
	*total -= (*costs)[n-1]
	*costs, *items = (*costs)[:n-1], (*items)[:n-1]
	*count++
	return true
}

func (b *budgeter) empty() bool {
	return len(b.d.RecentActivity)+len(b.d.Contexts)+len(b.d.Agents)+len(b.d.Jobs)+len(b.d.PendingApprovals) == 0
}

// digest is the trimmed digest, with what was dropped when anything was.
func (b *budgeter) digest() switchboard.WorkspaceDigest {
	d := b.d
	d.Dropped = nil
	if b.dropped != (switchboard.DigestDropped{}) {
		dr := b.dropped
		d.Dropped = &dr
	}
	return d
}

// cost is v's size in tokens, plus one for the separator beside it.
// Counts are memoized by the item's JSON: between two change batches
// most items are the same, so a recompile counts only what changed.
func (m *tokenMemo) cost(v any) int {
	body, _ := json.Marshal(v)
	return m.tokens(body) + 1
}

// tokenMemo remembers token counts by text. The zero value is ready.
type tokenMemo struct {
	mu sync.Mutex
	m  map[string]int
}

// maxMemo bounds the memo; past it, it starts over.
const maxMemo = 1 << 14

func (m *tokenMemo) tokens(body []byte) int {
	m.mu.Lock()
	n, ok := m.m[string(body)]
	m.mu.Unlock()
	if ok {
		return n
	}
	n = Tokens(string(body))
	m.mu.Lock()
	if m.m == nil || len(m.m) >= maxMemo {
		m.m = map[string]int{}
	}
	m.m[string(body)] = n
	m.mu.Unlock()
	return n
}

// numberTokens is how many tokens o200k_base gives a non-negative integer.
func numberTokens(n int) int {
	digits := len(strconv.Itoa(n))
	return (digits + 2) / 3
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
