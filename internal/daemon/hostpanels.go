package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/assertion"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpbind"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Host panels and data adapters declared by an app in any language (POST
// /api/v1/panels, POST /api/v1/adapters, a manifest's panels and adapters
// sections). The store keeps each declaration (PanelRegistration), so
// every replica and the daemon after a restart serve the same; the
// replica that takes a change tells the others on the bus and each
// applies the store's set to its panel service (syncDeclared). An
// adapter's data tools are api tools in the catalog bound to its backend,
// so calls of them — the panel's save among them — take the broker's
// path: approvals, the assertion, the idempotency key, the ledger.

// topicDeclared tells every replica that the declared panels or adapters
// changed; the payload is empty: each re-reads the store.
const topicDeclared = "panels.declared"

// Ledger verbs of declaration changes (tool changes are tool.register and
// tool.unregister; an adapter's data tools are ledgered as those too).
const (
	verbPanelRegister     = "panel.register"
	verbPanelUnregister   = "panel.unregister"
	verbAdapterRegister   = "adapter.register"
	verbAdapterUnregister = "adapter.unregister"
)

// adapterTimeout bounds one query of a declared adapter whose binding
// sets no timeoutMs: a panel waiting on a slow backend shows an error, not
// a spinner forever.
const adapterTimeout = 10 * time.Second

// declared is what this replica applied of the store's declarations.
type declared struct {
	mu       sync.Mutex // serialises syncs
	panels   map[string]bool
	adapters map[string]bool
	client   *httpbind.Client
	stop     func()
}

// storedAdapter is an adapter's stored definition: the declaration and
// the catalog source its data tools were registered under.
type storedAdapter struct {
	switchboard.HostAdapter
	Source switchboard.Source `json:"source"`
}

// startDeclared builds the adapters' HTTP client (signing the same
// assertion as api tools), applies the stored declarations and follows
// other replicas' changes.
func (d *Daemon) startDeclared(ctx context.Context, opts Options) error {
	d.decl.panels, d.decl.adapters = map[string]bool{}, map[string]bool{}
	d.decl.client = httpbind.New(&httpbind.Options{Assert: func(ctx context.Context, c httpbind.Call) (string, error) {
		return d.Assertions.Sign(ctx, assertion.Call(c))
	}})
	d.declStore = opts.Store
	unsub, err := opts.Bus.Subscribe(topicDeclared, func([]byte) {
		go func() { // not on the bus's delivery goroutine: syncing reads the store
			if err := d.syncDeclared(context.Background()); err != nil {
				d.log.Warn("declared panels not reloaded after another replica's change", "err", err)
			}
		}()
	})
	if err != nil {
		return err
	}
	d.decl.stop = unsub
	if err := d.syncDeclared(ctx); err != nil {
		unsub()
		return fmt.Errorf("load declared panels: %w", err)
	}
	return nil
}

func (d *Daemon) closeDeclared() {
	if d.decl.stop != nil {
		d.decl.stop()
	}
	if d.decl.client != nil {
		d.decl.client.Close()
	}
}

// syncDeclared makes this replica's panel service serve exactly the
// stored declarations: new and changed ones are (re)applied, removed ones
// dropped. A stored panel that no longer validates (a tool it names was
// removed) is logged and left out.
func (d *Daemon) syncDeclared(ctx context.Context) error {
	regs, err := d.declStore.PanelRegistrationList(ctx)
	if err != nil {
		return err
	}
	d.decl.mu.Lock()
	defer d.decl.mu.Unlock()
	panels, adapters := map[string]bool{}, map[string]bool{}
	// Adapters first: panels name them.
	for _, r := range regs {
		if r.Kind != switchboard.RegistrationAdapter {
			continue
		}
		var a storedAdapter
		if err := json.Unmarshal(r.Definition, &a); err != nil {
			d.log.Error("stored adapter does not decode; left out", "adapter", r.Name, "err", err)
			continue
		}
		if _, err := d.Panels.PutAdapter(a.Name, &httpAdapter{decl: a.HostAdapter, client: d.decl.client}, adapterOptions(a.HostAdapter)); err != nil {
			d.log.Error("stored adapter left out", "adapter", r.Name, "err", err)
			continue
		}
		adapters[a.Name] = true
	}
	for _, r := range regs {
		if r.Kind != switchboard.RegistrationPanel {
			continue
		}
		var p switchboard.HostPanel
		if err := json.Unmarshal(r.Definition, &p); err != nil {
			d.log.Error("stored panel does not decode; left out", "panel", r.Name, "err", err)
			continue
		}
		def, err := d.Panels.CheckJSON(panelDef(p), p.Spec)
		if err == nil {
			err = d.Panels.Register(def)
		}
		if err != nil {
			d.log.Error("stored panel no longer validates; left out", "panel", r.Name, "err", err)
			continue
		}
		panels[p.ID] = true
	}
	for id := range d.decl.panels {
		if !panels[id] {
			d.Panels.Unregister(id)
		}
	}
	for name := range d.decl.adapters {
		if !adapters[name] {
			d.Panels.RemoveAdapter(name)
		}
	}
	d.decl.panels, d.decl.adapters = panels, adapters
	if len(panels)+len(adapters) > 0 {
		return d.EnablePanels(ctx)
	}
	return nil
}

// announceDeclared applies a change here and tells the other replicas.
func (d *Daemon) announceDeclared(ctx context.Context) error {
	err := d.syncDeclared(ctx)
	if perr := d.bus.Publish(ctx, topicDeclared, nil); perr != nil {
		d.log.Warn("other replicas learn of this panel change at their next start", "err", perr)
	}
	return err
}

func panelDef(p switchboard.HostPanel) panel.Def {
	return panel.Def{ID: p.ID, Title: p.Title, Description: p.Description, Scope: p.Scope, ContextKinds: p.ContextKinds, Slot: p.Slot}
}

func adapterOptions(a switchboard.HostAdapter) panel.AdapterOptions {
	ops := slices.Sorted(maps.Keys(a.Mutate))
	if ops == nil {
		ops = []string{} // none offered (nil would mean every op)
	}
	return panel.AdapterOptions{Description: a.Description, Ops: ops, Approval: a.Approval,
		QuerySchema: a.QuerySchema, RecordSchema: a.RecordSchema}
}

// DeclarePanels validates panels whole — every spec with the validator,
// refused with its codes — and then stores and applies all of them, or
// none. A panel with the id of one declared before replaces it.
func (d *Daemon) DeclarePanels(ctx context.Context, panels []switchboard.HostPanel) ([]switchboard.HostPanel, error) {
	check := func([]switchboard.Tool) error { return d.checkPanels(panels, nil) }
	if _, err := d.declare(ctx, switchboard.SourceHost, nil, nil, check, panels...); err != nil {
		return nil, err
	}
	return panels, nil
}

// checkPanels validates a batch; pending are tools about to be registered
// with it (a manifest's), which specs may name.
func (d *Daemon) checkPanels(panels []switchboard.HostPanel, pending map[string]switchboard.Tool) error {
	if len(panels) == 0 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "send an array of panels [{id, title, description, spec}]")
	}
	seen := map[string]bool{}
	for i, p := range panels {
		if seen[p.ID] {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s appears twice in one batch", p.ID)
		}
		seen[p.ID] = true
		if _, err := d.Panels.CheckJSONWith(panelDef(p), p.Spec, pending); err != nil {
			e := switchboard.AsError(err)
			return &switchboard.Error{Code: e.Code, Message: fmt.Sprintf("panels[%d] (%s): %s; nothing was registered", i, p.ID, e.Message), Details: e.Details}
		}
	}
	return nil
}

