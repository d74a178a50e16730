package panel_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

var update = flag.Bool("update", false, "rewrite testdata/seed/*.golden.json")

// seedSpec is the seed documentation's envelope as written: a source ref
// with params, beside a ref that names a data adapter.
const seedSpec = `{"v": 1, "origin": "host", "root": "body",
 "sources": {
  "seo": {"source": "site.seo", "params": {"pageId": "$scope.entityId"}},
  "project": {"source": "projects", "params": {"where": {"id": "$scope.projectId"}}, "key": "id"}
 },
 "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Page SEO"}, "children": ["seo", "form"]},
  "seo": {"type": "table", "props": {"source": "seo", "columns": [{"key": "title", "label": "Title"}, {"key": "score", "label": "Score", "kind": "number"}]}},
  "form": {"type": "field-form", "props": {"bind": "project", "submit": "save", "fields": [
    {"path": "name", "label": "Name", "kind": "text", "required": true},
    {"path": "budget", "label": "Budget", "kind": "number", "min": 0}]}}
 },
 "actions": {"save": {"kind": "mutate", "source": "project", "op": "update"}}}`

// TestSeedShapes pins the seed's documented envelope and tool shapes:
// the {source, params} form loads through a read tool and an adapter, and
// list, fill, compose and run_action answer with the seed's members.
func TestSeedShapes(t *testing.T) {
	t.Parallel()
	g := newGate()
	// A fixed clock: the fill's lease is part of the golden answer.
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	e := newEnvWith(t, g, func(o *panel.Options) { o.Now = func() time.Time { return at } })
	e.br.Handle("site.seo", func(_ context.Context, in json.RawMessage) (any, error) {
		var q struct{ PageID string }
		_ = json.Unmarshal(in, &q)
		return []map[string]any{{"title": "SEO of " + q.PageID, "score": 87}}, nil
	})
	if _, err := e.reg.Register(context.Background(), switchboard.SourceCore, []switchboard.Tool{{Name: "site.seo", Description: "SEO facts of a page.",
		InputSchema: json.RawMessage(`{"type": "object"}`), Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead, Binding: &switchboard.Binding{Go: true}}}); err != nil {
		t.Fatal(err)
	}
	spec, issues := panelspec.Validate([]byte(seedSpec), nil)
	if spec == nil {
		t.Fatalf("the seed's envelope is refused: %v", issues)
	}
	if err := e.svc.Register(panel.Def{ID: "page.seo", Title: "Page SEO", Description: "SEO of one page and its project.", Scope: "one page",
		ContextKinds: []string{"page"}, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	sid, conn := e.tab(t)

	// Opened with the seed's scope: $scope.entityId reaches the tool, and
	// $scope.projectId the adapter query.
	opened := do[map[string]any](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "page.seo", "scope": map[string]any{"entityId": "home", "projectId": "apollo"}})
	sn := event[panel.Snapshot](t, conn, panel.EventOpen)
	if !strings.Contains(string(sn.Data["seo"]), "SEO of home") || !strings.Contains(string(sn.Data["project"]), `"Apollo"`) || len(sn.Errors) > 0 {
		t.Fatalf("seed sources loaded %s, errors %v", sn.Data, sn.Errors)
	}
	golden(t, "open", opened)

	list := do[map[string]any](t, e, agentP, panel.ToolList, map[string]any{"sessionId": sid})
	var entry map[string]any
	for _, p := range list["panels"].([]any) {
		if p.(map[string]any)["id"] == "page.seo" {
			entry = p.(map[string]any)
		}
	}
	for _, k := range []string{"id", "title", "agentDescription", "scope", "contextKinds", "fields", "actions", "openInstances"} {
		if _, ok := entry[k]; !ok {
			t.Errorf("list_panels entry lacks %q: %v", k, entry)
		}
	}
	golden(t, "list_panels_entry", entry)

	// fill_panel → {ok, applied, skippedUserDirty, errors}.
	user := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sid})
	if _, err := e.svc.Edit(user, sn.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"name": json.RawMessage(`"Typed by the user"`)}}); err != nil {
		t.Fatal(err)
	}
	fill := do[map[string]any](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": sn.InstanceID, "values": map[string]any{"name": "X", "budget": 5}})
	golden(t, "fill_panel", fill)
	bad := do[map[string]any](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": sn.InstanceID, "values": map[string]any{"budget": -1}})
	if bad["ok"] != false {
		t.Fatalf("a refused value is ok: %v", bad)
	}

	// run_panel_action: ok | pending_approval | rejected_by_user | error.
	statuses := map[string]any{}
	go func() { g.answer(<-g.requested, nil) }()
	statuses["ok"] = do[map[string]any](t, e, agentP, panel.ToolRunAction, map[string]any{"instanceId": sn.InstanceID, "action": "save"})["status"]
	do[panel.FillResult](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": sn.InstanceID, "values": map[string]any{"budget": 6}})
	go func() { g.answer(<-g.requested, switchboard.Errorf(switchboard.CodeUserDenied, "no")) }()
	statuses["rejected_by_user"] = do[map[string]any](t, e, agentP, panel.ToolRunAction, map[string]any{"instanceId": sn.InstanceID, "action": "save"})["status"]
	ctx, cancel := context.WithCancel(switchboard.WithPrincipal(context.Background(), agentP))
	go func() { id := <-g.requested; cancel(); g.answer(id, nil) }()
	res, err := e.svc.RunAction(ctx, panel.ActionRequest{InstanceID: sn.InstanceID, Action: "save"})
	if err != nil {
		t.Fatal(err)
	}
	statuses["pending_approval"] = res.Status
	for st := (panel.ActionState{}); st.Status != panel.StatusOK || st.InvocationID != res.InvocationID; {
		st = event[panel.Snapshot](t, conn, panel.EventUpdate).Actions["save"]
	}
	if _, err := e.svc.Edit(user, sn.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"name": json.RawMessage(`""`)}}); err != nil {
		t.Fatal(err)
	}
	statuses["error"] = do[map[string]any](t, e, agentP, panel.ToolRunAction, map[string]any{"instanceId": sn.InstanceID, "action": "save"})["status"]
	for want, got := range statuses {
		if got != want {
			t.Errorf("run_panel_action status %v, want %s", got, want)
		}
	}
	if name, _ := e.project(t, "apollo"); name != "Typed by the user" {
		t.Errorf("the seed-form adapter source saved %q through data.projects.update", name)
	}

	// compose_panel → {ok, panelId} | {ok: false, errors}.
	composed := do[map[string]any](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(seedSpec), "sessionId": sid,
		"scope": map[string]any{"entityId": "about", "projectId": "borealis"}})
	if composed["ok"] != true || composed["panelId"] == "" || composed["panelId"] != composed["instanceId"] {
		t.Fatalf("compose_panel: %v", composed)
	}
	golden(t, "compose_panel", composed)
	_, err = e.call(t, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(`{"v": 1, "root": "b", "nodes": {"b": {"type": "panel-body", "props": {"titel": "x"}}}}`), "sessionId": sid})
	ce := switchboard.AsError(err)
	b, _ := json.Marshal(ce.Details)
	var refused map[string]any
	_ = json.Unmarshal(b, &refused)
	golden(t, "compose_panel_refused", map[string]any{"code": ce.Code, "ok": refused["ok"], "errors": refused["errors"]})
}

