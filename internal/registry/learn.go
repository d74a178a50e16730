package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/search"
)

// This file is search that learns from use (docs/search.md, "Learning
// from use"): a successful call by a caller within LearnWindow after that
// caller's search makes the search's sentences, scrubbed, a positive
// example for the called tool, less the sentences that belong to another
// tool called after the same search (search.Attribute); the examples live
// in the store and feed each tool's learned field in the index.

// Learning's fixed bounds.
const (
	// LearnWindow is how long after a search a call is attributed to it
	// (pinned for clients).
	LearnWindow = 120 * time.Second
	// LearnPerCallerTool and LearnPerCaller bound one caller's stored
	// examples, per tool and overall (the newest are kept), so no caller
	// can pull a tool up for more than a handful of phrasings.
	LearnPerCallerTool = 10
	LearnPerCaller     = 1000
	// LearnToolsPerSearch is how many distinct tools one search may be
	// attributed to: a multi-part request legitimately leads to a few
	// calls; an agent calling everything after one search does not teach.
	LearnToolsPerSearch = 3
	// learnHalfLife is the age at which an example counts half.
	learnHalfLife = 30 * 24 * time.Hour
	// learnRecent is how many searches are remembered per caller, and
	// learnCallers how many callers, for attribution.
	learnRecent  = 8
	learnCallers = 4096
	// learnWriters bounds concurrent example writes; a search's first
	// example arriving while all are busy is dropped (learning is best
	// effort, the call is not). A rewrite of what a search taught and a
	// reversal wait for a writer instead: dropping them would leave an
	// example the spec says is gone.
	learnWriters = 4
	// LearnRefresh is how often a registry reloads the examples other
	// replicas stored.
	LearnRefresh = time.Minute
)

// learner is the attribution state: each caller's recent searches, in this
// replica's memory. A search on one replica and a call on another are not
// attributed (sessions stick to a replica in practice).
type learner struct {
	off bool

	mu     sync.Mutex
	recent map[string][]searched // by caller key, oldest first
	loaded time.Time             // the last full load of the examples
	// pending counts each search's writes not yet done, so a reversal
	// finds the search of a call whose write is still to come even once
	// the caller's newer searches pushed it out of recent.
	pending map[*taught]int

	// reloadMu makes a reload's store read and its setting of the index
	// one step: otherwise a reload that read before a change could set
	// the index after the change's own reload did, and the index would
	// hold a reversed or forgotten example until the next full refresh.
	reloadMu sync.Mutex

	sem chan struct{}
	wg  sync.WaitGroup
}

// searched is one remembered search: the session and run it belongs to,
// when, and what it taught (its taught holds its scrubbed sentences, none
// when the query may not be kept, which still ends the attribution of the
// caller's earlier searches, and the calls attributed to it so far).
type searched struct {
	agent  string // the agent session that searched, if the search knew it
	run    string
	at     time.Time
	taught *taught
}

// taught is what one search taught: each call attributed to it, in
// order. A further call changes what the earlier ones learn (a sentence
// is withheld from a tool once a tool it fits better is called), so each
// write stores the whole search's current attribution; mu keeps the
// writes of one search in order.
type taught struct {
	mu     sync.Mutex // held by the search's writes (in order), not by l.mu
	caller string
	// clauses is the search's scrubbed sentences, joined by newlines
	// (Scrub leaves none): a query of many tiny sentences held as one
	// string each took ten times its bytes, in every remembered search.
	clauses string
	calls   []taughtCall
}

// taughtCall is one call a search taught: the tool as it was declared,
// the invocation, when, and the text last stored for it ("" not yet).
type taughtCall struct {
	tool       switchboard.Tool
	invocation string
	at         time.Time
	reversed   bool
	// forgotten: the tool's examples were forgotten (Forget, or the
	// tool's deletion) after this call; it still holds its sentences
	// from the others, but a rewrite of the search must not store its
	// example again.
	forgotten bool
	stored    string
}

