package mcpserver

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/registry"
)

func TestNameMapping(t *testing.T) {
	t.Parallel()
	var n names
	n.alias("conformance.test_simple_text", "test_simple_text")
	for _, tc := range []struct{ catalog, mcp string }{
		{"tasks.create", "tasks-create"},
		{"media.album.rename", "media-album-rename"},
		{"v2.users__all.get_1", "v2-users__all-get_1"},
		{"conformance.test_simple_text", "test_simple_text"},
	} {
		if got := n.mcpName(tc.catalog); got != tc.mcp {
			t.Errorf("mcpName(%q) = %q, want %q", tc.catalog, got, tc.mcp)
		}
		if got, ok := n.catalogName(tc.mcp); !ok || got != tc.catalog {
			t.Errorf("catalogName(%q) = %q, %v, want %q", tc.mcp, got, ok, tc.catalog)
		}
	}
	// Lenient on input: the dotted form is accepted too.
	if got, ok := n.catalogName("tasks.create"); !ok || got != "tasks.create" {
		t.Errorf("dotted input: %q %v", got, ok)
	}
	for _, bad := range []string{"", "tasks", "Tasks-create", "tasks--create", "-tasks", "switchboard_search",
		"conformance-test_simple_text", // an aliased tool answers only to its alias
		"tasks-create!"} {
		if got, ok := n.catalogName(bad); ok {
			t.Errorf("catalogName(%q) = %q, want no catalog name", bad, got)
		}
	}
	for _, meta := range []string{toolSearch, toolDescribe, toolCall, changedSentinel} {
		if _, ok := n.catalogName(meta); ok {
			t.Errorf("meta tool %s maps to a catalog name", meta)
		}
	}
}

// FuzzNameMapping proves the mapping reversible: every valid catalog name
// maps to a name every common client accepts and back to itself, and every
// MCP name that maps to a catalog name is that name's one MCP form (or its
// dotted spelling).
func FuzzNameMapping(f *testing.F) {
	for _, s := range []string{"tasks.create", "a.b", "media.album.rename", "x_1.y__2", "tasks-create", "a..b", "A.b", "a.b-c"} {
		f.Add(s)
	}
	var n names
	f.Fuzz(func(t *testing.T, s string) {
		if registry.ValidName(s) {
			m := n.mcpName(s)
			if !validMCPName(m) {
				t.Fatalf("mcpName(%q) = %q is not a portable MCP name", s, m)
			}
			if back, ok := n.catalogName(m); !ok || back != s {
				t.Fatalf("catalogName(mcpName(%q)) = %q, %v", s, back, ok)
			}
		}
		if c, ok := n.catalogName(s); ok {
			if !registry.ValidName(c) {
				t.Fatalf("catalogName(%q) = %q, not a catalog name", s, c)
			}
			if m := n.mcpName(c); m != s && c != s {
				t.Fatalf("%q → %q → %q: not the same MCP name", s, c, m)
			}
		}
	})
}

// Options.Aliases refuses names a client could not call or that would
// shadow a meta tool or a mapped catalog name.
func TestAliasesOption(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	for _, bad := range []string{"switchboard_search", "tasks-list", "has space", ""} {
		if _, err := New(e.ctx, e.reg, e.br, &Options{Aliases: map[string]string{"tasks.list": bad}}); err == nil {
			t.Errorf("alias %q accepted", bad)
		}
	}
	s, err := New(e.ctx, e.reg, e.br, &Options{Aliases: map[string]string{"tasks.list": "list_tasks"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, ok := s.names.catalogName("list_tasks"); !ok || got != "tasks.list" || s.names.mcpName("tasks.list") != "list_tasks" {
		t.Errorf("alias not applied: %q %v", got, ok)
	}
}
