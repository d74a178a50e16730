package panel

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Defaults for Options.
const (
	// DefaultMaxInstances bounds the panels open in one tab.
	DefaultMaxInstances = 32
	// DefaultActionWait is how long a tab's action request waits for the
	// action's call before answering pending_approval; the call goes on.
	DefaultActionWait = 25 * time.Second
	// maxActionTime bounds an action's call after its caller stopped
	// waiting (an approval nobody answers).
	maxActionTime = 15 * time.Minute
	// resolveTimeout bounds loading one source (a read tool, a query).
	resolveTimeout = 15 * time.Second
)

// Caller runs tool calls; *broker.Broker is the implementation. Tool
// sources are read and actions run through it, so approvals, scopes and the
// ledger apply to panels exactly as to any other caller.
// Sources are read with Call; an action is submitted (Submit) and awaited
// (Await) like any transport's call, so whether it waits for a person is
// the approval policy's answer, read from the record.
type Caller interface {
	Call(ctx context.Context, req broker.CallRequest) (switchboard.Invocation, error)
	Submit(ctx context.Context, req broker.CallRequest) (switchboard.Invocation, error)
	Await(ctx context.Context, id string, until broker.Until) (switchboard.Invocation, error)
}

// Tabs reaches browser tabs; *session.Manager is the implementation.
type Tabs interface {
	// SendHere queues an event on the tab's stream when this replica keeps
	// the tab (SESSION_GONE otherwise): a tab's working copy is the
	// holder's, and one left behind by a move must not reach the tab.
	SendHere(ctx context.Context, sessionID, kind string, data []byte) error
	// Connected reports whether the session's tab is attached here.
	Connected(sessionID string) bool
	// WatchGone calls fn when the session's tab is gone or closed.
	WatchGone(sessionID string, fn func()) (cancel func(), err error)
	// User returns the principal the session was opened for.
	User(ctx context.Context, sessionID string) (string, error)
	// Elsewhere names the replica that holds the session's tab when this
	// one does not ("" when none does, or it is here).
	Elsewhere(sessionID string) string
	// PresenceID is this replica's name as Elsewhere answers it on the
	// others.
	PresenceID() string
	// MarkPanels records that a renderer in the session's tab (held here)
	// shows panels, for the other replicas to see; PanelTabsElsewhere
	// lists such tabs held by other replicas.
	MarkPanels(sessionID string)
	PanelTabsElsewhere() []string
	// TabsElsewhere lists the connected tabs other replicas hold.
	TabsElsewhere() []string
}

// ToolLookup finds catalog tools; *registry.Registry is the implementation.
type ToolLookup interface {
	Get(ctx context.Context, name string) (switchboard.Tool, error)
}