type searchRunKey struct{}

// WithSearchRun returns ctx carrying the run a search belongs to (an MCP
// session's run): a call is then attributed to the search only when it is
// part of the same run, so two sessions of one token do not teach each
// other.
func WithSearchRun(ctx context.Context, run string) context.Context {
	return context.WithValue(ctx, searchRunKey{}, run)
}

// noteSearch remembers a first-page search by the caller in ctx.
func (r *Registry) noteSearch(ctx context.Context, q switchboard.SearchQuery) {
	if r.learn.off || q.Cursor != "" || strings.TrimSpace(q.Query) == "" {
		return // a next page or a plain listing is not a new search
	}
	p, ok := switchboard.PrincipalFrom(ctx)
	if !ok {
		return
	}
	agent, _ := switchboard.AgentSessionFrom(ctx)
	run, _ := ctx.Value(searchRunKey{}).(string)
	// A regex is a pattern over names, not a request in the caller's
	// words: it is a new search (it ends the attribution of the caller's
	// earlier ones) that teaches nothing.
	var clauses string
	if !q.Regex {
		cs, _ := search.ScrubClauses(q.Query)
		clauses = strings.Join(cs, "\n")
	}
	key := p.Key() // one agent name acting for two users: two callers
	now := r.now()
	l := &r.learn
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.recent[key]; !ok && len(l.recent) >= learnCallers {
		l.evictLocked(now)
	}
	s := append(l.recent[key], searched{agent: agent, run: run, at: now, taught: &taught{caller: callerDigest(key), clauses: clauses}})
	if len(s) > learnRecent {
		s = s[len(s)-learnRecent:]
	}
	l.recent[key] = s
}

// evictLocked drops callers whose searches are all past the window, and
// if none are, one caller (the map's first): memory stays bounded.
func (l *learner) evictLocked(now time.Time) {
	for k, s := range l.recent {
		if now.Sub(s[len(s)-1].at) > LearnWindow {
			delete(l.recent, k)
		}
	}
	if len(l.recent) < learnCallers {
		return
	}
	for k := range l.recent {
		delete(l.recent, k)
		return
	}
}

// callDetails is what learning reads of a tool.call entry's Details.
type callDetails struct {
	InvocationID string             `json:"invocationId"`
	RunID        string             `json:"runId"`
	AgentID      string             `json:"agentId"`
	User         string             `json:"user"`
	Status       switchboard.Status `json:"status"`
}

// callerKey is the attribution key of a call's ledger entry: its actor
// told apart by the user it acted for, as noteSearch keys a search
// (Principal.Key).
func callerKey(actor, user string) string {
	kind, id, ok := strings.Cut(actor, ":")
	if !ok {
		return actor
	}
	return switchboard.Principal{Kind: switchboard.PrincipalKind(kind), ID: id, User: user}.Key()
}

