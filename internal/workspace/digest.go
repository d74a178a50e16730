package workspace

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// The digest's own bounds, before the token budget: what one entry may
// show (the drill-down tools show the rest).
const (
	RecentActivity      = 15 // entries of recentActivity
	digestPanels        = 20 // panels of one context
	digestLabel         = 80 // runes of a label or title
	digestText          = 160
	activityScan        = 100 // newest entries read to find the visible ones
	maxPendingApprovals = 100
	digestHandoffsKept  = 3 // newest handoffs to the reader (agents.list shows all)
	digestTasks         = 5 // newest open tasks of the reader's user
	// capMargin keeps room for the tokens field's own digits.
	capMargin = 2
)

// Drill-down tools, read class: a scoped agent sees a section of the
// digest when it may see the tool that drills into it (registry.Visible).
const (
	ToolDescribeContext = "workspace.describe_context"
	ToolActivityGet     = "activity.get"
)

// cached is a compiled digest of one reader at one version.
type cached struct {
	head   int64
	digest switchboard.WorkspaceDigest
	body   []byte
}

// Digest returns the workspace as the caller in ctx may see it
// (switchboard.PrincipalFrom; WithUser binds it to one user's tabs),
// token-budgeted. It is cached per reader until the next change batch;
// the returned slices are shared and must not be modified.
func (w *Workspace) Digest(ctx context.Context) (switchboard.WorkspaceDigest, error) {
	d, _, err := w.digest(ctx)
	return d, err
}

// DigestJSON is Digest as JSON, marshalled once per change batch.
func (w *Workspace) DigestJSON(ctx context.Context) ([]byte, error) {
	_, b, err := w.digest(ctx)
	return b, err
}

func (w *Workspace) digest(ctx context.Context) (switchboard.WorkspaceDigest, []byte, error) {
	key := readerKey(ctx)
	var head int64
	if w.opts.Ledger != nil {
		head, _ = w.opts.Ledger.Head()
	}
	w.mu.Lock()
	c, ok := w.cache[key]
	version := w.version
	w.mu.Unlock()
	if ok && c.head == head {
		return c.digest, c.body, nil
	}
	d, err := w.compile(ctx)
	if err != nil {
		return d, nil, err
	}
	body, err := json.Marshal(d)
	if err != nil {
		return d, nil, err
	}
	w.mu.Lock()
	if w.version == version {
		if len(w.cache) >= maxCached {
			clear(w.cache)
		}
		w.cache[key] = cached{head: head, digest: d, body: body}
	}
	w.mu.Unlock()
	return d, body, nil
}

// maxCached bounds the readers cached at one version.
const maxCached = 256

// readerKey names what a digest depends on besides the workspace: who
// reads (principal and scope) and whose tabs.
func readerKey(ctx context.Context) string {
	p, _ := switchboard.PrincipalFrom(ctx)
	agent, _ := switchboard.AgentSessionFrom(ctx) // its scope may limit panels; its handoffs
	return p.String() + "\x00" + strings.Join(p.Allow, ",") + "\x00" + strings.Join(p.Deny, ",") + "\x00" + viewerUser(ctx) + "\x00" + viewerTab(ctx) +
		"\x00" + strings.Join(p.Panels, ",") + "\x00" + strings.Join(p.Slots, ",") + "\x00" + agent
}

