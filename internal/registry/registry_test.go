package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

func openStore(t *testing.T) switchboard.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newRegistry(t *testing.T, st switchboard.Store, opts *registry.Options) *registry.Registry {
	t.Helper()
	r, err := registry.New(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tool(name, desc string, class switchboard.Class) switchboard.Tool {
	return switchboard.Tool{Name: name, Description: desc, Class: class,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","description":"Task title"}}}`)}
}

func TestRegisterGetListDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, openStore(t), nil)
	out, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{
		tool("tasks.create", "Create a task. It lands in the inbox.", switchboard.ClassMutate),
		tool("tasks.list", "List tasks.", switchboard.ClassRead),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := out[0]
	if got.Surface != switchboard.SurfaceAPI || got.Approval != switchboard.ApprovalNone || got.CostClass != switchboard.CostCheap {
		t.Errorf("defaults not filled: %+v", got)
	}
	if got.Summary != "Create a task." {
		t.Errorf("summary = %q", got.Summary)
	}
	if got.Origin == nil || got.Origin.Source != switchboard.SourceHost || got.Version == 0 {
		t.Errorf("origin/version not set: %+v %d", got.Origin, got.Version)
	}
	list, err := r.List(ctx, "")
	if err != nil || len(list) != 2 || list[0].Name != "tasks.create" {
		t.Fatalf("list = %v, %v", list, err)
	}
	if _, err := r.Get(ctx, "tasks.nope"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Errorf("get unknown: %v", err)
	}
	// Replace bumps the version.
	again, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("tasks.list", "List all tasks.", switchboard.ClassRead)})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Version <= out[1].Version || again[0].Description != "List all tasks." {
		t.Errorf("replace: %+v", again[0])
	}
}

func TestMergeRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, openStore(t), nil)
	must := func(src switchboard.Source, desc string) {
		t.Helper()
		if _, err := r.Register(ctx, src, []switchboard.Tool{tool("deck.export", desc, switchboard.ClassRead)}); err != nil {
			t.Fatal(err)
		}
	}
	must(switchboard.SourcePlugin, "Plugin export.")
	must(switchboard.SourceCore, "Core export.")
	must(switchboard.SourceHost, "Host export.")
	got, _ := r.Get(ctx, "deck.export")
	if got.Description != "Plugin export." || got.Origin.Source != switchboard.SourcePlugin {
		t.Fatalf("plugin should win regardless of order: %+v", got.Origin)
	}
	if want := []switchboard.Source{switchboard.SourceCore, switchboard.SourceHost}; strings.Join(sources(got.Origin.Overrides), ",") != strings.Join(sources(want), ",") {
		t.Errorf("overrides = %v, want %v", got.Origin.Overrides, want)
	}
	// Removing the winner shows the next one.
	if err := r.Unregister(ctx, "", "deck.export"); err != nil {
		t.Fatal(err)
	}
	got, _ = r.Get(ctx, "deck.export")
	if got.Origin.Source != switchboard.SourceHost || got.Description != "Host export." {
		t.Errorf("after unregister: %+v", got)
	}
	if err := r.Unregister(ctx, switchboard.SourcePlugin, "deck.export"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Errorf("unregister missing source: %v", err)
	}
	if _, err := r.Register(ctx, "vendor", []switchboard.Tool{tool("a.b", "x", switchboard.ClassRead)}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("unknown source: %v", err)
	}
}