// Options configures a Service. Caller and Tabs are required.
type Options struct {
	// OnCompose, if set, hears how each agent compose this replica
	// validated ended: outcome "opened", "refused" or "fallback", the
	// refusal's code, the spec's node count and its issue codes.
	OnCompose func(outcome, code string, nodes int, issues []string)
	Caller    Caller
	Tabs      Tabs
	// Tools, when set, is asked whether tools named by specs exist, and
	// whether a tool source names a read tool (anything else is refused:
	// rendering a panel must never run a mutation).
	Tools ToolLookup
	// Catalog holds the node types; nil means the built-in ones.
	Catalog *panelspec.Catalog
	Logger  *slog.Logger
	// MaxInstances bounds the panels open in one tab.
	MaxInstances int
	// ActionWait bounds how long RunAction waits when its ctx has no
	// deadline of its own.
	ActionWait time.Duration
	// LeaseTTL is how long an agent's fill, patch or action holds the
	// instance against other agents (DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Now is the clock leases read (time.Now).
	Now func() time.Time
	// AgentScope, when set, returns the scope of a registered agent
	// session (workspace.Agents): a call made in an agent session is held
	// to that session's panel scope as well as its principal's.
	AgentScope func(ctx context.Context, agentID string) (switchboard.AgentScope, bool)
	// Canvas is the daemon's layer of the canvas policy (canvas.go); the
	// zero value means the guarded default.
	Canvas CanvasPolicy
	// Previews, when set, serves preview nodes' code from the sandboxed
	// preview origin (package preview); without it code preview is off.
	Previews Previews
	// PreviewOrigin is that origin, for listings ("http://127.0.0.2:7767").
	PreviewOrigin string
	// Holder, when set, names who a lease taken in agent session agentID
	// belongs to: sessions with one holder share their leases (the
	// built-in assistant's runs of one chat). "" or nil: the session.
	Holder func(agentID string) string
	// Store, when set, keeps every instance (shared.go): any replica reads
	// them and the replica a tab reattaches to rebuilds them. Without it
	// instances live in this process only.
	Store PanelStore
	// Bus, when set, carries adapter invalidations and host canvas changes
	// to every replica, and Asker changes asked of a replica for a tab
	// another replica holds to that replica (remote.go). Asker is
	// required with Bus.
	Bus   bus.Bus
	Asker *cluster.Asker
	// Canvases, when set, keeps the canvas policy's host layer and each
	// session's narrowing (canvas.go), so every replica on one store
	// enforces the same policy. Without it both live in this process.
	Canvases CanvasStore
	// ShowsPanels, when set, reports whether the caller in ctx shows
	// panels itself (an MCP Apps client: mcpserver.ShowsApps). What such
	// a caller opens or composes while no tab shows panels belongs to its
	// chat surface (surface.go).
	ShowsPanels func(ctx context.Context) bool
	// SurfaceIdle is how long a chat surface outlives its principal's
	// last call (DefaultSurfaceIdle).
	SurfaceIdle time.Duration
}

// Previews hosts runnable preview documents on the separate preview
// origin; *preview.Server is the implementation.
type Previews interface {
	// Put stores a preview node's code and returns the URL the sandboxed
	// iframe loads it from.
	Put(code string) string
}

// Def is a panel a host registers: a builder-made spec plus what an agent
// needs to choose it.
type Def struct {
	// ID names the panel (dot-separated lowercase words, like a tool name):
	// "project.settings".
	ID    string `json:"id"`
	Title string `json:"title"`
	// Description tells an agent when to open the panel and what it edits.
	Description string `json:"description"`
	// Scope says what the panel applies to: a page ("settings") or a kind
	// of record ("one project; open with params.projectId").
	Scope string `json:"scope,omitempty"`
	// ContextKinds are the tab context kinds ("project", "page") the panel
	// applies to (the seed's contextKinds); empty means any.
	ContextKinds []string `json:"contextKinds,omitempty"`
	// Slot is the page slot the panel is shown in (DefaultSlot when
	// empty): a name the host's page gives a place ("main", "sidebar"),
	// which agent scopes may be limited to and the renderer's place()
	// reads from the snapshot.
	Slot string `json:"slot,omitempty"`
	// Spec is the panel, origin host. Values {"$param": "name"} in its
	// sources' query and input are filled from panel.open's params.
	Spec *panelspec.Spec `json:"-"`
}

// Service runs panels. Safe for concurrent use.
type Service struct {
	caller Caller
	tabs   Tabs
	tools  ToolLookup
	cat    *panelspec.Catalog
	log    *slog.Logger
	opts   Options
	base   context.Context // cancelled by Close: ends background work
	stop   context.CancelFunc
	leases *leaseBook
	store  PanelStore
	remote *remote // nil without Options.Bus
	// surfaces are the chat surfaces s.tabs serves beside the tabs.
	surfaces *surfaces

	mu       sync.Mutex
	defs     map[string]*def
	adapters map[string]*adapterEntry
	sessions map[string]*tabState
	byID     map[string]*instance // instance id → instance
	// goneTabs are tabs gone for good whose stored instances are being
	// deleted (dropTab); goneDone counts the deletions finished, so that a
	// read of the store that raced one can tell (stored).
	goneTabs map[string]struct{}
	goneDone uint64
	// hostCanvas is the host's layer of the canvas policy (with Canvases,
	// a copy of the stored one, trusted while hostKnown), sessionCanvas
	// each session's narrowing (with Canvases, a cache of the stored ones:
	// a narrowing never changes once its session exists) (canvas.go).
	hostCanvas    CanvasPolicy
	hostKnown     bool
	sessionCanvas map[string]CanvasPolicy
}