// compile gathers every section the reader may see and trims it to the
// budget.
func (w *Workspace) compile(ctx context.Context) (switchboard.WorkspaceDigest, error) {
	d := switchboard.WorkspaceDigest{User: w.userOf(ctx), Contexts: []switchboard.WorkspaceContext{},
		Agents: []switchboard.DigestAgent{}, Jobs: []switchboard.DigestJob{},
		PendingApprovals: []switchboard.DigestApproval{}, RecentActivity: []switchboard.DigestActivity{}}
	var dropped switchboard.DigestDropped
	if w.gate(ctx, ToolDescribeContext) {
		d.Contexts, dropped = w.digestContexts(ctx)
	}
	own, err := w.ownerOf(ctx)
	if err != nil {
		return d, err
	}
	if w.opts.Quotas != nil {
		d.Quotas = w.opts.Quotas(ctx) // what a runaway agent has left today
	}
	if w.opts.Agents != nil && w.gate(ctx, ToolAgentsList) {
		agents, err := w.opts.Agents.List(ctx)
		if err != nil {
			return d, err
		}
		d.Agents = digestAgents(agents)
	}
	if w.opts.Jobs != nil {
		for _, j := range w.opts.Jobs.Running() {
			if w.toolVisible(ctx, j.Tool) && own.job(j) {
				dj := switchboard.DigestJob{ID: j.ID, Capability: j.Tool, Scope: j.Caller, Status: string(j.Status)}
				if j.Progress > 0 {
					p := j.Progress
					dj.Progress = &p
				}
				d.Jobs = append(d.Jobs, dj)
			}
		}
	}
	if w.opts.Approvals != nil {
		pending, err := w.opts.Approvals.List(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending, Limit: maxPendingApprovals})
		if err != nil {
			return d, err
		}
		for _, a := range pending {
			if w.toolVisible(ctx, a.Tool) && own.approval(a) {
				da := switchboard.DigestApproval{ID: a.ID, AgentID: cmp.Or(a.AgentID, a.Agent),
					Summary: clip(a.Summary, digestText), Escalated: a.Agent != switchboard.Assistant().String()}
				if w.opts.Panels != nil {
					da.PanelID = w.opts.Panels.InstanceOf(a.InvocationID)
				}
				d.PendingApprovals = append(d.PendingApprovals, da)
			}
		}
	}
	if w.opts.Tasks != nil {
		user := ""
		if !own.all {
			user = own.user
		}
		for i, t := range w.opts.Tasks(ctx, user) {
			if i == digestTasks {
				break
			}
			d.Tasks = append(d.Tasks, switchboard.DigestTask{ID: t.ID, Goal: clip(t.Goal, digestText), Status: t.Status, Calls: t.Usage.Calls, Owner: t.Owner, Assignee: t.Assignee})
		}
	}
	if id, ok := switchboard.AgentSessionFrom(ctx); ok && w.opts.Handoffs != nil {
		d.Handoffs = digestHandoffs(w.opts.Handoffs.Handoffs(id))
	}
	if w.opts.Ledger != nil && w.gate(ctx, ToolActivityGet) {
		entries, err := w.activity(ctx, switchboard.ActivityFilter{}, activityScan)
		if err != nil {
			return d, err
		}
		for _, e := range entries {
			if !own.entry(e) {
				continue
			}
			d.RecentActivity = append(d.RecentActivity, switchboard.DigestActivity{Ts: e.Ts, Actor: e.Actor, Verb: e.Verb, Target: clip(e.Target, digestText)})
		}
		if n := len(d.RecentActivity); n > RecentActivity {
			d.RecentActivity = d.RecentActivity[n-RecentActivity:]
		}
	}
	return budget(&w.memo, d, dropped, w.opts.TargetTokens, w.opts.MaxTokens), nil
}

// owner is what belongs to the user a reader is bound to (a tab, the
// assistant in a tab): the jobs, approvals and ledger entries of another
// user are not in that reader's digest. An unbound reader (the admin, an
// agent token, a tab opened without a user: the daemon's own user) owns
// everything; agent tokens are limited by their scope instead.
type owner struct {
	all     bool
	tab     string          // the reading tab, "" when none
	user    string          // "user:alice"
	actors  map[string]bool // the user, its tabs' session principals
	tabs    map[string]bool // its tabs' session ids
	agents  map[string]bool // its agent sessions' ids, runs and jobs
	decides func(switchboard.ApprovalRequest) bool
}

// ownerOf gathers what the reader's user owns: its tabs, and the agent
// sessions at work acting for it (agents.go decides which those are).
func (w *Workspace) ownerOf(ctx context.Context) (owner, error) {
	u := viewerUser(ctx)
	if u == "" {
		o := owner{all: true}
		if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind != switchboard.PrincipalSession {
			// Not bound to a tab: the approvals rule still keeps another
			// user's requests out (an agent acting for bob, alice's).
			o.decides = func(a switchboard.ApprovalRequest) bool { return SeesApproval(ctx, nil, ViewerOf(p), a) }
		}
		return o, nil
	}
	o := owner{tab: viewerTab(ctx), user: userOf(u), actors: map[string]bool{userOf(u): true},
		tabs: map[string]bool{}, agents: map[string]bool{}}
	w.mu.Lock()
	for sid, t := range w.tabs {
		if t.user == u {
			o.tabs[sid] = true
			o.actors[switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sid}.String()] = true
		}
	}
	w.mu.Unlock()
	if o.tab != "" {
		o.tabs[o.tab] = true
		o.actors[switchboard.Principal{Kind: switchboard.PrincipalSession, ID: o.tab}.String()] = true
	}
	var reg *Agents
	if w.opts.Agents != nil {
		if l, ok := w.opts.Agents.(agentsLister); ok {
			reg = l.a
		}
		sessions, err := w.opts.Agents.List(ctx) // bound to u: that user's sessions
		if err != nil {
			return o, err
		}
		for _, s := range sessions {
			for _, id := range []string{s.ID, s.RunID, s.JobID} {
				if id != "" {
					o.agents[id] = true
				}
			}
		}
	}
	o.decides = func(a switchboard.ApprovalRequest) bool { return TabMayDecide(ctx, reg, a, o.tab, u) }
	return o, nil
}

