// Package daemon embeds switchboard in a Go program: New wires a daemon
// over a Store (package sqlite or postgres), RegisterFunc adds the
// program's own functions as tools, and Handler serves the whole HTTP API
// (/api/v1, /mcp, the console, the browser SDK) for the program to mount
// in its own http.Server. `switchboard serve` runs the same daemon.
//
//	d, err := daemon.New(ctx, daemon.Options{Store: store, AdminToken: token})
//	d.RegisterFunc(ctx, tool, daemon.Func(func(ctx context.Context, in CreateTask) (Task, error) { ... }))
//	mux.Handle("/switchboard/", http.StripPrefix("/switchboard", d.Handler()))
//
// This package is the promise to embedders: its options and signatures
// use only the root package's types, panelspec's and its own. The engine
// it wires is internal (docs/architecture.md, "Public and internal").
package daemon

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/switchboardhq/switchboard"
	engine "github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Daemon is a running switchboard. Close it before closing its store.
type Daemon struct {
	d *engine.Daemon
}

// New wires a Daemon over opts.Store and starts its background work
// (sweeps, heartbeats, retention). Store and AdminToken are required.
func New(ctx context.Context, opts Options) (*Daemon, error) {
	d, err := engine.New(ctx, opts.engine())
	if err != nil {
		return nil, err
	}
	return &Daemon{d: d}, nil
}

// Handler serves the whole daemon: /healthz, /api/v1, /mcp and the rest.
// Mount it at the root of a host or under a prefix with
// http.StripPrefix.
func (d *Daemon) Handler() http.Handler { return d.d.Handler() }

// Close stops background work. It does not close the store.
func (d *Daemon) Close() error { return d.d.Close() }

// Release records that this replica stopped cleanly, so that other
// replicas on the store take over its calls awaiting approval at once
// instead of after the replica timeout. Call it after Close, once the HTTP
// server has finished its requests.
func (d *Daemon) Release(ctx context.Context) error { return d.d.Release(ctx) }

// Lost is closed when another replica found this one's heartbeat stale and
// took over its work: calls it still runs have been resolved, so the
// program must stop serving (and restart).
func (d *Daemon) Lost() <-chan struct{} { return d.d.Lost() }

// MetricsHandler serves the Prometheus metrics, for a listener of the
// program's own when Options.MetricsElsewhere takes them off the API.
func (d *Daemon) MetricsHandler() http.Handler { return d.d.Metrics.Handler() }

// DemoURL is the demo app's address under base (http://host:port) with
// its key; "" unless Options.Demo.
func (d *Daemon) DemoURL(base string) string { return d.d.DemoURL(base) }

// RegisterFunc declares tool in the catalog (source host) as a Go-function
// tool and serves its calls with fn in this process. tool.Binding is set to
// {go: true}; everything else about the tool (name, description, class,
// schemas, limits) is checked as for any registration. Calls reach fn
// like every other call: validated, recorded, limited and written to the
// ledger.
//
// fn receives the validated input object and returns any JSON-encodable
// result; return a *switchboard.Error to choose the code the caller sees.
func (d *Daemon) RegisterFunc(ctx context.Context, tool switchboard.Tool, fn func(ctx context.Context, input json.RawMessage) (any, error)) error {
	return d.d.RegisterFunc(ctx, tool, fn)
}

// Func adapts a handler with typed input and output for RegisterFunc: the
// validated input object is decoded into In and Out is the result.
//
//	d.RegisterFunc(ctx, tool, daemon.Func(func(ctx context.Context, in CreateTask) (Task, error) { ... }))
func Func[In, Out any](fn func(ctx context.Context, in In) (Out, error)) func(context.Context, json.RawMessage) (any, error) {
	return engine.Func(fn)
}

// Panel is a panel a host registers: a builder-made spec plus what an
// agent needs to choose it.
type Panel struct {
	// ID names the panel (dot-separated lowercase words, like a tool
	// name): "project.settings".
	ID    string
	Title string
	// Description tells an agent when to open the panel and what it edits.
	Description string
	// Scope says what the panel applies to: a page ("settings") or a kind
	// of record ("one project; open with params.projectId").
	Scope string
	// ContextKinds are the tab context kinds ("project", "page") the panel
	// applies to; empty means any.
	ContextKinds []string
	// Slot is the page slot the panel is shown in ("main" when empty).
	Slot string
	// Spec is the panel, origin host. Values {"$param": "name"} in its
	// sources' query and input are filled from panel.open's params.
	Spec *panelspec.Spec
}

// RegisterPanel adds a host panel agents can list, open and fill, made
// with the panel builder:
//
//	b := panelspec.NewBuilder(panelspec.OriginHost)
//	b.BodyWith(panelspec.BodyProps{Title: "Project settings"},
//		b.FormSubmit("project", "save", panelspec.TextField("name", "Name").Required()))
//	b.Source("project", panelspec.AdapterSource("projects", json.RawMessage(`{"where": {"id": {"$param": "projectId"}}}`)))
//	b.Action("save", panelspec.Mutate("project", panelspec.OpUpdate))
//	spec, _ := b.Build()
//	d.RegisterPanel(ctx, daemon.Panel{ID: "project.settings", Title: "Project settings",
//		Description: "Edit one project's name, owner, status and budget.", Spec: spec})
func (d *Daemon) RegisterPanel(ctx context.Context, p Panel) error {
	return d.d.RegisterPanel(ctx, panel.Def{ID: p.ID, Title: p.Title, Description: p.Description,
		Scope: p.Scope, ContextKinds: p.ContextKinds, Slot: p.Slot, Spec: p.Spec})
}

// AdapterOptions say how a data adapter is offered as tools.
type AdapterOptions struct {
	// Description says what the data is ("the projects of the studio").
	Description string
	// Ops are the mutations offered as tools (default create, update,
	// delete). A mutate action on an op not offered fails.
	Ops []string
	// Approval per op (default: none for create and update, hitl for
	// delete). The approval policy decides what the value means.
	Approval map[string]switchboard.Approval
	// QuerySchema and RecordSchema, when set, are the JSON Schemas of the
	// adapter's query and of a record's values; they make the data tools'
	// input schemas precise (default: any object).
	QuerySchema  json.RawMessage
	RecordSchema json.RawMessage
}

// RegisterAdapter makes a data adapter available to panel sources under
// name and adds its data tools (data.<name>.query and data.<name>.<op>)
// to the catalog; panel mutate actions on its sources call those tools.
func (d *Daemon) RegisterAdapter(ctx context.Context, name string, a panelspec.DataAdapter, opts AdapterOptions) error {
	return d.d.RegisterAdapter(ctx, name, a, panel.AdapterOptions{Description: opts.Description, Ops: opts.Ops,
		Approval: opts.Approval, QuerySchema: opts.QuerySchema, RecordSchema: opts.RecordSchema})
}

// EnablePanels offers the panel tools (panel.list, panel.open,
// panel.compose, ...) and document.export to agents even when the host
// registers no panel and no tab shows panels (without it, every tool but
// panel.open is offered while a tab's panel renderer is connected);
// RegisterPanel and RegisterAdapter enable them too. Calling it again
// does nothing.
func (d *Daemon) EnablePanels(ctx context.Context) error { return d.d.EnablePanels(ctx) }