// def is a registered panel with what is derived from its spec.
type def struct {
	Def
	params []string // $param names its sources use
}

// New returns a Service. It panics without Caller or Tabs, a wiring bug in
// the composition root.
func New(opts Options) *Service {
	if opts.Caller == nil || opts.Tabs == nil {
		panic("panels: Options.Caller and Options.Tabs are required")
	}
	if opts.Bus != nil && opts.Asker == nil {
		panic("panels: Options.Bus needs Options.Asker")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Catalog == nil {
		opts.Catalog = panelspec.NewCatalog()
	}
	if opts.MaxInstances <= 0 {
		opts.MaxInstances = DefaultMaxInstances
	}
	if opts.ActionWait <= 0 {
		opts.ActionWait = DefaultActionWait
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SurfaceIdle <= 0 {
		opts.SurfaceIdle = DefaultSurfaceIdle
	}
	if err := opts.Canvas.Validate(); err != nil {
		panic("panels: Options.Canvas: " + err.Error() + " (validate it where the config is read)")
	}
	base, stop := context.WithCancel(context.Background())
	s := &Service{
		caller: opts.Caller, tabs: opts.Tabs, tools: opts.Tools, cat: opts.Catalog,
		log: opts.Logger, opts: opts, base: base, stop: stop, leases: newLeaseBook(opts.LeaseTTL, opts.Now),
		store: opts.Store, defs: map[string]*def{}, adapters: map[string]*adapterEntry{},
		sessions: map[string]*tabState{}, byID: map[string]*instance{}, sessionCanvas: map[string]CanvasPolicy{},
		goneTabs: map[string]struct{}{}, surfaces: newSurfaces(opts.SurfaceIdle),
	}
	s.tabs = surfaceTabs{Tabs: opts.Tabs, b: s.surfaces}
	if opts.Bus != nil {
		r, err := startRemote(s, opts.Bus, opts.Asker)
		if err != nil { // only a closed bus refuses
			opts.Logger.Error("panel changes will not cross replicas", "err", err)
		}
		s.remote = r
	}
	return s
}

// Catalog is the node-type catalog specs are validated against; hosts add
// their own types to it.
func (s *Service) Catalog() *panelspec.Catalog { return s.cat }

// Close drops every instance and ends background work (subscriptions,
// actions still waiting for approval).
func (s *Service) Close() {
	s.stop()
	s.surfaces.close()
	if s.remote != nil {
		s.remote.close()
	}
	s.mu.Lock()
	var done []func()
	for _, t := range s.sessions {
		done = append(done, t.closeLocked())
	}
	s.sessions, s.byID = map[string]*tabState{}, map[string]*instance{}
	s.mu.Unlock()
	for _, d := range done {
		d()
	}
}

var (
	panelID  = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$`)
	slotName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
)

// DefaultSlot is the page slot of a panel that names none.
const DefaultSlot = "main"

// Register adds a host panel or replaces one with the same ID (open
// instances keep the spec they were opened with). The spec is validated
// again with the service's catalog and its origin forced to host.
func (s *Service) Register(d Def) error {
	d, err := s.Check(d)
	if err != nil {
		return err
	}
	entry := &def{Def: d, params: specParams(d.Spec)}
	s.mu.Lock()
	s.defs[d.ID] = entry
	s.mu.Unlock()
	return nil
}

// Check validates d as Register would and returns it as Register keeps
// it (the default slot filled in, the spec as validated), registering
// nothing: a batch of panels is checked whole before any of it is kept.
func (s *Service) Check(d Def) (Def, error) {
	if d.Spec == nil {
		return d, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s has no spec", d.ID)
	}
	raw, err := json.Marshal(d.Spec)
	if err != nil {
		return d, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s: encode spec: %w", d.ID, err)
	}
	return s.CheckJSON(d, raw)
}

// CheckJSON is Check for a spec sent as JSON (the HTTP API, a manifest):
// raw is validated as it is, d.Spec ignored.
func (s *Service) CheckJSON(d Def, raw json.RawMessage) (Def, error) {
	return s.CheckJSONWith(d, raw, nil)
}

// CheckJSONWith is CheckJSON for a spec registered together with tools
// not in the catalog yet (a manifest's): a spec may name them.
func (s *Service) CheckJSONWith(d Def, raw json.RawMessage, pending map[string]switchboard.Tool) (Def, error) {
	if len(d.ID) > 64 || !panelID.MatchString(d.ID) {
		return d, switchboard.Errorf(switchboard.CodeInvalidInput, "panel id %q must be dot-separated lowercase words (like project.settings)", d.ID)
	}
	if len(raw) == 0 {
		return d, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s has no spec", d.ID)
	}
	if d.Slot == "" {
		d.Slot = DefaultSlot
	}
	if !slotName.MatchString(d.Slot) {
		return d, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s: slot %q must be 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter", d.ID, d.Slot)
	}
	if d.Title == "" || d.Description == "" {
		return d, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s needs a title and a description (agents choose panels by them)", d.ID)
	}
	spec, issues := panelspec.Validate(raw, s.validateOptsWith(panelspec.OriginHost, pending))
	if e := panelspec.IssuesError(issues); e != nil {
		return d, e
	}
	d.Spec = spec
	return d, nil
}

// Unregister removes host panel id (open instances keep their spec) and
// reports whether there was one.
func (s *Service) Unregister(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.defs[id]
	delete(s.defs, id)
	return ok
}

// Panels lists the registered panels, sorted by id.
func (s *Service) Panels() []Def {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Def, 0, len(s.defs))
	for _, d := range s.defs {
		out = append(out, d.Def)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// validateOpts are the options every spec of this service is checked with.
func (s *Service) validateOpts(origin string) *panelspec.Options {
	return s.validateOptsWith(origin, nil)
}

// validateOptsWith is validateOpts where the tools pending exist too.
func (s *Service) validateOptsWith(origin string, pending map[string]switchboard.Tool) *panelspec.Options {
	o := &panelspec.Options{Catalog: s.cat, ForceOrigin: origin}
	if s.tools != nil {
		get := func(name string) (switchboard.Tool, error) {
			if t, ok := pending[name]; ok {
				return t, nil
			}
			ctx, cancel := context.WithTimeout(s.base, resolveTimeout)
			defer cancel()
			return s.tools.Get(ctx, name)
		}
		o.ToolExists = func(name string) bool {
			_, err := get(name)
			return err == nil
		}
		o.SourceSchema = func(ref string) json.RawMessage { return recordSchema(get, ref) }
	}
	return o
}

// recordSchema is the record schema of what a seed-form source names, for
// a field-form bound to it without fields: the output schema of the
// adapter's query tool, else of the read tool of that name (the order the
// runtime resolves a ref in). An array schema gives its items.
func recordSchema(get func(string) (switchboard.Tool, error), ref string) json.RawMessage {
	for _, name := range []string{"data." + ref + ".query", ref} {
		t, err := get(name)
		if err != nil {
			continue
		}
		var out struct {
			Type  any             `json:"type"`
			Items json.RawMessage `json:"items"`
		}
		if json.Unmarshal(t.OutputSchema, &out) != nil {
			return nil
		}
		if out.Type == "array" {
			return out.Items
		}
		return t.OutputSchema
	}
	return nil
}
