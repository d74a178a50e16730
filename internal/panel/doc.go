// Package panel runs panels: it holds the panels a host registers, the
// panel instances open in each browser tab, the data adapters their sources
// read, and the panel tools through which agents list, open, fill, compose,
// patch and act on them. It builds on the pure Panel Spec IR in package
// panelspec (every spec passes panelspec.Validate before a tab sees it).
//
// Where it sits. The tools (panel.list, panel.describe, panel.open,
// panel.fill, panel.compose, panel.patch, panel.run_action, panel.close)
// are ordinary Go-function api tools served through the broker, so the
// agent loop, MCP, the HTTP API and the CLI reach them alike and every call
// is validated, recorded and written to the ledger. The daemon wires them
// (internal/daemon/panels.go); the browser's side is a handful of session-token
// routes (internal/httpapi/panels.go) and the renderer in the browser SDK
// (internal/web/sdk/panels.js).
//
// State. An instance is the spec, the resolved data of each source, the
// current form values, the set of fields the user has edited (dirty), the
// outcome of each action and the lease. The replica that holds the tab's
// stream keeps the working copy in memory and makes every change; with
// Options.Store each change is also written to the store (a
// compare-and-swap on its version, shared.go), so any replica reads it and
// a tab reattaching elsewhere gets it back; with Options.Bus a change asked
// of another replica is sent to the tab's (remote.go). Every change is
// pushed to the tab on its session stream as panel.open, panel.update (a
// full snapshot with an increasing version) or panel.close. When the tab is
// gone for good its instances are dropped.
//
// Chat surfaces. An MCP client that shows panels itself (MCP Apps,
// Options.ShowsPanels) needs no tab: with none showing panels, what it
// opens or composes belongs to its principal's chat surface, an id that
// stands where a tab's session id stands (surface.go).
//
// Mutations. panel.run_action is the only path by which a panel changes
// anything outside itself: a mutate action on an adapter source calls the
// adapter's data.<name>.<op> tool and a tool action calls its tool, both
// through the broker, so approvals and the ledger apply. panel.fill only
// moves unsaved form values and never touches a field the user edited.
package panel
