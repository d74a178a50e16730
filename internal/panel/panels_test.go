package panel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

type view struct {
	InstanceID string                    `json:"instanceId"`
	SessionID  string                    `json:"sessionId"`
	Slot       string                    `json:"slot"`
	Version    int                       `json:"version"`
	Values     map[string]map[string]any `json:"values"`
	Warnings   []panelspec.Issue         `json:"warnings"`
}

func TestCompose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	sid, conn := e.tab(t)

	t.Run("a composed panel opens in the tab, marked as the agent's", func(t *testing.T) {
		v := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)})
		if v.SessionID != sid || v.InstanceID == "" {
			t.Fatalf("compose answered %+v", v)
		}
		sn := event[panel.Snapshot](t, conn, panel.EventOpen)
		if sn.InstanceID != v.InstanceID || sn.Origin != panelspec.OriginAgent || sn.Spec.Origin != panelspec.OriginAgent || sn.Title != "All projects" {
			t.Fatalf("panel.open: %+v", sn)
		}
		var rows []map[string]any
		if err := json.Unmarshal(sn.Data["all"], &rows); err != nil || len(rows) != 2 || rows[0]["name"] != "Apollo" {
			t.Fatalf("the adapter source loaded %s (%v)", sn.Data["all"], err)
		}
	})

	t.Run("a spec sent as a JSON string is read too", func(t *testing.T) {
		do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": tableSpec})
		event[panel.Snapshot](t, conn, panel.EventOpen)
	})

	bad := `{"v": 1, "root": "body", "nodes": {
		"body": {"type": "panel-body", "children": ["h", "l"]},
		"h": {"type": "heading", "props": {"txt": "Hi"}},
		"l": {"type": "link", "props": {"href": "javascript:alert(1)", "label": "x"}}}}`

	t.Run("a refused spec gets a repair hint, then the fallback card", func(t *testing.T) {
		inv, err := e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(bad), "title": "Broken"})
		ce := switchboard.AsError(err)
		if ce == nil || !strings.HasPrefix(string(ce.Code), "SPEC_") {
			t.Fatalf("first refusal: %v", err)
		}
		for _, want := range []string{"only repair round", "/nodes/h/props/txt", `did you mean "text"?`, "SPEC_UNSAFE", "/nodes/l/props/href"} {
			if !strings.Contains(ce.Message, want) {
				t.Errorf("hint lacks %q:\n%s", want, ce.Message)
			}
		}
		if inv.Status != switchboard.StatusFailed {
			t.Errorf("the call is recorded as %s", inv.Status)
		}
		drain(conn)
		_, err = e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(bad), "title": "Broken"})
		ce = switchboard.AsError(err)
		details, _ := json.Marshal(ce.Details)
		if !strings.Contains(ce.Message, "refused again") || !strings.Contains(string(details), "fallbackInstanceId") {
			t.Fatalf("second refusal: %s %s", ce.Message, details)
		}
		sn := event[panel.Snapshot](t, conn, panel.EventOpen)
		text, _ := json.Marshal(sn.Spec)
		if sn.Origin != panelspec.OriginAgent || !strings.Contains(string(text), "could not be shown") || strings.Contains(string(text), "javascript") {
			t.Fatalf("fallback card: %s", text)
		}
		// The round starts again after a refusal was answered with the card.
		_, err = e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(bad)})
		if ce := switchboard.AsError(err); !strings.Contains(ce.Message, "only repair round") {
			t.Fatalf("third: %v", err)
		}
	})

	t.Run("a composed panel cannot pass itself off as the host's", func(t *testing.T) {
		spec := strings.Replace(tableSpec, `"origin": "host"`, `"origin": "host"`, 1)
		do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(spec)})
		if sn := event[panel.Snapshot](t, conn, panel.EventOpen); sn.Origin != panelspec.OriginAgent {
			t.Fatalf("origin %q", sn.Origin)
		}
	})

	t.Run("a tool source must be a read tool", func(t *testing.T) {
		spec := `{"v": 1, "root": "b", "sources": {"x": {"kind": "tool", "tool": "data.projects.delete", "input": {"key": "apollo"}}},
			"nodes": {"b": {"type": "panel-body", "children": ["t"]}, "t": {"type": "list", "props": {"source": "x"}}}}`
		do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(spec)})
		sn := event[panel.Snapshot](t, conn, panel.EventOpen)
		if sn.Errors["x"] == nil || sn.Errors["x"].Code != switchboard.CodeForbidden {
			t.Fatalf("source error: %+v", sn.Errors)
		}
		if name, _ := e.project(t, "apollo"); name != "Apollo" {
			t.Fatal("rendering a panel ran a mutation")
		}
		var n int
		_ = e.app.QueryRow(`SELECT count(*) FROM projects`).Scan(&n)
		if n != 2 {
			t.Fatalf("%d projects left", n)
		}
	})
}