// Observe hears every ledger entry the broker appended (it is chained
// onto broker.Options.OnActivity) and learns from successful calls. It
// never blocks on the store: examples are written in the background
// (WaitLearned waits for them).
func (r *Registry) Observe(e switchboard.ActivityEntry) {
	if r.learn.off || e.Verb != activity.VerbToolCall {
		return
	}
	var d callDetails
	if json.Unmarshal(e.Details, &d) != nil || d.Status != switchboard.StatusSucceeded {
		return // denied, failed, cancelled, timed out: nothing to learn
	}
	if len(e.Reversal) > 0 {
		// An undo: what the undone call taught is taken back, and the undo
		// itself teaches nothing.
		var of struct {
			InvocationID string `json:"invocationId"`
		}
		if json.Unmarshal(e.Reversal, &of) == nil && of.InvocationID != "" {
			r.unlearn(of.InvocationID)
		}
		return
	}
	r.mu.RLock()
	en, inCatalog := r.tools[e.Target]
	r.mu.RUnlock()
	if !inCatalog {
		return // a tab's live tool or a harness tool: not the catalog's index
	}
	key := callerKey(e.Actor, d.User)
	l := &r.learn
	l.mu.Lock()
	var tt *taught
	wait := false
	s := l.recent[key]
	for i := len(s) - 1; i >= 0; i-- {
		age := e.Ts.Sub(s[i].at)
		if age > LearnWindow {
			break
		}
		// A search that knew its agent session or MCP session's run
		// teaches only calls of that session (an HTTP search does not
		// know the agent session its token's calls are recorded under).
		if age < 0 || (s[i].run != "" && s[i].run != d.RunID) || (s[i].agent != "" && s[i].agent != d.AgentID) {
			continue
		}
		// The caller's latest search in the window is the one attributed.
		t := s[i].taught
		called := slices.ContainsFunc(t.calls, func(c taughtCall) bool { return c.tool.Name == e.Target })
		if len(t.clauses) > 0 && !called && len(t.calls) < LearnToolsPerSearch {
			t.calls = append(t.calls, taughtCall{tool: en.tool, invocation: d.InvocationID, at: e.Ts})
			tt = t
			// A later call rewrites what the earlier ones taught: it must
			// not be dropped, or they keep the words it takes from them.
			wait = len(t.calls) > 1
			l.pending[tt]++
		}
		break
	}
	l.mu.Unlock()
	if tt == nil {
		return
	}
	if !r.learnAsync(wait, func(ctx context.Context) error {
		defer l.settle(tt)
		tt.mu.Lock()
		defer tt.mu.Unlock()
		return r.storeTaught(ctx, tt)
	}) {
		l.settle(tt)
	}
}

// eachSearchLocked calls f with every remembered search and every search
// with a write still to come (one no longer remembered, pushed out by the
// caller's newer searches, must still see a reversal or a forget); a
// search in both is seen twice. l.mu is held.
func (l *learner) eachSearchLocked(f func(*taught)) {
	for _, s := range l.recent {
		for _, x := range s {
			f(x.taught)
		}
	}
	for t := range l.pending {
		f(t)
	}
}

// settle counts one write of t done.
func (l *learner) settle(t *taught) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending[t]--; l.pending[t] <= 0 {
		delete(l.pending, t)
	}
}

// unlearn takes back what the reversed call id taught. When the search it
// followed is still remembered, the call leaves that search's attribution
// too, and the other calls learn again what it had taken from them.
func (r *Registry) unlearn(id string) {
	l := &r.learn
	l.mu.Lock()
	var tt *taught
	mark := func(t *taught) {
		if j := slices.IndexFunc(t.calls, func(c taughtCall) bool { return c.invocation == id }); j >= 0 {
			t.calls[j].reversed = true
			tt = t
		}
	}
	l.eachSearchLocked(mark)
	if tt != nil {
		l.pending[tt]++
	}
	l.mu.Unlock()
	// A reversal waits for a writer rather than being dropped: the
	// undone call's example must go.
	r.learnAsync(true, func(ctx context.Context) error {
		if tt == nil {
			return r.unlearnInvocation(ctx, id)
		}
		defer l.settle(tt)
		// Under the search's lock: a write of the search already under way
		// cannot store the reversed call's example again after this.
		tt.mu.Lock()
		defer tt.mu.Unlock()
		if err := r.unlearnInvocation(ctx, id); err != nil {
			return err
		}
		return r.storeTaught(ctx, tt)
	})
}