func sources(ss []switchboard.Source) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func TestValidationAtTheDoor(t *testing.T) {
	t.Parallel()
	ok := func() switchboard.Tool { return tool("tasks.create", "Create a task.", switchboard.ClassMutate) }
	cases := []struct {
		name string
		edit func(*switchboard.Tool)
		want switchboard.Code
	}{
		{"single segment", func(t *switchboard.Tool) { t.Name = "create" }, switchboard.CodeInvalidInput},
		{"uppercase", func(t *switchboard.Tool) { t.Name = "Tasks.create" }, switchboard.CodeInvalidInput},
		{"empty segment", func(t *switchboard.Tool) { t.Name = "tasks..create" }, switchboard.CodeInvalidInput},
		{"dash", func(t *switchboard.Tool) { t.Name = "tasks.create-now" }, switchboard.CodeInvalidInput},
		{"too long", func(t *switchboard.Tool) { t.Name = "a." + strings.Repeat("b", 200) }, switchboard.CodeInvalidInput},
		{"empty description", func(t *switchboard.Tool) { t.Description = "  " }, switchboard.CodeInvalidInput},
		{"huge description", func(t *switchboard.Tool) { t.Description = strings.Repeat("x", registry.MaxDescriptionLen+1) }, switchboard.CodeInvalidInput},
		{"two-line summary", func(t *switchboard.Tool) { t.Summary = "a\nb" }, switchboard.CodeInvalidInput},
		{"no class", func(t *switchboard.Tool) { t.Class = "" }, switchboard.CodeInvalidInput},
		{"bad class", func(t *switchboard.Tool) { t.Class = "write" }, switchboard.CodeInvalidInput},
		{"bad surface", func(t *switchboard.Tool) { t.Surface = "desktop" }, switchboard.CodeInvalidInput},
		{"schema not compiling", func(t *switchboard.Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"strin"}}}`)
		}, switchboard.CodeSchemaViolation},
		{"schema not object", func(t *switchboard.Tool) { t.InputSchema = json.RawMessage(`{"type":"string"}`) }, switchboard.CodeSchemaViolation},
		{"output schema bad", func(t *switchboard.Tool) { t.OutputSchema = json.RawMessage(`{"type":7}`) }, switchboard.CodeSchemaViolation},
		{"browser mutate", func(t *switchboard.Tool) { t.Surface, t.ViewStateOnly = switchboard.SurfaceBrowser, true }, switchboard.CodeExemptionViolation},
		{"browser not view-only", func(t *switchboard.Tool) { t.Surface, t.Class = switchboard.SurfaceBrowser, switchboard.ClassUI }, switchboard.CodeExemptionViolation},
		{"browser job", func(t *switchboard.Tool) {
			t.Surface, t.Class, t.ViewStateOnly = switchboard.SurfaceBrowser, switchboard.ClassJob, true
		}, switchboard.CodeExemptionViolation},
		{"binding url relative", func(t *switchboard.Tool) {
			t.Binding = &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: "/tasks"}}
		}, switchboard.CodeInvalidInput},
		{"ui title with a bidi override", func(t *switchboard.Tool) { t.UI = &switchboard.UIMeta{Title: "Send \u202einvoice"} }, switchboard.CodeInvalidInput},
		{"ui title two lines", func(t *switchboard.Tool) { t.UI = &switchboard.UIMeta{Title: "a\nb"} }, switchboard.CodeInvalidInput},
		{"ui details not an object", func(t *switchboard.Tool) { t.UI = &switchboard.UIMeta{Details: json.RawMessage(`[1]`)} }, switchboard.CodeInvalidInput},
		{"ui details too big", func(t *switchboard.Tool) {
			t.UI = &switchboard.UIMeta{Details: json.RawMessage(`{"x":"` + strings.Repeat("y", registry.MaxUIDetailsBytes) + `"}`)}
		}, switchboard.CodePayloadTooLarge},
		{"binding method", func(t *switchboard.Tool) {
			t.Binding = &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "TRACE", URL: "http://x/"}}
		}, switchboard.CodeInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tl := ok()
			tc.edit(&tl)
			if err := registry.Check(&tl); switchboard.CodeOf(err) != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
	good := ok()
	good.UI = &switchboard.UIMeta{Title: "Create a task", Details: json.RawMessage(`{"fields":["title"]}`)}
	if err := registry.Check(&good); err != nil {
		t.Fatalf("valid tool rejected: %v", err)
	}
	view := switchboard.Tool{Name: "nav.goto", Description: "Go to a page.", Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, ViewStateOnly: true}
	if err := registry.Check(&view); err != nil || string(view.InputSchema) != `{"type":"object"}` {
		t.Errorf("browser tool: %v, schema %s", err, view.InputSchema)
	}
}

func TestBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	r := newRegistry(t, st, nil)
	bad := tool("tasks.bad", "Bad.", switchboard.ClassRead)
	bad.InputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"minimum":"zero"}}}`)
	_, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("tasks.ok", "Fine.", switchboard.ClassRead), bad, tool("BAD", "", "")})
	e := switchboard.AsError(err)
	if e == nil || e.Code != switchboard.CodeSchemaViolation {
		t.Fatalf("got %v", err)
	}
	issues := e.Details.(map[string]any)["issues"]
	if n := len(issuesOf(issues)); n != 2 {
		t.Errorf("want both problems reported, got %d: %v", n, issues)
	}
	if all, _ := st.ToolList(ctx); len(all) != 0 {
		t.Errorf("half-written batch: %d tools stored", len(all))
	}
	_, err = r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("a.b", "x", switchboard.ClassRead), tool("a.b", "y", switchboard.ClassRead)})
	if switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Errorf("duplicate names: %v", err)
	}
	if _, err := r.Register(ctx, switchboard.SourceHost, nil); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("empty batch: %v", err)
	}
}

