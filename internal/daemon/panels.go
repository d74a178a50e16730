package daemon

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/docexport"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/panelspec/sqladapter"
)

// panelWiring holds what decides which panel tools agents are offered
// (panelToolOffered).
type panelWiring struct {
	// pinned: the host registered a panel or an adapter, called
	// EnablePanels, or runs --demo.
	pinned atomic.Bool
	// tabs answers whether a tab shows panels; set once the sessions exist.
	tabs atomic.Pointer[session.Manager]
	// demoDB is the demo's own database (--demo), closed with the daemon.
	demoDB *sql.DB
}

// startPanels builds the panel service over the broker, the sessions and
// the registry, and puts its tools and document.export in the catalog
// (source core) on every daemon. Which of them are offered is
// panelToolOffered's decision.
func (d *Daemon) startPanels(ctx context.Context, opts Options) error {
	if err := opts.Canvas.Validate(); err != nil {
		return err
	}
	// Instances are stored and changes for a tab held by another replica
	// are asked of its replica (internal/panel/shared.go, internal/panel/remote.go).
	d.Panels = panel.New(panel.Options{Caller: d.Broker, Tabs: d.Sessions, Tools: d.Registry, Logger: d.log,
		Canvas: opts.Canvas, Previews: opts.Previews, PreviewOrigin: opts.PreviewOrigin, Holder: d.Agents.Holder,
		Store: opts.Store, Bus: opts.Bus, Asker: d.asker, Canvases: opts.Store, OnCompose: d.Telemetry.PanelComposed,
		ShowsPanels: mcpserver.ShowsApps})
	d.panelWiring.tabs.Store(d.Sessions)
	if err := d.registerCore(ctx, append(d.Panels.Tools(), docexport.Tool(d.Panels))); err != nil {
		return err
	}
	if opts.Demo {
		return d.registerDemoPanels(ctx)
	}
	return nil
}

// panelToolOffered is the rule for the panel tools (the registry's
// Options.Offered; every other tool is always offered). Once the host has
// panels (pinned) all are. Before, panel.open, which only opens a host
// panel, is not, and the others — compose, patch, close, fill, run_action,
// list, describe, read_state and document.export, which serve panels
// agents compose — are offered wherever a panel can be shown: to an MCP
// client that declared MCP Apps (its chat shows them, ctx says so), and
// to everyone while a tab whose panel renderer attached is connected on
// any replica. It reads the sessions, never the registry: the registry
// asks it under its lock.
func (d *Daemon) panelToolOffered(ctx context.Context, t switchboard.Tool) bool {
	if !panelToolNames[t.Name] || d.panelWiring.pinned.Load() {
		return true
	}
	if t.Name == panel.ToolOpen {
		return false
	}
	if mcpserver.ShowsApps(ctx) {
		return true
	}
	tabs := d.panelWiring.tabs.Load()
	return tabs != nil && tabs.ShowsPanels()
}

// panelToolNames are the tools panelToolOffered decides.
var panelToolNames = map[string]bool{
	panel.ToolList: true, panel.ToolDescribe: true, panel.ToolOpen: true, panel.ToolFill: true,
	panel.ToolCompose: true, panel.ToolPatch: true, panel.ToolRunAction: true, panel.ToolClose: true,
	panel.ToolReadState: true, docexport.ToolName: true,
}

// EnablePanels offers every panel tool (panel.list, panel.describe,
// panel.open, panel.fill, panel.compose, panel.patch, panel.run_action,
// panel.close, panel.read_state) and document.export to agents whether or
// not a tab shows panels, even when the host registers none. Calling it
// again does nothing.
func (d *Daemon) EnablePanels(context.Context) error {
	if !d.panelWiring.pinned.Swap(true) {
		d.Registry.Reoffer(slices.Sorted(maps.Keys(panelToolNames))...)
	}
	return nil
}

// RegisterPanel adds a host panel agents can list, open and fill, made with
// the panel builder (panelspec.NewBuilder(panelspec.OriginHost)):
//
//	b := panelspec.NewBuilder(panelspec.OriginHost)
//	b.BodyWith(panelspec.BodyProps{Title: "Project settings"},
//		b.FormSubmit("project", "save", panelspec.TextField("name", "Name").Required()))
//	b.Source("project", panelspec.AdapterSource("projects", json.RawMessage(`{"where": {"id": {"$param": "projectId"}}}`)))
//	b.Action("save", panelspec.Mutate("project", panelspec.OpUpdate))
//	spec, _ := b.Build()
//	d.RegisterPanel(ctx, panel.Def{ID: "project.settings", Title: "Project settings",
//		Description: "Edit one project's name, owner, status and budget.", Spec: spec})
func (d *Daemon) RegisterPanel(ctx context.Context, def panel.Def) error {
	if err := d.Panels.Register(def); err != nil {
		return err
	}
	return d.EnablePanels(ctx)
}