func TestOpenAndFill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, conn := e.tab(t)

	if _, err := e.call(t, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("open without its param: %v", err)
	}
	if _, err := e.call(t, agentP, panel.ToolOpen, map[string]any{"panel": "project.setings", "params": map[string]any{"projectId": "apollo"}}); switchboard.CodeOf(err) != switchboard.CodeNotFound || !strings.Contains(err.Error(), `did you mean "project.settings"?`) {
		t.Fatalf("a typo: %v", err)
	}
	v := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	want := map[string]any{"name": "Apollo", "status": "active", "budget": float64(1200), "public": true, "id": "apollo"}
	if diff := cmp.Diff(want, v.Values["project"]); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
	sn := event[panel.Snapshot](t, conn, panel.EventOpen)
	if sn.InstanceID != v.InstanceID || sn.Origin != panelspec.OriginHost || sn.Panel != "project.settings" {
		t.Fatalf("panel.open %+v", sn)
	}
	again := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	if again.InstanceID != v.InstanceID {
		t.Fatal("opening the same panel twice made two instances")
	}
	drain(conn)

	// The user edits the name in the tab.
	ctx := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sn.SessionID})
	ed, err := e.svc.Edit(ctx, v.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"name": json.RawMessage(`"Apollo (user)"`)}})
	if err != nil || len(ed.Applied) != 1 {
		t.Fatalf("edit: %+v %v", ed, err)
	}

	fill := do[panel.FillResult](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": v.InstanceID, "values": map[string]any{
		"name":   "Apollo (agent)", // the user edited it: skipped
		"budget": 5000,             // applied
		"public": false,            // applied
		"status": "archived",       // not an option
		"id":     "zeus",           // read-only
		"budgt":  1,                // not declared
		"owner":  "x",              // not declared, nothing close
	}})
	if diff := cmp.Diff([]string{"budget", "public"}, fill.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if len(fill.Skipped) != 1 || fill.Skipped[0].Path != "name" {
		t.Errorf("skipped %+v", fill.Skipped)
	}
	codes := map[string]string{}
	for _, fe := range fill.Errors {
		codes[fe.Path] = string(fe.Code) + " " + fe.Suggestion
	}
	if diff := cmp.Diff(map[string]string{
		"budgt":  `INVALID_INPUT did you mean "budget"?`,
		"id":     "FORBIDDEN ",
		"owner":  "INVALID_INPUT declared fields: budget, id, name, public, status",
		"status": "SCHEMA_VIOLATION use one of active, paused",
	}, codes); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	up := event[panel.Snapshot](t, conn, panel.EventUpdate)
	if up.Values["project"]["budget"] != float64(5000) || up.Values["project"]["name"] != "Apollo (user)" {
		t.Fatalf("panel.update values %v", up.Values)
	}
	if diff := cmp.Diff(map[string][]string{"project": {"name"}}, up.Dirty); diff != "" {
		t.Errorf("dirty (-want +got):\n%s", diff)
	}
	if name, budget := e.project(t, "apollo"); name != "Apollo" || budget != 1200 {
		t.Fatalf("fill saved: %s %d", name, budget)
	}

	// panel.list shows the instance with what is unsaved.
	list := do[panel.ListResult](t, e, agentP, panel.ToolList, map[string]any{})
	if len(list.Panels) != 1 || len(list.Instances) != 1 {
		t.Fatalf("list: %+v", list)
	}
	p := list.Panels[0]
	if p.ID != "project.settings" || len(p.Fields) != 5 || p.Params[0] != "projectId" {
		t.Fatalf("panel info %+v", p)
	}
	acts := map[string]panel.ActionInfo{}
	for _, a := range p.Actions {
		acts[a.ID] = a
	}
	if acts["save"].Tool != "data.projects.update" || acts["save"].Label != "Save" || !acts["delete"].Destructive || acts["delete"].Confirm == "" {
		t.Fatalf("actions %+v", p.Actions)
	}
	if in := list.Instances[0]; in.Unsaved != 3 || in.Dirty["project"][0] != "name" {
		t.Fatalf("instance %+v", in)
	}

	// A value of the wrong type from the tab is refused; undeclared too.
	ed, _ = e.svc.Edit(ctx, v.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"budget": json.RawMessage(`"lots"`), "x": json.RawMessage(`1`)}})
	if len(ed.Applied) != 0 || len(ed.Errors) != 2 {
		t.Fatalf("bad edits: %+v", ed)
	}
	// Another tab cannot touch this instance.
	other := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: "ses_other"})
	if _, err := e.svc.Edit(other, v.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"name": json.RawMessage(`"x"`)}}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("foreign edit: %v", err)
	}

	t.Run("closing", func(t *testing.T) {
		do[map[string]any](t, e, agentP, panel.ToolClose, map[string]any{"instanceId": v.InstanceID})
		closed := event[map[string]string](t, conn, panel.EventClose)
		if closed["instanceId"] != v.InstanceID {
			t.Fatalf("panel.close %v", closed)
		}
		if _, err := e.call(t, agentP, panel.ToolFill, map[string]any{"instanceId": v.InstanceID, "values": map[string]any{"budget": 1}}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("fill after close: %v", err)
		}
	})
}

func TestPatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, conn := e.tab(t)
	v := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)})
	drain(conn)

	patched := do[view](t, e, agentP, panel.ToolPatch, map[string]any{"instanceId": v.InstanceID, "patch": []any{
		map[string]any{"op": "replace", "path": "/nodes/body/props/title", "value": "Budgets"},
	}})
	sn := event[panel.Snapshot](t, conn, panel.EventUpdate)
	if patched.Version <= v.Version || sn.SpecVersion != 2 || !strings.Contains(string(sn.Spec.Nodes["body"].Props), "Budgets") {
		t.Fatalf("patched: %+v %s", sn, sn.Spec.Nodes["body"].Props)
	}

	for name, patch := range map[string][]any{
		"a javascript: link": {map[string]any{"op": "add", "path": "/nodes/l", "value": map[string]any{"type": "link", "props": map[string]any{"href": "javascript:alert(1)", "label": "x"}}},
			map[string]any{"op": "add", "path": "/nodes/body/children/-", "value": "l"}},
		"the origin":       {map[string]any{"op": "replace", "path": "/origin", "value": "host"}},
		"a path not there": {map[string]any{"op": "replace", "path": "/nodes/nope/props/text", "value": "x"}},
	} {
		_, err := e.call(t, agentP, panel.ToolPatch, map[string]any{"instanceId": v.InstanceID, "patch": patch})
		if ce := switchboard.AsError(err); ce == nil || !strings.HasPrefix(string(ce.Code), "SPEC_") || !strings.Contains(ce.Message, "unchanged") {
			t.Errorf("%s: %v", name, err)
		}
	}
	snap, err := e.svc.Snapshot(context.Background(), v.InstanceID)
	if err != nil || snap.SpecVersion != 2 {
		t.Fatalf("a refused patch changed the panel: %+v %v", snap, err)
	}

	host := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	if _, err := e.call(t, agentP, panel.ToolPatch, map[string]any{"instanceId": host.InstanceID, "patch": []any{
		map[string]any{"op": "replace", "path": "/nodes/body1/props/title", "value": "Mine"},
	}}); switchboard.CodeOf(err) != switchboard.CodeForbidden {
		t.Fatalf("patching a host panel: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := do[panel.DescribeResult](t, e, agentP, panel.ToolDescribe, map[string]any{"panel": "project.settings"})
	if len(d.Catalog) != len(panelspec.NewCatalog().Types()) || len(d.Examples) == 0 || d.Panel == nil || d.Panel.Spec == nil || len(d.Adapters) != 1 {
		t.Fatalf("describe: %d types, %d examples, panel %v, adapters %v", len(d.Catalog), len(d.Examples), d.Panel != nil, d.Adapters)
	}
	// Every example it serves validates with the service's catalog.
	for _, ex := range d.Examples {
		if _, issues := panelspec.Validate(ex.Spec, &panelspec.Options{Catalog: e.svc.Catalog()}); panelspec.HasErrors(issues) {
			t.Errorf("example %s: %v", ex.Name, issues)
		}
	}
	d = do[panel.DescribeResult](t, e, agentP, panel.ToolDescribe, map[string]any{"types": []string{"button"}, "noExamples": true})
	if len(d.Catalog) != 1 || !strings.Contains(strings.ReplaceAll(string(d.Catalog[0].Props), " ", ""), `"x-ref":"action"`) || d.Examples != nil {
		t.Fatalf("describe button: %+v", d)
	}
	if _, err := e.call(t, agentP, panel.ToolDescribe, map[string]any{"types": []string{"marquee"}}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("unknown type: %v", err)
	}
}

func TestSessionResolution(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if _, err := e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)}); switchboard.CodeOf(err) != switchboard.CodeToolUnavailable {
		t.Fatalf("no tab: %v", err)
	}
	a, _ := e.tab(t)
	b, connB := e.tab(t)
	_, err := e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)})
	if ce := switchboard.AsError(err); ce == nil || ce.Code != switchboard.CodeInvalidInput || !strings.Contains(string(mustJSON(ce.Details)), a) {
		t.Fatalf("two tabs: %v", err)
	}
	v := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec), "sessionId": b})
	if v.SessionID != b {
		t.Fatalf("opened in %s", v.SessionID)
	}
	event[panel.Snapshot](t, connB, panel.EventOpen)
	if _, err := e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec), "sessionId": "ses_nope"}); switchboard.CodeOf(err) != switchboard.CodeSessionGone {
		t.Fatalf("unknown tab: %v", err)
	}

	// A tab that closes takes its panels with it.
	if err := e.sess.Close(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if list := do[panel.ListResult](t, e, agentP, panel.ToolList, map[string]any{"sessionId": b}); len(list.Instances) != 0 {
		t.Fatalf("the closed tab's panels are still listed: %+v", list.Instances)
	}
	if _, err := e.svc.Snapshot(context.Background(), v.InstanceID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("the closed tab's instance: %v", err)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// An agent whose scope denies an adapter's data tool cannot read that data
// through a panel either (adapter reads do not pass the broker).
func TestAdapterSourceHonoursScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.tab(t)
	scoped := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "ui-only", Allow: []string{"panel.*"}, Deny: []string{"data.*"}}
	inv, err := e.call(t, scoped, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "borealis"}})
	if err == nil && strings.Contains(string(inv.Result), "Borealis") {
		t.Fatalf("the panel leaked data the agent may not read: %s", inv.Result)
	}
	v := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	if v.Values["project"] == nil {
		t.Fatal("an unscoped agent no longer reads the panel's data")
	}
}
