// Package registry is the catalog of tools: it validates declarations at the
// door, persists them through the Store port, merges declarations of the same
// name from several sources (core < host < scoped < plugin), keeps compiled
// schemas, and answers search through one in-process BM25 index kept in step
// with the store, so ranking is identical on SQLite and Postgres.
//
// The registry caches the merged catalog in memory. Its own writes update the
// cache at once; writes by another replica are picked up when a read notices
// that the store's catalog revision moved (checked at most once per
// RefreshInterval).
//
// Every read (List, Search, Get, Schemas) is the catalog as the caller in
// the context may see it: one predicate (Visible, view.go) decides, and a
// hidden tool reads exactly like one that does not exist. The deferred
// meta tools (search and describe, meta.go) are answered here too, for MCP
// and the agent loop alike.
package registry

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/schema"
	"github.com/switchboardhq/switchboard/internal/search"
)

// DefaultRefreshInterval bounds how stale another replica's writes may look.
const DefaultRefreshInterval = time.Second

// Options configures a Registry. A nil *Options means defaults.
type Options struct {
	Logger          *slog.Logger
	RefreshInterval time.Duration
	Now             func() time.Time
	// Audit, if set, hears every change this registry makes to an effective
	// descriptor (after the write, outside the registry's lock), so the
	// ledger can record what changed (rug-pull detection) without the
	// registry importing it.
	Audit func(ctx context.Context, a Audit)
	// Approval, if set, is the approval an agent's call of a tool gets
	// (approval.Service.Effective: the declared one raised to its class's
	// floor). A tool it makes user-only is hidden from agents like one
	// that declares user-only. nil means the declared approval.
	Approval func(switchboard.Tool) switchboard.Approval
	// Offered, if set, reports whether the daemon can serve t right now
	// to the caller in ctx. A tool it cannot (a panel tool while no tab
	// shows panels, for a client that shows none itself) is hidden from
	// that caller like one that does not exist; Reoffer tells subscribers
	// when a verdict may have moved. It must not call the registry:
	// Visible runs it under the registry's lock. nil offers all.
	Offered func(ctx context.Context, t switchboard.Tool) bool
	// NoLearning turns search that learns from use off (learn.go): no
	// example is recorded, and stored ones are not indexed.
	NoLearning bool
}

// Audit is one change of an effective descriptor. It is the root
// package's ToolChange, so the ledger can record it without importing the
// registry.
type Audit = switchboard.ToolChange

// Registry is the merged, searchable catalog. Safe for concurrent use.
type Registry struct {
	store    switchboard.Store
	log      *slog.Logger
	refresh  time.Duration
	now      func() time.Time
	audit    func(context.Context, Audit)
	approval func(switchboard.Tool) switchboard.Approval
	offered  func(context.Context, switchboard.Tool) bool

	mu      sync.RWMutex
	rev     int64
	checked time.Time
	decls   map[string]map[switchboard.Source]switchboard.Tool
	tools   map[string]*entry // effective, merged
	index   *search.Index
	// apiNames holds the names whose effective declaration is an api
	// tool (shadow.go). It is apart from mu because Visible reads it, and
	// Visible runs both under mu (List) and outside it.
	apiNames sync.Map // name → struct{}

	subMu sync.Mutex
	subs  map[chan<- Change]struct{}

	learn learner // learn.go
}

// entry is an effective tool with its schemas, compiled on first use:
// compiling every schema at load made a cold start of a large catalog spend
// most of its time in the JSON Schema compiler.
type entry struct {
	tool        switchboard.Tool
	once        sync.Once
	input, outp *schema.Schema
	err         error
}

// schemas compiles the entry's schemas once.
func (e *entry) schemas() (in, out *schema.Schema, err error) {
	e.once.Do(func() {
		// Declarations were checked at the door; a schema that no longer
		// compiles (a row edited behind our back) leaves the tool visible
		// but uncallable.
		if e.input, e.err = schema.Compile(e.tool.InputSchema); e.err != nil {
			e.err = switchboard.Errorf(switchboard.CodeInternal, "tool %s has a stored input schema that does not compile (%s); register it again", e.tool.Name, switchboard.AsError(e.err).Message)
			return
		}
		if len(e.tool.OutputSchema) > 0 {
			if e.outp, e.err = schema.Compile(e.tool.OutputSchema); e.err != nil {
				e.err = switchboard.Errorf(switchboard.CodeInternal, "tool %s has a stored output schema that does not compile (%s); register it again", e.tool.Name, switchboard.AsError(e.err).Message)
			}
		}
	})
	return e.input, e.outp, e.err
}

