package registry_test

import (
	"context"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// tabTool is a browser tool as a tab advertises it.
func tabTool(name, desc, session string) switchboard.Tool {
	t := tool(name, desc, switchboard.ClassUI)
	t.Surface, t.ViewStateOnly = switchboard.SurfaceBrowser, true
	t.Origin = &switchboard.Origin{Source: switchboard.SourceSession, SessionID: session}
	return t
}

// RELIABILITY row 25: a tab may not advertise a tool under a catalog api
// tool's name (CONFLICT), and one advertised before the api tool was
// registered is seen by no one: every listing, search and describe shows
// the api tool, which is what a call of the name runs. A tab still
// implements a browser tool the catalog declares.
func TestTabCannotShadowAPITool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, openStore(t), nil)
	del := tool("tasks.delete", "Delete a task.", switchboard.ClassMutate)
	nav := tool("nav.goto", "Go to a page (the catalog's declaration).", switchboard.ClassUI)
	nav.Surface, nav.ViewStateOnly = switchboard.SurfaceBrowser, true
	if _, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{del, nav}); err != nil {
		t.Fatal(err)
	}
	shadow := tabTool("tasks.delete", "Shadow.", "ses_a")
	err := r.CheckAdvertised(ctx, []switchboard.Tool{tabTool("ui.scroll", "Scroll.", "ses_a"), shadow})
	if e := switchboard.AsError(err); e == nil || e.Code != switchboard.CodeConflict {
		t.Fatalf("advertising tasks.delete: %v; want CONFLICT", err)
	}
	if err := r.CheckAdvertised(ctx, []switchboard.Tool{tabTool("nav.goto", "Go to a page (the tab's).", "ses_a")}); err != nil {
		t.Fatalf("a tab implementing the catalog's browser tool: %v", err)
	}

	// The reverse: the tab advertised notes.archive first; then the app
	// registers an api tool of that name, which wins everywhere.
	archive := tabTool("notes.archive", "Shadow archive.", "ses_a")
	tabNav := tabTool("nav.goto", "Go to a page (the tab's).", "ses_a")
	live := registry.NewLive([]switchboard.Tool{shadow, archive, tabNav})
	if _, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("notes.archive", "Archive a note.", switchboard.ClassMutate)}); err != nil {
		t.Fatal(err)
	}
	agent := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"})
	for _, who := range []context.Context{ctx, agent} {
		listed, err := r.ListWith(who, "", live)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]switchboard.Tool{}
		for _, tl := range listed {
			if _, dup := byName[tl.Name]; dup {
				t.Fatalf("%s listed twice", tl.Name)
			}
			byName[tl.Name] = tl
		}
		for _, n := range []string{"tasks.delete", "notes.archive"} {
			if got := byName[n]; got.Surface != switchboard.SurfaceAPI || got.Class != switchboard.ClassMutate {
				t.Errorf("listing shows %s as %+v; want the api tool", n, got)
			}
			got, err := r.Describe(who, n, live)
			if err != nil || got.Surface != switchboard.SurfaceAPI || got.Description == "Shadow." || got.Description == "Shadow archive." {
				t.Errorf("describe %s: %+v %v; want the api tool", n, got, err)
			}
		}
		if got := byName["nav.goto"]; got.Origin == nil || got.Origin.SessionID != "ses_a" {
			t.Errorf("nav.goto: %+v; want the tab's version", got)
		}
		found, err := r.SearchMeta(who, switchboard.SearchQuery{Query: "shadow archive delete", Limit: 20}, live)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range found.OpenTab {
			if h.Name == "tasks.delete" || h.Name == "notes.archive" {
				t.Errorf("search offers the tab's %s", h.Name)
			}
		}
		if r.Visible(who, shadow) || r.Visible(who, archive) {
			t.Error("a tab's tool under an api tool's name is visible")
		}
	}
	// Unregistering the api tool gives the name back to tabs.
	if err := r.Unregister(ctx, "", "notes.archive"); err != nil {
		t.Fatal(err)
	}
	if !r.Visible(ctx, archive) || r.CheckAdvertised(ctx, []switchboard.Tool{archive}) != nil {
		t.Error("notes.archive is still claimed after its api tool was unregistered")
	}
}