// RegisterAdapter makes a data adapter available to panel sources under
// name and adds its data tools (data.<name>.query and data.<name>.<op>)
// to the catalog; panel mutate actions on its sources call those tools
// through the broker.
func (d *Daemon) RegisterAdapter(ctx context.Context, name string, a panel.DataAdapter, opts panel.AdapterOptions) error {
	tools, err := d.Panels.RegisterAdapter(name, a, opts)
	if err != nil {
		return err
	}
	if err := d.registerCore(ctx, tools); err != nil {
		return err
	}
	return d.EnablePanels(ctx)
}

// closePanels ends the panel service's background work.
func (d *Daemon) closePanels() {
	d.Panels.Close()
	if d.panelWiring.demoDB != nil {
		_ = d.panelWiring.demoDB.Close()
	}
}

// registerCore declares tools in the catalog (source core) as Go-function
// tools served by their functions in this process, all or nothing.
func (d *Daemon) registerCore(ctx context.Context, tools []panel.ToolFunc) error {
	decls := make([]switchboard.Tool, len(tools))
	for i, tf := range tools {
		decls[i] = tf.Tool
		decls[i].Binding = &switchboard.Binding{Go: true}
		d.Broker.Handle(tf.Tool.Name, tf.Func)
	}
	if _, err := d.Registry.Register(ctx, switchboard.SourceCore, decls); err != nil {
		for _, tf := range tools {
			d.Broker.Handle(tf.Tool.Name, nil)
		}
		return err
	}
	return nil
}

// The demo's panels (switchboard serve --demo): the demo app stands in for
// an app with its own database, here an in-memory SQLite table of the
// projects the demo page shows.

const demoSchema = `CREATE TABLE projects (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL DEFAULT 'active', due DATE, budget INTEGER, public BOOLEAN NOT NULL DEFAULT 0)`

var demoProjects = [][]any{
	{"apollo", "Apollo launch site", "Alex Doe", "active", "2026-12-15", 12000, true},
	{"borealis", "Borealis rebrand", "Sam Lee", "active", "2027-02-01", 8000, false},
	{"cascade", "Cascade onboarding", "Alex Doe", "paused", nil, 3000, false},
	{"delta", "Delta annual report", "Kim Park", "active", "2027-03-31", 5000, true},
	{"ember", "Ember mobile app", "Sam Lee", "done", "2026-10-01", 20000, true},
	{"fjord", "Fjord podcast", "Kim Park", "active", nil, 1500, false},
}

func (d *Daemon) registerDemoPanels(ctx context.Context) error {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return fmt.Errorf("demo database: %w", err)
	}
	db.SetMaxOpenConns(1) // one connection: an in-memory database lives in it
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	d.panelWiring.demoDB = db
	if _, err := db.ExecContext(ctx, demoSchema); err != nil {
		return fmt.Errorf("demo database: %w", err)
	}
	for _, p := range demoProjects {
		if _, err := db.ExecContext(ctx, `INSERT INTO projects (id, name, owner, status, due, budget, public) VALUES (?, ?, ?, ?, ?, ?, ?)`, p...); err != nil {
			return fmt.Errorf("demo database: %w", err)
		}
	}
	a, err := sqladapter.New(db, sqladapter.SQLite, sqladapter.Table{
		Name: "projects", Key: "id", Columns: []string{"name", "owner", "status", "due", "budget", "public"},
	})
	if err != nil {
		return err
	}
	if err := d.RegisterAdapter(ctx, "projects", a, panel.AdapterOptions{
		Description:  "the projects of the Acme Studio demo (id, name, owner, status, due, budget, public)",
		Ops:          []string{panel.OpUpdate},
		Approval:     map[string]switchboard.Approval{panel.OpUpdate: switchboard.ApprovalHITL},
		QuerySchema:  a.QuerySchema(),
		RecordSchema: a.RecordSchema(),
	}); err != nil {
		return err
	}
	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.BodyWith(panelspec.BodyProps{Title: "Project settings", Description: "Changes are saved only when you press Save."},
		b.FormSubmit("project", "save",
			panelspec.TextField("name", "Name").Required().Length(1, 80),
			panelspec.TextField("owner", "Owner").Length(0, 80),
			panelspec.SelectField("status", "Status", panelspec.Opt("active", "Active"), panelspec.Opt("paused", "Paused"), panelspec.Opt("done", "Done")).Required(),
			panelspec.DateField("due", "Due date"),
			panelspec.NumberField("budget", "Budget (USD)").Range(0, 1e7).Step(100),
			panelspec.CheckboxField("public", "Visible to clients"),
		))
	b.Source("project", panelspec.Source{Kind: panelspec.SourceAdapter, Adapter: "projects", Key: "id",
		Query: json.RawMessage(`{"where": {"id": {"$param": "projectId"}}}`)})
	b.Action("save", panelspec.Mutate("project", panelspec.OpUpdate))
	spec, err := b.Build()
	if err != nil {
		return fmt.Errorf("demo panel: %w", err)
	}
	if err := d.registerDemoDashboard(ctx); err != nil {
		return err
	}
	return d.RegisterPanel(ctx, panel.Def{
		ID: "project.settings", Title: "Project settings", Scope: "one project (params.projectId: apollo, borealis, cascade, delta, ember or fjord)",
		Description: "Edit one project's name, owner, status, due date, budget and client visibility. Saving asks the user to approve.",
		Spec:        spec,
	})
}