// Change tells subscribers which names changed (nil Names: everything may
// have changed, e.g. after a reload).
type Change struct {
	Names []string
	// Local is true when this registry made the change (Register,
	// Unregister), false when it found another replica's write; the
	// daemon tells the other replicas about local changes only.
	Local bool
}

// New loads the catalog from store.
func New(ctx context.Context, store switchboard.Store, opts *Options) (*Registry, error) {
	if opts == nil {
		opts = &Options{}
	}
	r := &Registry{
		store:    store,
		log:      opts.Logger,
		refresh:  opts.RefreshInterval,
		now:      opts.Now,
		audit:    opts.Audit,
		approval: opts.Approval,
		offered:  opts.Offered,
		index:    search.New(nil),
		subs:     map[chan<- Change]struct{}{},
		learn: learner{off: opts.NoLearning, recent: map[string][]searched{}, pending: map[*taught]int{},
			sem: make(chan struct{}, learnWriters)},
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.refresh <= 0 {
		r.refresh = DefaultRefreshInterval
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reloadLocked(ctx); err != nil {
		return nil, err
	}
	if !r.learn.off {
		if err := r.loadLearned(ctx, true); err != nil {
			return nil, err
		}
		r.learn.loaded = r.now()
	}
	return r, nil
}

// reloadLocked rebuilds everything from the store. Caller holds r.mu.
func (r *Registry) reloadLocked(ctx context.Context) error {
	rev, err := r.store.CatalogRevision(ctx)
	if err != nil {
		return err
	}
	all, err := r.store.ToolList(ctx)
	if err != nil {
		return err
	}
	r.decls = map[string]map[switchboard.Source]switchboard.Tool{}
	for _, t := range all {
		if r.decls[t.Name] == nil {
			r.decls[t.Name] = map[switchboard.Source]switchboard.Tool{}
		}
		r.decls[t.Name][t.Origin.Source] = t
	}
	r.tools = make(map[string]*entry, len(r.decls))
	effective := make([]switchboard.Tool, 0, len(r.decls))
	r.apiNames.Clear()
	for name := range r.decls {
		if e := r.mergeLocked(name); e != nil {
			r.tools[name] = e
			r.claimLocked(name, e)
			effective = append(effective, e.tool)
		}
	}
	r.index.Replace(effective)
	r.rev, r.checked = rev, r.now()
	return nil
}

// mergeLocked computes the effective entry for name: the declaration of the
// highest-ranked source, with the sources it overrides in its Origin.
func (r *Registry) mergeLocked(name string) *entry {
	var best *switchboard.Tool
	var lower []switchboard.Source
	for _, src := range switchboard.SourceOrder {
		t, ok := r.decls[name][src]
		if !ok {
			continue
		}
		if best != nil {
			lower = append(lower, best.Origin.Source)
		}
		t.Origin = &switchboard.Origin{Source: src}
		best = &t
	}
	if best == nil {
		return nil
	}
	best.Origin.Overrides = lower
	e := &entry{tool: *best}
	return e
}

// Refresh checks the store's catalog revision now, reloading and
// notifying subscribers when another replica changed the catalog: what
// the daemon calls when the bus says so, so list_changed and the search
// index follow at once rather than at the next read after RefreshInterval.
func (r *Registry) Refresh(ctx context.Context) error { return r.check(ctx, true) }

// fresh makes sure the cache reflects writes by other replicas.
func (r *Registry) fresh(ctx context.Context) error {
	r.refreshLearned(ctx)
	return r.check(ctx, false)
}

func (r *Registry) check(ctx context.Context, now bool) error {
	r.mu.RLock()
	due := now || r.now().Sub(r.checked) >= r.refresh
	r.mu.RUnlock()
	if !due {
		return nil
	}
	rev, err := r.store.CatalogRevision(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev == r.rev {
		r.checked = r.now()
		return nil
	}
	if err := r.reloadLocked(ctx); err != nil {
		return err
	}
	go r.notify(Change{})
	return nil
}

// Register validates and stores a batch of declarations from one source:
// all or nothing. It returns the effective descriptors of the batch's names.
func (r *Registry) Register(ctx context.Context, source switchboard.Source, tools []switchboard.Tool) ([]switchboard.Tool, error) {
	if source.Rank() < 0 || source == switchboard.SourceSession {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "unknown tool source %q (use core, host, scoped or plugin)", source)
	}
	tools = slices.Clone(tools)
	if err := CheckBatch(tools); err != nil {
		return nil, err
	}
	var audits []Audit
	defer r.report(ctx, &audits) // after the unlock below: defers run last first
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.store.ToolPut(ctx, source, tools); err != nil {
		return nil, err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	before := r.effectiveLocked(names)
	if err := r.applyLocked(ctx, names, func(rev int64) {
		for _, t := range tools {
			t.Origin, t.Version = &switchboard.Origin{Source: source}, rev
			if r.decls[t.Name] == nil {
				r.decls[t.Name] = map[switchboard.Source]switchboard.Tool{}
			}
			r.decls[t.Name][source] = t
		}
	}); err != nil {
		return nil, err
	}
	out := make([]switchboard.Tool, len(names))
	for i, n := range names {
		out[i] = r.tools[n].tool
	}
	audits = r.auditsLocked(source, names, before)
	return out, nil
}

// effectiveLocked snapshots the effective descriptors of names (for Audit).
func (r *Registry) effectiveLocked(names []string) map[string]*switchboard.Tool {
	if r.audit == nil {
		return nil
	}
	out := make(map[string]*switchboard.Tool, len(names))
	for _, n := range names {
		if e, ok := r.tools[n]; ok {
			t := e.tool
			out[n] = &t
		}
	}
	return out
}

// auditsLocked lists the changes of names since before.
func (r *Registry) auditsLocked(source switchboard.Source, names []string, before map[string]*switchboard.Tool) []Audit {
	if r.audit == nil {
		return nil
	}
	var out []Audit
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		a := Audit{Name: n, Source: source, Before: before[n]}
		if e, ok := r.tools[n]; ok {
			t := e.tool
			a.After = &t
		}
		out = append(out, a)
	}
	return out
}

// report hands changes to the Audit hook, outside the registry's lock.
func (r *Registry) report(ctx context.Context, audits *[]Audit) {
	for _, a := range *audits {
		r.audit(ctx, a)
	}
}

// Unregister removes a declaration. With source "", it removes the effective
// one, so a lower source's declaration of the same name (if any) shows again.
func (r *Registry) Unregister(ctx context.Context, source switchboard.Source, name string) error {
	var audits []Audit
	defer r.report(ctx, &audits)
	r.mu.Lock()
	defer r.mu.Unlock()
	if source == "" {
		e, ok := r.tools[name]
		if !ok {
			return switchboard.Errorf(switchboard.CodeToolNotFound, "no tool named %q", name)
		}
		source = e.tool.Origin.Source
	}
	if err := r.store.ToolDelete(ctx, source, name); err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return switchboard.Errorf(switchboard.CodeToolNotFound, "no %s declaration of tool %q", source, name)
		}
		return err
	}
	before := r.effectiveLocked([]string{name})
	if err := r.applyLocked(ctx, []string{name}, func(int64) { delete(r.decls[name], source) }); err != nil {
		return err
	}
	if _, ok := r.tools[name]; !ok {
		// A deleted tool's learned examples go with it; a lower source's
		// declaration that shows again keeps them.
		if _, err := r.forget(ctx, name); err != nil {
			r.log.WarnContext(ctx, "forget a deleted tool's learned queries", "tool", name, "err", err)
		}
	}
	audits = r.auditsLocked(source, []string{name}, before)
	return nil
}

