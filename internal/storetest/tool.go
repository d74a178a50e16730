package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func tool(name string) switchboard.Tool {
	return switchboard.Tool{
		Name:        name,
		Description: "does " + name,
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Surface:     switchboard.SurfaceAPI,
		Class:       switchboard.ClassRead,
	}
}

type decl struct {
	Name    string
	Source  switchboard.Source
	Version int64
	Desc    string
}

// decls summarises a listing and checks what every stored tool must carry.
func decls(t *testing.T, s switchboard.Store) []decl {
	t.Helper()
	tools, err := s.ToolList(context.Background())
	must(t, err)
	if tools == nil {
		t.Fatal("ToolList returned nil, want an empty slice")
	}
	out := []decl{}
	for _, tl := range tools {
		if tl.Origin == nil {
			t.Fatalf("tool %q has no origin", tl.Name)
		}
		if len(tl.Origin.Overrides) != 0 {
			t.Fatalf("tool %q: store set overrides %v; merging is the registry's job", tl.Name, tl.Origin.Overrides)
		}
		out = append(out, decl{tl.Name, tl.Origin.Source, tl.Version, tl.Description})
	}
	return out
}

func testToolPutList(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	if d := decls(t, s); len(d) != 0 {
		t.Fatalf("fresh store lists %v", d)
	}
	rev0 := revision(t, s)
	must(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool("b"), tool("a")}))
	rev1 := revision(t, s)
	if rev1 != rev0+1 {
		t.Fatalf("a batch of two moved the revision %d -> %d, want one step", rev0, rev1)
	}
	must(t, s.ToolPut(ctx, switchboard.SourceHost, []switchboard.Tool{tool("a")}))
	rev2 := revision(t, s)
	if rev2 != rev1+1 {
		t.Fatalf("revision %d -> %d, want one step", rev1, rev2)
	}
	want := []decl{
		{"a", switchboard.SourceCore, rev1, "does a"},
		{"a", switchboard.SourceHost, rev2, "does a"},
		{"b", switchboard.SourceCore, rev1, "does b"},
	}
	if diff := cmp.Diff(want, decls(t, s)); diff != "" {
		t.Fatalf("ToolList (-want +got):\n%s", diff)
	}
}

func testToolUpsert(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool("a"), tool("b")}))
	changed := tool("a")
	changed.Description = "changed"
	must(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{changed}))
	rev := revision(t, s)
	want := []decl{
		{"a", switchboard.SourceCore, rev, "changed"},
		{"b", switchboard.SourceCore, rev - 1, "does b"},
	}
	if diff := cmp.Diff(want, decls(t, s)); diff != "" {
		t.Fatalf("after upsert (-want +got):\n%s", diff)
	}
}

// testToolBatchAtomic: a batch whose later element fails leaves nothing,
// including the changes its earlier elements made to existing rows.
func testToolBatchAtomic(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool("keep")}))
	before, rev := decls(t, s), revision(t, s)

	changed := tool("keep")
	changed.Description = "must not stick"
	badSchema := tool("zz")
	badSchema.InputSchema = json.RawMessage(`{"type":`)
	for _, c := range []struct {
		name  string
		batch []switchboard.Tool
		code  switchboard.Code
	}{
		{"invalid schema last", []switchboard.Tool{changed, tool("new"), badSchema}, switchboard.CodeInvalidInput},
		{"duplicate name", []switchboard.Tool{changed, tool("x"), tool("x")}, switchboard.CodeConflict},
		{"empty name", []switchboard.Tool{changed, {InputSchema: json.RawMessage(`{}`)}}, switchboard.CodeInvalidInput},
	} {
		wantCode(t, s.ToolPut(ctx, switchboard.SourceCore, c.batch), c.code)
		if diff := cmp.Diff(before, decls(t, s)); diff != "" {
			t.Fatalf("%s: failed batch left writes (-before +after):\n%s", c.name, diff)
		}
		if got := revision(t, s); got != rev {
			t.Fatalf("%s: failed batch moved the revision %d -> %d", c.name, rev, got)
		}
	}
}

func testToolPutRejects(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	wantCode(t, s.ToolPut(ctx, "bogus", []switchboard.Tool{tool("a")}), switchboard.CodeInvalidInput)
	rev := revision(t, s)
	// An empty batch is not a write.
	must(t, s.ToolPut(ctx, switchboard.SourceCore, nil))
	if got := revision(t, s); got != rev {
		t.Fatalf("empty batch moved the revision %d -> %d", rev, got)
	}
	if d := decls(t, s); len(d) != 0 {
		t.Fatalf("rejected puts stored %v", d)
	}
}

func testToolPutKeepsCallerSlice(t *testing.T, s switchboard.Store) {
	batch := []switchboard.Tool{tool("a"), tool("b")}
	want := slices.Clone(batch)
	must(t, s.ToolPut(context.Background(), switchboard.SourceHost, batch))
	if diff := cmp.Diff(want, batch); diff != "" {
		t.Fatalf("ToolPut changed the caller's tools (-before +after):\n%s", diff)
	}
}