// storeTaught stores what each call the search taught learns now
// (search.Attribute over the search's sentences and the called tools),
// replacing what an earlier write stored for the same call. It writes
// the search's state as it is when it runs, so a write that comes late
// stores nothing stale. The caller holds t.mu.
func (r *Registry) storeTaught(ctx context.Context, t *taught) error {
	l := &r.learn
	l.mu.Lock()
	calls := slices.Clone(t.calls)
	l.mu.Unlock()
	var live []switchboard.Tool
	var at []int // index in calls of each live tool
	for i, c := range calls {
		if !c.reversed {
			live = append(live, c.tool)
			at = append(at, i)
		}
	}
	texts := search.Attribute(strings.Split(t.clauses, "\n"), live)
	for k, i := range at {
		c := calls[i]
		if texts[k] == "" || texts[k] == c.stored || c.forgotten {
			continue
		}
		ex := switchboard.SearchExample{Tool: c.tool.Name, Query: texts[k], Caller: t.caller, InvocationID: c.invocation, At: c.at}
		if err := r.store.SearchExampleAdd(ctx, ex, LearnPerCallerTool, LearnPerCaller); err != nil {
			return err
		}
		l.mu.Lock()
		forgotten := false
		if j := slices.IndexFunc(t.calls, func(x taughtCall) bool { return x.invocation == c.invocation }); j >= 0 {
			t.calls[j].stored = texts[k]
			forgotten = t.calls[j].forgotten
		}
		l.mu.Unlock()
		if forgotten {
			// Forgotten while this was written: forget marks the call
			// before it deletes, so either its delete took this example
			// or this takes it back.
			if _, err := r.store.SearchExampleDeleteInvocation(ctx, c.invocation); err != nil {
				return err
			}
		}
		if err := r.reloadLearned(ctx, c.tool.Name); err != nil {
			return err
		}
	}
	return nil
}

// callerDigest is what the store keeps of a caller (its principal, so a
// token's many sessions are one caller): enough to count distinct
// callers, nothing that names one.
func callerDigest(key string) string {
	h := sha256.Sum256([]byte("switchboard learned search\x00" + key))
	return hex.EncodeToString(h[:16])
}

