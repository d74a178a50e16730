package panel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
)

func TestPanelScopes(t *testing.T) {
	t.Parallel()
	sessionScopes := map[string]switchboard.AgentScope{
		"ag_sidebar": {PanelScope: switchboard.PanelScope{Slots: []string{"sidebar"}}},
	}
	e := newEnvWith(t, nil, func(o *panel.Options) {
		o.AgentScope = func(_ context.Context, id string) (switchboard.AgentScope, bool) {
			sc, ok := sessionScopes[id]
			return sc, ok
		}
	})
	side := settingsPanel(t)
	side.ID, side.Title, side.Slot = "booking.form", "Booking", "sidebar"
	if err := e.svc.Register(side); err != nil {
		t.Fatal(err)
	}
	e.tab(t)

	// A concierge: it may list, read, open and fill the project panels in
	// the main slot, and nothing else — no action anywhere.
	concierge := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "concierge",
		Allow:      []string{panel.ToolList, panel.ToolReadState, panel.ToolOpen, panel.ToolFill},
		PanelScope: switchboard.PanelScope{Panels: []string{"project.*"}, Slots: []string{"main"}}}
	// A designer composes and patches, in the sidebar only.
	designer := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "designer",
		PanelScope: switchboard.PanelScope{Panels: []string{"booking.*"}, Slots: []string{"sidebar"}}}

	settings := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	booking := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "booking.form", "params": map[string]any{"projectId": "borealis"}})
	theirs := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)})

	t.Run("listings show only what the scope admits", func(t *testing.T) {
		l := do[panel.ListResult](t, e, concierge, panel.ToolList, map[string]any{})
		if len(l.Panels) != 1 || l.Panels[0].ID != "project.settings" || l.Panels[0].Slot != "main" {
			t.Fatalf("panels: %+v", l.Panels)
		}
		if len(l.Instances) != 1 || l.Instances[0].InstanceID != settings.InstanceID {
			t.Fatalf("instances: %+v", l.Instances)
		}
		all := do[panel.ListResult](t, e, agentP, panel.ToolList, map[string]any{})
		if len(all.Panels) != 2 || len(all.Instances) != 3 {
			t.Fatalf("an unscoped agent sees %d panels, %d instances", len(all.Panels), len(all.Instances))
		}
	})

	t.Run("out of scope is not found, before anything runs", func(t *testing.T) {
		for _, c := range []struct {
			tool  string
			input map[string]any
		}{
			{panel.ToolFill, map[string]any{"instanceId": booking.InstanceID, "values": map[string]any{"name": "x"}}},
			{panel.ToolFill, map[string]any{"instanceId": theirs.InstanceID, "values": map[string]any{"name": "x"}}},
			{panel.ToolReadState, map[string]any{"panelId": booking.InstanceID}},
			{panel.ToolOpen, map[string]any{"panel": "booking.form", "params": map[string]any{"projectId": "apollo"}}},
		} {
			_, err := e.call(t, concierge, c.tool, c.input)
			if switchboard.CodeOf(err) != switchboard.CodeNotFound {
				t.Errorf("%s %v: %v, want NOT_FOUND", c.tool, c.input, err)
			}
		}
		if st := do[panel.State](t, e, agentP, panel.ToolReadState, map[string]any{"panelId": booking.InstanceID}); len(st.Filled) != 0 || st.Lease != nil {
			t.Fatalf("a refused call touched the panel: %+v", st)
		}
		// Within scope it works.
		if r := do[panel.FillResult](t, e, concierge, panel.ToolFill, map[string]any{"instanceId": settings.InstanceID, "values": map[string]any{"name": "A"}}); len(r.Applied) != 1 {
			t.Fatalf("in-scope fill: %+v", r)
		}
	})

	t.Run("a concierge scoped to open and fill runs no action anywhere", func(t *testing.T) {
		_, err := e.call(t, concierge, panel.ToolRunAction, map[string]any{"instanceId": settings.InstanceID, "action": "save"})
		if switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
			t.Fatalf("run_action: %v, want TOOL_NOT_FOUND", err)
		}
		if name, _ := e.project(t, "apollo"); name != "Apollo" {
			t.Fatalf("saved %q", name)
		}
	})

	t.Run("composing: only in allowed slots; own composed panels stay in reach", func(t *testing.T) {
		_, err := e.call(t, designer, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)})
		if switchboard.CodeOf(err) != switchboard.CodeForbidden {
			t.Fatalf("compose in main: %v, want FORBIDDEN", err)
		}
		mine := do[view](t, e, designer, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec), "slot": "sidebar"})
		if mine.Slot != "sidebar" {
			t.Fatalf("composed in %q", mine.Slot)
		}
		l := do[panel.ListResult](t, e, designer, panel.ToolList, map[string]any{})
		ids := map[string]bool{}
		for _, in := range l.Instances {
			ids[in.InstanceID] = true
		}
		if len(ids) != 2 || !ids[mine.InstanceID] || !ids[booking.InstanceID] {
			t.Fatalf("designer sees %v", ids)
		}
		patch := []map[string]any{{"op": "replace", "path": "/nodes/body/props/title", "value": "Mine"}}
		do[view](t, e, designer, panel.ToolPatch, map[string]any{"instanceId": mine.InstanceID, "patch": patch})
		if _, err := e.call(t, designer, panel.ToolPatch, map[string]any{"instanceId": theirs.InstanceID, "patch": patch}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("patching another's composed panel: %v", err)
		}
		if !e.svc.Admits(switchboard.WithPrincipal(context.Background(), designer), mine.InstanceID) ||
			e.svc.Admits(switchboard.WithPrincipal(context.Background(), designer), theirs.InstanceID) ||
			e.svc.Admits(switchboard.WithPrincipal(context.Background(), designer), "pi_unknown") ||
			!e.svc.Admits(switchboard.WithPrincipal(context.Background(), agentP), "pi_unknown") {
			t.Fatal("Admits disagrees with the tools")
		}
	})

	t.Run("a registered agent session's scope applies too", func(t *testing.T) {
		ctx := as(agentP, "ag_sidebar")
		inv, err := e.callIn(t, ctx, panel.ToolList, map[string]any{})
		l := result[panel.ListResult](t, inv, err)
		if len(l.Panels) != 1 || l.Panels[0].ID != "booking.form" {
			t.Fatalf("session-scoped list: %+v", l.Panels)
		}
		if _, err := e.callIn(t, ctx, panel.ToolFill, map[string]any{"instanceId": settings.InstanceID, "values": map[string]any{"name": "B"}}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("fill outside the session's slots: %v", err)
		}
		if _, err := e.callIn(t, ctx, panel.ToolFill, map[string]any{"instanceId": booking.InstanceID, "values": map[string]any{"name": "B"}}); err != nil {
			t.Fatalf("fill inside: %v", err)
		}
	})

	t.Run("the tab and the user are unscoped", func(t *testing.T) {
		tab := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: settings.SessionID})
		if len(e.svc.Attach(tab, settings.SessionID)) != 4 {
			t.Fatal("the tab does not see all its panels")
		}
	})

	t.Run("bad slots are refused", func(t *testing.T) {
		bad := settingsPanel(t)
		bad.ID, bad.Slot = "bad.slot", "Side Bar"
		if err := e.svc.Register(bad); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Fatalf("register: %v", err)
		}
		if _, err := e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec), "slot": "../x"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Fatalf("compose: %v", err)
		}
	})
}