func testToolDelete(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool("a"), tool("b")}))
	must(t, s.ToolPut(ctx, switchboard.SourcePlugin, []switchboard.Tool{tool("a")}))
	rev := revision(t, s)
	must(t, s.ToolDelete(ctx, switchboard.SourceCore, "a"))
	if got := revision(t, s); got != rev+1 {
		t.Fatalf("delete moved the revision %d -> %d, want one step", rev, got)
	}
	want := []decl{
		{"a", switchboard.SourcePlugin, rev, "does a"},
		{"b", switchboard.SourceCore, rev - 1, "does b"},
	}
	if diff := cmp.Diff(want, decls(t, s)); diff != "" {
		t.Fatalf("after delete (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		source switchboard.Source
		name   string
	}{{switchboard.SourceCore, "a"}, {switchboard.SourceHost, "b"}, {switchboard.SourceCore, "nope"}} {
		err := s.ToolDelete(ctx, c.source, c.name)
		wantCode(t, err, switchboard.CodeNotFound)
		if !errors.Is(err, switchboard.ErrNotFound) {
			t.Fatalf("delete %s/%s: %v does not match ErrNotFound", c.source, c.name, err)
		}
	}
	if got := revision(t, s); got != rev+1 {
		t.Fatalf("failed deletes moved the revision to %d, want %d", got, rev+1)
	}
}

// testToolOrder: by name bytewise (so "B" < "_x" < "a", whatever the
// database's collation), then by source rank, lowest precedence first.
func testToolOrder(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	puts := []struct {
		source switchboard.Source
		names  []string
	}{
		{switchboard.SourcePlugin, []string{"a", "ab"}},
		{switchboard.SourceSession, []string{"a"}},
		{switchboard.SourceCore, []string{"b", "a", "a.b"}},
		{switchboard.SourceHost, []string{"B", "a"}},
		{switchboard.SourceScoped, []string{"_x", "a", "Ä"}},
	}
	var want []decl
	for _, p := range puts {
		var batch []switchboard.Tool
		for _, n := range p.names {
			batch = append(batch, tool(n))
		}
		must(t, s.ToolPut(ctx, p.source, batch))
		rev := revision(t, s)
		for _, n := range p.names {
			want = append(want, decl{n, p.source, rev, "does " + n})
		}
	}
	slices.SortFunc(want, func(a, b decl) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return a.Source.Rank() - b.Source.Rank()
	})
	if diff := cmp.Diff(want, decls(t, s)); diff != "" {
		t.Fatalf("ToolList order (-want +got):\n%s", diff)
	}
}

// testToolRoundTrip: every descriptor field survives. Schemas keep their key
// order and characters; whitespace may be compacted.
func testToolRoundTrip(t *testing.T, s switchboard.Store) {
	in := switchboard.Tool{
		Name:          "orders.refund",
		Description:   "Refund an order <fully> & \"quickly\".",
		Summary:       "refund",
		InputSchema:   json.RawMessage("{\"type\": \"object\",\n \"properties\": {\"z\": {\"type\": \"string\", \"pattern\": \"^<a&b>$\"}, \"a\": {\"type\": \"integer\"}},\n \"required\": [\"z\"]}"),
		OutputSchema:  json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`),
		Surface:       switchboard.SurfaceAPI,
		Class:         switchboard.ClassMutate,
		Approval:      switchboard.ApprovalHITL,
		CostClass:     switchboard.CostExpensive,
		ViewStateOnly: true,
		Pinned:        true,
		TimeoutMs:     1500,
		UI:            &switchboard.UIMeta{RendererID: "r", DisplayGroup: "orders", Icon: "💸"},
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{
			Method: "POST", URL: "http://127.0.0.1:3000/orders/{id}/refund", TimeoutMs: 900,
			Headers: map[string]switchboard.HeaderValue{"X-Key": {Env: "APP_KEY"}, "X-Lit": {Value: "v"}},
		}},
		MaxConcurrency: 3,
		// Whatever the declarer claims, the store sets these.
		Origin:  &switchboard.Origin{Source: switchboard.SourcePlugin, Overrides: []switchboard.Source{switchboard.SourceCore}},
		Version: 999,
	}
	must(t, s.ToolPut(context.Background(), switchboard.SourceHost, []switchboard.Tool{in}))
	tools, err := s.ToolList(context.Background())
	must(t, err)
	if len(tools) != 1 {
		t.Fatalf("got %d tools, want 1", len(tools))
	}
	want := in
	want.Origin = &switchboard.Origin{Source: switchboard.SourceHost}
	want.Version = revision(t, s)
	want.InputSchema = compact(t, in.InputSchema)
	got := tools[0]
	got.InputSchema = compact(t, got.InputSchema)
	got.OutputSchema = compact(t, got.OutputSchema)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("tool round trip (-want +got):\n%s", diff)
	}
}

// compact removes insignificant whitespace and nothing else (no HTML
// escaping, no key reordering).
func compact(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	must(t, json.Compact(&buf, raw))
	return buf.Bytes()
}