// job: a job the user's tab, or one of its agent sessions, started.
func (o owner) job(j switchboard.Job) bool {
	return o.all || o.actors[j.Caller] || o.agents[j.ID] || (j.RunID != "" && o.agents[j.RunID])
}

// approval: the approvals routes' rule (SeesApproval; TabMayDecide for
// tabs).
func (o owner) approval(a switchboard.ApprovalRequest) bool {
	if o.decides != nil {
		return o.decides(a)
	}
	return o.all
}

// entry: a ledger entry whose actor is the user or one of its tabs, or
// whose details name one of its tabs or agent sessions, or an agent
// session's status change.
func (o owner) entry(e switchboard.ActivityEntry) bool {
	if o.all || o.actors[e.Actor] {
		return true
	}
	if e.Verb == activity.VerbAgentStatus && o.agents[e.Target] {
		return true
	}
	var d struct {
		SessionID string `json:"sessionId"`
		AgentID   string `json:"agentId"`
		RunID     string `json:"runId"`
	}
	if json.Unmarshal(e.Details, &d) != nil {
		return false
	}
	return (d.SessionID != "" && o.tabs[d.SessionID]) || (d.AgentID != "" && o.agents[d.AgentID]) || (d.RunID != "" && o.agents[d.RunID])
}

// userOf names whose workspace this is.
func (w *Workspace) userOf(ctx context.Context) string {
	if u := viewerUser(ctx); u != "" {
		return "user:" + clip(u, digestLabel)
	}
	if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind == switchboard.PrincipalUser {
		return clip(p.String(), digestLabel)
	}
	return "user:admin"
}

// gate reports whether the reader may see the section that tool drills
// into: the one predicate, asked about that read-class tool.
func (w *Workspace) gate(ctx context.Context, tool string) bool {
	return w.opts.Registry.Visible(ctx, switchboard.Tool{Name: tool, Class: switchboard.ClassRead, Surface: switchboard.SurfaceAPI})
}

// toolVisible reports whether the reader may see the tool an item is
// about (a job's, an approval's, a ledger entry's target). A name the
// catalog does not hold is visible only to readers who see everything.
func (w *Workspace) toolVisible(ctx context.Context, name string) bool {
	if p, ok := switchboard.PrincipalFrom(ctx); !ok || p.Kind != switchboard.PrincipalAgent {
		return true
	}
	_, err := w.opts.Registry.Get(ctx, name)
	return err == nil
}

// digestContexts is every context the reader's user has open, most
// attended first (the newest report first within one attention), each
// trimmed to the digest's bounds; tab-level drops are counted.
func (w *Workspace) digestContexts(ctx context.Context) ([]switchboard.WorkspaceContext, switchboard.DigestDropped) {
	user := viewerUser(ctx)
	var dropped switchboard.DigestDropped
	type entry struct {
		c  switchboard.WorkspaceContext
		at int64
	}
	var all []entry
	w.mu.Lock()
	for _, t := range w.tabs {
		if !userSees(user, t.user) {
			continue
		}
		dropped.Contexts += t.dropped.Contexts
		dropped.Panels += t.dropped.Panels
		for _, c := range t.contexts {
			all = append(all, entry{c, t.at.UnixNano()})
		}
	}
	w.mu.Unlock()
	slices.SortFunc(all, func(a, b entry) int {
		if c := cmp.Compare(rank(a.c.Attention), rank(b.c.Attention)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.at, a.at); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.c.SessionID, b.c.SessionID), strings.Compare(a.c.ID, b.c.ID))
	})
	out := make([]switchboard.WorkspaceContext, len(all))
	for i, e := range all {
		c := e.c
		c.Label = clip(c.Label, digestLabel)
		c.Route = clip(c.Route, digestText)
		if c.Selection != nil {
			s := *c.Selection
			s.Text = clip(s.Text, digestText)
			c.Selection = &s
		}
		if w.opts.PanelAdmits != nil { // the reader's panel scope: outside it, a panel is not there
			c.Panels = slices.DeleteFunc(slices.Clone(c.Panels), func(p switchboard.WorkspacePanel) bool { return !w.opts.PanelAdmits(ctx, p.ID) })
		}
		if len(c.Panels) > digestPanels {
			dropped.Panels += len(c.Panels) - digestPanels
			c.Panels = c.Panels[:digestPanels]
		}
		panels := make([]switchboard.WorkspacePanel, len(c.Panels))
		for j, p := range c.Panels {
			p.Title = clip(p.Title, digestLabel)
			panels[j] = p
		}
		c.Panels = panels
		out[i] = c
	}
	return out, dropped
}