func panelRegs(panels []switchboard.HostPanel) ([]switchboard.PanelRegistration, error) {
	regs := make([]switchboard.PanelRegistration, len(panels))
	for i, p := range panels {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s: %v", p.ID, err)
		}
		regs[i] = switchboard.PanelRegistration{Kind: switchboard.RegistrationPanel, Name: p.ID, Definition: b}
	}
	return regs, nil
}

// DeclaredPanels lists every host panel this replica serves: declared
// ones and those the host's Go code registered.
func (d *Daemon) DeclaredPanels(context.Context) ([]switchboard.HostPanel, error) {
	defs := d.Panels.Panels()
	out := make([]switchboard.HostPanel, 0, len(defs))
	for _, def := range defs {
		spec, err := json.Marshal(def.Spec)
		if err != nil {
			return nil, err
		}
		out = append(out, switchboard.HostPanel{ID: def.ID, Title: def.Title, Description: def.Description,
			Scope: def.Scope, ContextKinds: def.ContextKinds, Slot: def.Slot, Spec: spec})
	}
	return out, nil
}

// UndeclarePanel removes a declared panel; NOT_FOUND when none has id (a
// panel the host's Go code registered is not the API's to remove).
func (d *Daemon) UndeclarePanel(ctx context.Context, id string) error {
	if err := d.declStore.PanelRegistrationDelete(ctx, switchboard.RegistrationPanel, id); err != nil {
		if switchboard.AsError(err).Code == switchboard.CodeNotFound {
			return switchboard.Errorf(switchboard.CodeNotFound, "no declared panel %q (GET /api/v1/panels lists them)", id)
		}
		return err
	}
	d.ledgerDeclared(ctx, verbPanelUnregister, id, nil)
	return d.announceDeclared(ctx)
}