// golden compares v, with minted ids masked, to testdata/seed/NAME.golden.json.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	var doc any
	_ = json.Unmarshal(b, &doc)
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(mask(doc, ""))
	got := []byte(buf.String())
	file := filepath.Join("testdata", "seed", name+".golden.json")
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", file, d)
	}
}

func mask(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = mask(e, k)
		}
	case []any:
		for i, e := range x {
			x[i] = mask(e, key)
		}
	case string:
		switch key {
		case "instanceId", "panelId", "sessionId", "invocationId", "openInstances":
			return "<id>"
		}
	}
	return v
}

// TestSeedFormFieldsFromRegistry: the seed's envelope, whose form binds the
// site.seo source without fields and whose action names the source by ref,
// registers on a daemon where site.seo's output schema describes its
// records: the registered spec's form carries the fields from that schema
// (so the renderer, panel.list and panel.fill see them) and the action the
// source's key. A tool without a usable schema refuses the panel.
func TestSeedFormFieldsFromRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newGate())
	raw, err := os.ReadFile(filepath.Join("..", "..", "panelspec", "testdata", "seed-envelope.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec panelspec.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	def := panel.Def{ID: "page.seo", Title: "Page SEO", Description: "SEO of one page.", Spec: &spec}
	reg := func(name, out string) {
		t.Helper()
		if _, err := e.reg.Register(context.Background(), switchboard.SourceCore, []switchboard.Tool{{Name: name, Description: "SEO facts of a page.",
			InputSchema: json.RawMessage(`{"type": "object"}`), OutputSchema: json.RawMessage(out),
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead, Binding: &switchboard.Binding{Go: true}}}); err != nil {
			t.Fatal(err)
		}
	}
	reg("site.seo", `{"type": "object"}`)
	if err := e.svc.Register(def); switchboard.AsError(err) == nil || switchboard.AsError(err).Code != switchboard.CodeSpecProps {
		t.Fatalf("a form over a source without a record schema registered: %v", err)
	}
	reg("site.seo", `{"type": "array", "items": {"type": "object", "required": ["title"], "properties": {
		"title": {"type": "string", "title": "Title"}, "noindex": {"type": "boolean", "title": "Hide from search engines"}}}}`)
	if err := e.svc.Register(def); err != nil {
		t.Fatal(err)
	}
	var got *panelspec.Spec
	for _, d := range e.svc.Panels() {
		if d.ID == "page.seo" {
			got = d.Spec
		}
	}
	var props panelspec.FormProps
	if err := json.Unmarshal(got.Nodes["form"].Props, &props); err != nil {
		t.Fatal(err)
	}
	if len(props.Fields) != 2 || props.Fields[0].Path != "noindex" || props.Fields[1].Label != "Title" || !props.Fields[1].Required {
		t.Errorf("fields from site.seo's schema: %+v", props.Fields)
	}
	if s := got.Actions["save"].Source; s != "seo" {
		t.Errorf("action source %q, want the key seo", s)
	}
}
