package manifest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/manifest"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

func tool(name string) string {
	return "  - name: " + name + "\n    description: Tool " + name + ".\n    class: read\n"
}

func doc(names ...string) string {
	s := "tools:\n"
	for _, n := range names {
		s += tool(n)
	}
	return s
}

// write replaces the file the way editors do: a temporary file renamed
// over the original.
func write(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, reg *registry.Registry) []string {
	t.Helper()
	tools, err := reg.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

func TestWatcherReloads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A tool registered by someone else must survive the file's edits.
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{Name: "other.tool", Description: "Not from the file.", Class: switchboard.ClassRead}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tools.yaml")
	write(t, path, doc("tasks.list", "tasks.create"))

	reloads := make(chan manifest.Reload, 8)
	w := manifest.NewWatcher(path, reg, &manifest.WatchOptions{Debounce: 10 * time.Millisecond, OnReload: func(r manifest.Reload) { reloads <- r }})
	if _, err := w.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(t, reg); !slices.Equal(got, []string{"other.tool", "tasks.create", "tasks.list"}) {
		t.Fatalf("after load: %v", got)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	write(t, path, doc("tasks.list", "tasks.done"))
	r := <-reloads
	if r.Err != nil || !slices.Equal(r.Removed, []string{"tasks.create"}) {
		t.Fatalf("reload: %+v", r)
	}
	if got := names(t, reg); !slices.Equal(got, []string{"other.tool", "tasks.done", "tasks.list"}) {
		t.Fatalf("after edit: %v", got)
	}

	// A syntax error is reported and changes nothing.
	write(t, path, "tools:\n  - name: [unclosed\n")
	if r = <-reloads; r.Err == nil || switchboard.CodeOf(r.Err) != switchboard.CodeInvalidInput || !strings.Contains(r.Err.Error(), path) {
		t.Fatalf("syntax error: %+v", r)
	}
	// The same bad content again, and writes to other files in the
	// directory (a log beside the manifest), report nothing new: the next
	// reload seen is the next real change.
	write(t, path, "tools:\n  - name: [unclosed\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "daemon.log"), []byte("error: manifest not reloaded\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// So is a valid document with an invalid tool (all or nothing).
	write(t, path, doc("tasks.list", "Bad Name"))
	if r = <-reloads; r.Err == nil {
		t.Fatalf("invalid tool accepted: %+v", r)
	}
	if got := names(t, reg); !slices.Equal(got, []string{"other.tool", "tasks.done", "tasks.list"}) {
		t.Fatalf("a bad edit changed the catalog: %v", got)
	}

	// Fixing the file applies it, removing what the last good version had.
	write(t, path, doc("tasks.list"))
	if r = <-reloads; r.Err != nil || !slices.Equal(r.Removed, []string{"tasks.done"}) {
		t.Fatalf("fix: %+v", r)
	}
	// Deleting the file keeps the catalog.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if r = <-reloads; r.Err == nil {
		t.Fatalf("a deleted file applied: %+v", r)
	}
	if got := names(t, reg); !slices.Equal(got, []string{"other.tool", "tasks.list"}) {
		t.Fatalf("after delete: %v", got)
	}
}

func TestWatcherLoadRefusesABadFile(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tools.json")
	write(t, path, `{"tools": [}`)
	if _, err := manifest.NewWatcher(path, reg, nil).Load(ctx); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("bad JSON at start: %v", err)
	}
	if _, err := manifest.NewWatcher(filepath.Join(t.TempDir(), "missing.yaml"), reg, nil).Load(ctx); err == nil {
		t.Fatal("a missing file loaded")
	}
}