// DeclareAdapters checks adapters whole, registers their data tools in
// the catalog (source host) bound to the backend, and stores them: all or
// none. An adapter of a name declared before replaces it.
func (d *Daemon) DeclareAdapters(ctx context.Context, adapters []switchboard.HostAdapter) ([]switchboard.HostAdapter, error) {
	if len(adapters) == 0 {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "send an array of adapters [{name, query, mutate}]")
	}
	if _, err := d.declare(ctx, switchboard.SourceHost, nil, adapters, nil); err != nil {
		return nil, err
	}
	return adapters, nil
}

// DeclareManifest registers a manifest's tools, adapters and panels: all
// of them, or — when any is refused — none.
func (d *Daemon) DeclareManifest(ctx context.Context, source switchboard.Source, m switchboard.Manifest) ([]switchboard.Tool, error) {
	registered, err := d.declare(ctx, source, m.Tools, m.Adapters, func(tools []switchboard.Tool) error {
		if len(m.Panels) == 0 {
			return nil
		}
		pending := map[string]switchboard.Tool{}
		for _, t := range tools {
			pending[t.Name] = t
		}
		return d.checkPanels(m.Panels, pending)
	}, m.Panels...)
	if err != nil {
		return nil, err
	}
	// The manifest's own tools, not its adapters' data tools.
	own := map[string]bool{}
	for _, t := range m.Tools {
		own[t.Name] = true
	}
	out := []switchboard.Tool{}
	for _, t := range registered {
		if own[t.Name] {
			out = append(out, t)
		}
	}
	return out, nil
}