func issuesOf(v any) []any {
	b, _ := json.Marshal(v)
	var out []any
	_ = json.Unmarshal(b, &out)
	return out
}

func TestSearchAndSubscribe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, openStore(t), nil)
	ch := make(chan registry.Change, 4)
	cancel := r.Subscribe(ch)
	defer cancel()
	if _, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{
		tool("tasks.create", "Create a task in a project.", switchboard.ClassMutate),
		tool("media.upload", "Upload a photo to the media library.", switchboard.ClassMutate),
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-ch:
		if len(c.Names) != 2 {
			t.Errorf("change = %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change notification")
	}
	res, err := r.Search(ctx, switchboard.SearchQuery{Query: "upload photos"})
	if err != nil || len(res.Items) == 0 || res.Items[0].Name != "media.upload" {
		t.Fatalf("search = %+v, %v", res, err)
	}
	scoped := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "a", Deny: []string{"media.*"}})
	res, _ = r.Search(scoped, switchboard.SearchQuery{Query: "upload photos"})
	for _, h := range res.Items {
		if h.Name == "media.upload" {
			t.Error("search showed an agent a tool outside its scope")
		}
	}
}

// TestOtherReplicaWritesAreSeen runs two registries on one store, as two
// replicas would, and checks that one sees the other's writes once its
// refresh interval has passed.
func TestOtherReplicaWritesAreSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	a := newRegistry(t, st, &registry.Options{Now: clock, RefreshInterval: time.Second})
	b := newRegistry(t, st, &registry.Options{Now: clock, RefreshInterval: time.Second})
	if _, err := a.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("tasks.list", "List tasks.", switchboard.ClassRead)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "tasks.list"); err == nil {
		t.Log("b saw the write before its refresh interval (allowed, not required)")
	}
	now = now.Add(2 * time.Second)
	if _, err := b.Get(ctx, "tasks.list"); err != nil {
		t.Fatalf("b did not pick up a's write: %v", err)
	}
	res, _ := b.Search(ctx, switchboard.SearchQuery{Query: "list tasks"})
	if len(res.Items) != 1 {
		t.Errorf("b's index is stale: %+v", res)
	}
	// b's own write on top of a's: b must not lose a's tool.
	if _, err := b.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("tasks.create", "Create.", switchboard.ClassMutate)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if l, _ := a.List(ctx, ""); len(l) != 2 {
		t.Errorf("a sees %d tools, want 2", len(l))
	}
}