// applyLocked brings the cache up to date after a write: incrementally when
// the revision moved by exactly one (our write), by a full reload otherwise.
func (r *Registry) applyLocked(ctx context.Context, names []string, apply func(rev int64)) error {
	rev, err := r.store.CatalogRevision(ctx)
	if err != nil {
		return err
	}
	if rev != r.rev+1 {
		if err := r.reloadLocked(ctx); err != nil {
			return err
		}
		go r.notify(Change{Local: true})
		return nil
	}
	apply(rev)
	for _, n := range names {
		e := r.mergeLocked(n)
		r.claimLocked(n, e)
		if e != nil {
			r.tools[n] = e
			r.index.Upsert(e.tool)
		} else {
			delete(r.tools, n)
			delete(r.decls, n)
			r.index.Remove(n)
		}
	}
	r.rev, r.checked = rev, r.now()
	go r.notify(Change{Names: names, Local: true})
	return nil
}

// Get returns the effective descriptor of name, or TOOL_NOT_FOUND when
// there is none or the caller in ctx may not see it.
// Declaration returns source's own declaration of name, whether or not it
// is the effective one: what a write that must be undone puts back.
func (r *Registry) Declaration(ctx context.Context, source switchboard.Source, name string) (switchboard.Tool, bool, error) {
	if err := r.fresh(ctx); err != nil {
		return switchboard.Tool{}, false, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.decls[name][source]
	return t, ok, nil
}

func (r *Registry) Get(ctx context.Context, name string) (switchboard.Tool, error) {
	e, err := r.get(ctx, name)
	if err != nil {
		return switchboard.Tool{}, err
	}
	return e.tool, nil
}

// Schemas returns the compiled input and output schemas of name (output may
// be nil when none is declared).
func (r *Registry) Schemas(ctx context.Context, name string) (in, out *schema.Schema, err error) {
	e, err := r.get(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return e.schemas()
}

func (r *Registry) get(ctx context.Context, name string) (*entry, error) {
	if err := r.fresh(ctx); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok || !r.Visible(ctx, e.tool) {
		return nil, notFound(name)
	}
	return e, nil
}

// List returns the effective catalog the caller in ctx may see, sorted by
// name, optionally one surface.
func (r *Registry) List(ctx context.Context, surface switchboard.Surface) ([]switchboard.Tool, error) {
	if err := r.fresh(ctx); err != nil {
		return nil, err
	}
	r.mu.RLock()
	out := make([]switchboard.Tool, 0, len(r.tools))
	for _, e := range r.tools {
		if (surface == "" || e.tool.Surface == surface) && r.Visible(ctx, e.tool) {
			out = append(out, e.tool)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b switchboard.Tool) int { return cmpString(a.Name, b.Name) })
	return out, nil
}

// Search ranks the catalog for q. Tools the caller in ctx may not see are
// left out before paging, so pages stay full and cursors stable.
func (r *Registry) Search(ctx context.Context, q switchboard.SearchQuery) (switchboard.SearchResult, error) {
	if err := r.fresh(ctx); err != nil {
		return switchboard.SearchResult{}, err
	}
	return r.index.Search(q, r.allow(ctx))
}

// allow is Visible for ctx as a search filter (nil when the caller sees
// everything, which keeps the unfiltered search fast).
func (r *Registry) allow(ctx context.Context) func(switchboard.Tool) bool {
	if p, ok := switchboard.PrincipalFrom(ctx); !ok || p.Kind != switchboard.PrincipalAgent {
		return nil
	}
	return func(t switchboard.Tool) bool { return r.Visible(ctx, t) }
}

// Len reports how many effective tools the catalog holds.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.tools)
}

// Subscribe delivers a Change after every catalog change until cancel is
// called. Delivery never blocks the registry: a subscriber whose channel is
// full misses that change (callers re-list on any change anyway).
func (r *Registry) Subscribe(ch chan<- Change) (cancel func()) {
	r.subMu.Lock()
	r.subs[ch] = struct{}{}
	r.subMu.Unlock()
	return func() {
		r.subMu.Lock()
		delete(r.subs, ch)
		r.subMu.Unlock()
	}
}

// Reoffer tells subscribers that what Options.Offered answers for names
// may have changed, so listings that hold them are read again (MCP sends
// list_changed). Nothing in the catalog changed, so it is not a local
// change for the other replicas.
func (r *Registry) Reoffer(names ...string) { r.notify(Change{Names: names}) }

func (r *Registry) notify(c Change) {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	for ch := range r.subs {
		select {
		case ch <- c:
		default:
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