// declare is the one write path of tools, adapters and panels together:
// everything is checked first, then the catalog write (one batch) and the
// declarations' write (one transaction). When the second fails the first
// is undone, so a failure leaves neither.
func (d *Daemon) declare(ctx context.Context, source switchboard.Source, tools []switchboard.Tool, adapters []switchboard.HostAdapter,
	checkPanels func([]switchboard.Tool) error, panels ...switchboard.HostPanel) ([]switchboard.Tool, error) {
	var regs []switchboard.PanelRegistration
	batch := slices.Clone(tools)
	seen := map[string]bool{}
	for i, a := range adapters {
		if seen[a.Name] {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "adapter %s appears twice in one batch", a.Name)
		}
		seen[a.Name] = true
		dt, err := d.adapterTools(a)
		if err != nil {
			e := switchboard.AsError(err)
			return nil, &switchboard.Error{Code: e.Code, Message: fmt.Sprintf("adapters[%d] (%s): %s; nothing was registered", i, a.Name, e.Message), Details: e.Details}
		}
		batch = append(batch, dt...)
		b, err := json.Marshal(storedAdapter{HostAdapter: a, Source: source})
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "adapter %s: %v", a.Name, err)
		}
		regs = append(regs, switchboard.PanelRegistration{Kind: switchboard.RegistrationAdapter, Name: a.Name, Definition: b})
	}
	if checkPanels != nil {
		if err := checkPanels(batch); err != nil {
			return nil, err
		}
		pr, err := panelRegs(panels)
		if err != nil {
			return nil, err
		}
		regs = append(regs, pr...)
	}
	var stale []switchboard.Tool // data tools of ops a replaced adapter no longer offers
	if len(adapters) > 0 {
		prev, err := d.storedAdapters(ctx)
		if err != nil {
			return nil, err
		}
		keep := map[string]bool{}
		for _, t := range batch {
			keep[string(source)+" "+t.Name] = true
		}
		for _, a := range adapters {
			if p, ok := prev[a.Name]; ok {
				for _, n := range adapterToolNames(p.HostAdapter) {
					if !keep[string(p.Source)+" "+n] {
						stale = append(stale, switchboard.Tool{Name: n, Origin: &switchboard.Origin{Source: p.Source}})
					}
				}
			}
		}
	}
	// What the catalog write replaces, to put back if the declarations'
	// write fails after it.
	var prev []switchboard.Tool
	for _, t := range batch {
		p, ok, err := d.Registry.Declaration(ctx, source, t.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			prev = append(prev, p)
		}
	}
	var registered []switchboard.Tool
	if len(batch) > 0 {
		var err error
		if registered, err = d.Registry.Register(ctx, source, batch); err != nil {
			return nil, err
		}
	}
	if err := d.declStore.PanelRegistrationPut(ctx, regs, time.Time{}); err != nil {
		d.undoTools(ctx, source, batch, prev)
		return nil, err
	}
	for _, t := range stale {
		d.dropTool(ctx, t.Origin.Source, t.Name)
	}
	for _, a := range adapters {
		d.ledgerDeclared(ctx, verbAdapterRegister, a.Name, map[string]any{"source": source, "ops": adapterOptions(a).Ops})
	}
	for _, p := range panels {
		d.ledgerDeclared(ctx, verbPanelRegister, p.ID, map[string]any{"title": p.Title})
	}
	if len(regs) == 0 {
		return registered, nil
	}
	return registered, d.announceDeclared(ctx)
}

// undoTools takes back a catalog write whose declarations could not be
// stored: the tools it added go, the ones it replaced (prev) come back.
func (d *Daemon) undoTools(ctx context.Context, source switchboard.Source, tools, prev []switchboard.Tool) {
	ctx = context.WithoutCancel(ctx)
	had := map[string]bool{}
	for _, t := range prev {
		had[t.Name] = true
	}
	for _, t := range tools {
		if had[t.Name] {
			continue
		}
		if err := d.Registry.Unregister(ctx, source, t.Name); err != nil {
			d.log.Error("tool of a refused declaration left in the catalog", "tool", t.Name, "err", err)
		}
	}
	if len(prev) > 0 {
		if _, err := d.Registry.Register(ctx, source, prev); err != nil {
			d.log.Error("tools a refused declaration replaced were not put back", "tools", len(prev), "err", err)
		}
	}
}

// adapterTools checks a and returns its data tools bound to its backend.
func (d *Daemon) adapterTools(a switchboard.HostAdapter) ([]switchboard.Tool, error) {
	if a.Query == nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "an adapter needs a query binding (the request that answers a panel's source)")
	}
	for op := range a.Mutate {
		if a.Mutate[op] == nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "mutate.%s has no binding", op)
		}
	}
	for op := range a.Approval {
		if _, ok := a.Mutate[op]; !ok {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "approval.%s names an op with no mutate binding", op)
		}
	}
	for _, s := range []json.RawMessage{a.QuerySchema, a.RecordSchema} {
		if len(s) > 0 && !json.Valid(s) {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "querySchema and recordSchema must be JSON Schemas")
		}
	}
	opts := adapterOptions(a)
	if err := d.Panels.CheckAdapter(a.Name, opts); err != nil {
		return nil, err
	}
	// The declarations the Go path makes, bound to HTTP instead of a
	// function: the same names, schemas and descriptions.
	tfs, err := panel.AdapterTools(a.Name, opts)
	if err != nil {
		return nil, err
	}
	out := make([]switchboard.Tool, len(tfs))
	for i, tf := range tfs {
		t := tf.Tool
		op := strings.TrimPrefix(t.Name, "data."+a.Name+".")
		b := a.Query
		if op != "query" {
			b = a.Mutate[op]
		}
		t.Binding = &switchboard.Binding{HTTP: b}
		t.TimeoutMs = b.TimeoutMs
		out[i] = t
	}
	return out, nil
}