// digestHandoffs keeps the newest handoffs, newest first, each clipped:
// a fixed, small part of the digest the budget never drops.
func digestHandoffs(hs []switchboard.AgentHandoff) []switchboard.DigestHandoff {
	var out []switchboard.DigestHandoff
	for i := len(hs) - 1; i >= 0 && len(out) < digestHandoffsKept; i-- {
		h := hs[i]
		out = append(out, switchboard.DigestHandoff{ID: h.ID, From: h.From, FromActor: clip(h.FromActor, digestLabel),
			Task: clip(h.Task, digestText), ReturnTo: h.ReturnTo, Artifacts: len(h.Artifacts), CreatedAt: h.CreatedAt})
	}
	return out
}

// digestAgents keeps the sessions at work, busiest first.
func digestAgents(agents []switchboard.AgentSession) []switchboard.DigestAgent {
	out := []switchboard.DigestAgent{}
	for _, a := range agents {
		if a.Status.Final() {
			continue
		}
		out = append(out, switchboard.DigestAgent{ID: a.ID, Kind: a.Kind, Label: clip(a.Label, digestLabel),
			Principal: clip(a.Principal, digestLabel), Scope: a.Scope, Status: a.Status, Task: clip(a.Task, digestText)})
	}
	busy := func(s switchboard.AgentStatus) int {
		switch s {
		case switchboard.AgentWaitingApproval:
			return 0
		case switchboard.AgentRunning:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b switchboard.DigestAgent) int { return cmp.Compare(busy(a.Status), busy(b.Status)) })
	return out
}

// activity is the newest limit ledger entries matching f that the reader
// may see, oldest first.
func (w *Workspace) activity(ctx context.Context, f switchboard.ActivityFilter, limit int) ([]switchboard.ActivityEntry, error) {
	f.Limit = max(limit, activityScan)
	entries, err := w.opts.Ledger.Tail(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]switchboard.ActivityEntry, 0, limit)
	for i := len(entries) - 1; i >= 0 && len(out) < limit; i-- {
		if w.toolVisible(ctx, entries[i].Target) && seesEntry(ctx, entries[i]) {
			out = append(out, entries[i])
		}
	}
	slices.Reverse(out)
	return out, nil
}

// seesEntry is the record rule (SeesRecord) for a reader bound to no tab
// and not the operator — an agent over MCP or HTTP, acting for a user:
// an entry naming the user a call was made for (a tool call's details)
// is read as that call's record; an entry naming none only by its own
// actor. A tab-bound reader's entries are chosen by ownerOf; the
// operator, and the daemon's own reads with no principal, see all.
func seesEntry(ctx context.Context, e switchboard.ActivityEntry) bool {
	if viewerUser(ctx) != "" {
		return true
	}
	p, ok := switchboard.PrincipalFrom(ctx)
	if !ok {
		return true
	}
	return SeesEntry(p, e)
}

// SeesEntry is the record rule for ledger entries read by p — the
// operator, a person (the console's user) or an agent, not a tab: an
// entry naming the user a call was made for (a tool call's details) is
// read as that call's record (SeesRecord); an entry naming none only by
// its own actor.
func SeesEntry(p switchboard.Principal, e switchboard.ActivityEntry) bool {
	v := ViewerOf(p)
	if v.admin() {
		return true
	}
	var d struct {
		User string `json:"user"`
	}
	if json.Unmarshal(e.Details, &d) != nil || d.User == "" {
		return e.Actor == p.String()
	}
	return SeesRecord(v, e.Actor, d.User)
}

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// The tokenizer of the manifest benchmark (bench/manifest_test.go), so a
// digest's size is comparable with the catalog's.
var codec = sync.OnceValues(func() (tokenizer.Codec, error) { return tokenizer.Get(tokenizer.O200kBase) })

// Tokens counts s in model tokens (o200k_base).
func Tokens(s string) int {
	c, err := codec()
	if err != nil {
		return (len(s) + 2) / 3 // never: the encoding is compiled in; a conservative estimate
	}
	n, err := c.Count(s)
	if err != nil {
		return (len(s) + 2) / 3
	}
	return n
}