// learnAsync runs write in the background. When learnWriters writes are
// already running it drops write and reports false, or with wait, runs
// it once one is done.
func (r *Registry) learnAsync(wait bool, write func(context.Context) error) bool {
	if !wait {
		select {
		case r.learn.sem <- struct{}{}:
		default:
			r.log.Warn("learned search: too many example writes in flight; one dropped")
			return false
		}
	}
	r.learn.wg.Go(func() {
		if wait {
			r.learn.sem <- struct{}{}
		}
		defer func() { <-r.learn.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := write(ctx); err != nil {
			r.log.WarnContext(ctx, "learned search: write an example", "err", err)
		}
	})
	return true
}

// WaitLearned waits until the examples observed so far are stored and
// indexed.
func (r *Registry) WaitLearned() { r.learn.wg.Wait() }

func (r *Registry) unlearnInvocation(ctx context.Context, id string) error {
	tools, err := r.store.SearchExampleDeleteInvocation(ctx, id)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if err := r.reloadLearned(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// reloadLearned sets the index's learned queries of tool from the store.
func (r *Registry) reloadLearned(ctx context.Context, tool string) error {
	r.learn.reloadMu.Lock()
	defer r.learn.reloadMu.Unlock()
	qs, err := r.store.SearchExampleList(ctx, tool)
	if err != nil {
		return err
	}
	r.index.SetLearned(tool, r.weigh(qs))
	return nil
}

// weigh turns a tool's aggregated examples into weighted learned queries,
// heaviest first: support (1 caller ½, 2 ¾, 3 or more 1) times recency
// (halved every learnHalfLife since the last use). One caller alone never
// gives a query full weight.
func (r *Registry) weigh(qs []switchboard.LearnedQuery) []search.Learned {
	now := r.now()
	out := make([]search.Learned, 0, len(qs))
	for _, q := range qs {
		support := float64(1+min(q.Callers, 3)) / 4
		age := max(now.Sub(q.LastUsed), 0)
		recency := math.Exp2(-float64(age) / float64(learnHalfLife))
		out = append(out, search.Learned{Query: q.Query, Weight: support * recency})
	}
	slices.SortStableFunc(out, func(a, b search.Learned) int {
		switch {
		case a.Weight > b.Weight:
			return -1
		case a.Weight < b.Weight:
			return 1
		}
		return 0
	})
	return out
}

// loadLearned reads every tool's examples into the index: at start (all
// at once) and every LearnRefresh after (only tools whose learned queries
// changed, e.g. by another replica).
func (r *Registry) loadLearned(ctx context.Context, start bool) error {
	r.learn.reloadMu.Lock()
	defer r.learn.reloadMu.Unlock()
	qs, err := r.store.SearchExampleList(ctx, "")
	if err != nil {
		return err
	}
	byTool := map[string][]switchboard.LearnedQuery{}
	for _, q := range qs {
		byTool[q.Tool] = append(byTool[q.Tool], q)
	}
	all := make(map[string][]search.Learned, len(byTool))
	for t, q := range byTool {
		all[t] = r.weigh(q)
	}
	if start {
		r.index.ReplaceLearned(all)
		return nil
	}
	for _, t := range r.index.LearnedTools() {
		if _, ok := all[t]; !ok {
			r.index.SetLearned(t, nil)
		}
	}
	for t, ls := range all {
		r.index.SetLearned(t, ls) // a no-op when nothing changed
	}
	return nil
}

// ReloadLearned reads every tool's examples into the index now: after
// this process deleted some (retention), searches here stop using them at
// once rather than at the next LearnRefresh.
func (r *Registry) ReloadLearned(ctx context.Context) error {
	if r.learn.off {
		return nil
	}
	r.learn.mu.Lock()
	r.learn.loaded = r.now()
	r.learn.mu.Unlock()
	return r.loadLearned(ctx, false)
}

// refreshLearned reloads the examples when LearnRefresh has passed.
func (r *Registry) refreshLearned(ctx context.Context) {
	if r.learn.off {
		return
	}
	r.learn.mu.Lock()
	due := r.now().Sub(r.learn.loaded) >= LearnRefresh
	if due {
		r.learn.loaded = r.now()
	}
	r.learn.mu.Unlock()
	if due {
		r.learnAsync(false, func(ctx context.Context) error { return r.loadLearned(ctx, false) })
	}
}

// Learned returns what the tool called name learned, most recently used
// first. TOOL_NOT_FOUND when the catalog has no such tool.
func (r *Registry) Learned(ctx context.Context, name string) (switchboard.ToolLearned, error) {
	if _, err := r.get(ctx, name); err != nil {
		return switchboard.ToolLearned{}, err
	}
	qs, err := r.store.SearchExampleList(ctx, name)
	if err != nil {
		return switchboard.ToolLearned{}, err
	}
	return switchboard.ToolLearned{Tool: name, Enabled: !r.learn.off, Queries: qs}, nil
}

// Forget deletes everything the tool called name learned and returns the
// number of examples deleted. TOOL_NOT_FOUND when there is no such tool.
func (r *Registry) Forget(ctx context.Context, name string) (int, error) {
	if _, err := r.get(ctx, name); err != nil {
		return 0, err
	}
	return r.forget(ctx, name)
}

func (r *Registry) forget(ctx context.Context, name string) (int, error) {
	// The remembered calls of the tool are marked first: a later call
	// after their search rewrites it, and would store them again.
	l := &r.learn
	l.mu.Lock()
	mark := func(t *taught) {
		for j := range t.calls {
			if t.calls[j].tool.Name == name {
				t.calls[j].forgotten = true
			}
		}
	}
	l.eachSearchLocked(mark)
	l.mu.Unlock()
	r.learn.reloadMu.Lock()
	defer r.learn.reloadMu.Unlock()
	n, err := r.store.SearchExampleDelete(ctx, name)
	if err != nil {
		return 0, err
	}
	r.index.SetLearned(name, nil)
	return n, nil
}