// UndeclareAdapter removes a declared adapter and its data tools.
func (d *Daemon) UndeclareAdapter(ctx context.Context, name string) error {
	a, err := d.storedAdapter(ctx, name)
	if err != nil {
		return err
	}
	// A declared panel reading the adapter would be left showing an error:
	// refuse, naming the panels, rather than break them silently.
	panels, err := d.DeclaredPanels(ctx)
	if err != nil {
		return err
	}
	var users []string
	for _, p := range panels {
		var spec struct {
			Sources map[string]panelspec.Source `json:"sources"`
		}
		if json.Unmarshal(p.Spec, &spec) != nil {
			continue
		}
		for _, src := range spec.Sources {
			if src.Adapter == name || src.Ref == name {
				users = append(users, p.ID)
				break
			}
		}
	}
	if len(users) > 0 {
		return switchboard.Errorf(switchboard.CodeConflict,
			"adapter %s is read by the declared panel(s) %s; delete them (DELETE /api/v1/panels/{id}) or declare them without it first", name, strings.Join(users, ", ")).
			WithDetails(map[string]any{"panels": users})
	}
	if err := d.declStore.PanelRegistrationDelete(ctx, switchboard.RegistrationAdapter, name); err != nil {
		return err
	}
	for _, n := range adapterToolNames(a.HostAdapter) {
		d.dropTool(ctx, a.Source, n)
	}
	d.ledgerDeclared(ctx, verbAdapterUnregister, name, nil)
	return d.announceDeclared(ctx)
}

// adapterToolNames are the data tools a declared adapter registers.
func adapterToolNames(a switchboard.HostAdapter) []string {
	names := []string{panel.AdapterToolName(a.Name, "query")}
	for op := range a.Mutate {
		names = append(names, panel.AdapterToolName(a.Name, op))
	}
	return names
}

// dropTool unregisters a data tool its adapter no longer has; one already
// gone is no error.
func (d *Daemon) dropTool(ctx context.Context, source switchboard.Source, name string) {
	err := d.Registry.Unregister(context.WithoutCancel(ctx), source, name)
	if c := switchboard.CodeOf(err); err != nil && c != switchboard.CodeNotFound && c != switchboard.CodeToolNotFound {
		d.log.Error("data tool of a removed adapter or op left in the catalog", "tool", name, "err", err)
	}
}

// DeclaredAdapters lists the adapters declared over HTTP or in manifests,
// by name (GET /api/v1/adapters). Their bindings hold no secret: a
// credential header is an {"env": NAME} reference by the binding rules.
func (d *Daemon) DeclaredAdapters(ctx context.Context) ([]switchboard.HostAdapter, error) {
	stored, err := d.storedAdapters(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]switchboard.HostAdapter, 0, len(stored))
	for _, name := range slices.Sorted(maps.Keys(stored)) {
		out = append(out, stored[name].HostAdapter)
	}
	return out, nil
}

func (d *Daemon) storedAdapters(ctx context.Context) (map[string]storedAdapter, error) {
	regs, err := d.declStore.PanelRegistrationList(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]storedAdapter{}
	for _, r := range regs {
		if r.Kind != switchboard.RegistrationAdapter {
			continue
		}
		var a storedAdapter
		if err := json.Unmarshal(r.Definition, &a); err != nil {
			return nil, fmt.Errorf("stored adapter %s: %w", r.Name, err)
		}
		out[r.Name] = a
	}
	return out, nil
}

func (d *Daemon) storedAdapter(ctx context.Context, name string) (storedAdapter, error) {
	all, err := d.storedAdapters(ctx)
	if err != nil {
		return storedAdapter{}, err
	}
	a, ok := all[name]
	if !ok {
		return storedAdapter{}, switchboard.Errorf(switchboard.CodeNotFound, "no declared data adapter %q (declare it with POST /api/v1/adapters)", name)
	}
	return a, nil
}

// InvalidateAdapter refreshes every open panel, on every replica, that
// shows declared adapter name's data: the backend's subscribe webhook.
func (d *Daemon) InvalidateAdapter(ctx context.Context, name string) error {
	if _, err := d.storedAdapter(ctx, name); err != nil {
		return err
	}
	d.Panels.InvalidateAdapter(name)
	return nil
}

func (d *Daemon) ledgerDeclared(ctx context.Context, verb, target string, details map[string]any) {
	actor := "system"
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		actor = p.String()
	}
	var raw json.RawMessage
	if details != nil {
		raw, _ = json.Marshal(details)
	}
	if err := d.Ledger.Append(context.WithoutCancel(ctx), &switchboard.ActivityEntry{Actor: actor, Verb: verb, Target: target, Details: raw}); err != nil {
		d.log.Error("append a panel declaration change to the ledger", "target", target, "err", err)
	}
}

// httpAdapter is a declared adapter as the panel service reads it: a
// source's query is one request to the backend's query binding. Its
// mutations are never called through it — a panel's save calls the data
// tool, which the broker sends to the mutate binding — but it answers
// them the same way for completeness.
type httpAdapter struct {
	decl   switchboard.HostAdapter
	client *httpbind.Client
}

var _ panel.DataAdapter = (*httpAdapter)(nil)

func (a *httpAdapter) Query(ctx context.Context, scope panel.Scope, query json.RawMessage) ([]panel.Record, error) {
	in := map[string]json.RawMessage{}
	if len(query) > 0 {
		in["query"] = query
	}
	body, _ := json.Marshal(in)
	out, err := a.call(ctx, scope, "query", a.decl.Query, body)
	if err != nil {
		return nil, err
	}
	var wrapped struct {
		Records *[]panel.Record `json:"records"`
	}
	if json.Unmarshal(out, &wrapped) == nil && wrapped.Records != nil {
		return *wrapped.Records, nil
	}
	var bare []panel.Record
	if json.Unmarshal(out, &bare) == nil && bare != nil {
		return bare, nil
	}
	return nil, switchboard.Errorf(switchboard.CodeUpstreamError,
		"adapter %s: the backend's query answer is not {\"records\": [...]} or an array of records", a.decl.Name)
}

func (a *httpAdapter) Mutate(ctx context.Context, scope panel.Scope, m panel.Mutation) (panel.Record, error) {
	b := a.decl.Mutate[m.Op]
	if b == nil {
		return nil, switchboard.Errorf(switchboard.CodeForbidden, "adapter %s does not offer %s", a.decl.Name, m.Op)
	}
	in := map[string]any{}
	if m.Key != nil {
		in["key"] = m.Key
	}
	if m.Values != nil {
		in["values"] = m.Values
	}
	body, _ := json.Marshal(in)
	out, err := a.call(ctx, scope, m.Op, b, body)
	if err != nil {
		return nil, err
	}
	var res struct {
		Record panel.Record `json:"record"`
	}
	_ = json.Unmarshal(out, &res)
	return res.Record, nil
}

// Subscribe watches nothing itself: the backend calls POST
// /api/v1/adapters/{name}/invalidate, which refreshes every panel showing
// the adapter (Daemon.InvalidateAdapter).
func (a *httpAdapter) Subscribe(context.Context, panel.Scope, json.RawMessage, func()) error {
	return nil
}

// call sends one request with the assertion an api tool's call carries
// (its jti a fresh id: a panel's read is no invocation) under the
// binding's timeout.
func (a *httpAdapter) call(ctx context.Context, scope panel.Scope, op string, b *switchboard.HTTPBinding, body []byte) ([]byte, error) {
	timeout := adapterTimeout
	if b.TimeoutMs > 0 {
		timeout = time.Duration(b.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tool := panel.AdapterToolName(a.decl.Name, op)
	ctx = httpbind.WithCall(ctx, httpbind.Call{Caller: scope.Principal, Tool: tool, Invocation: "read_" + broker.NewID()})
	out, err := a.client.Call(ctx, b, body)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, switchboard.Errorf(switchboard.CodeTimeout, "adapter %s: the backend did not answer within %s", a.decl.Name, timeout)
	}
	if errors.Is(err, context.Canceled) {
		return nil, switchboard.Errorf(switchboard.CodeCancelled, "adapter %s: %s cancelled", a.decl.Name, tool)
	}
	return out, err
}
