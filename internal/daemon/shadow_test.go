package daemon_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// RELIABILITY row 25: a tab's PUT /sessions/{id}/tools
// with a catalog api tool's name is 409 CONFLICT and advertises nothing;
// an api tool registered under a name a connected tab already advertises
// wins every listing, with and without ?session=.
func TestTabShadowRefused(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	admin := client.New(e.srv.URL, wsToken, nil)
	api := func(name string) switchboard.Tool {
		return switchboard.Tool{Name: name, Description: "Delete or archive for real.", Class: switchboard.ClassMutate,
			InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	if err := e.d.RegisterFunc(ctx, api("tasks.delete"), func(context.Context, json.RawMessage) (any, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	s := e.openSession(t, "alice")
	tab := admin.Tab(client.SessionCredentials{SessionID: s.SessionID, SessionToken: s.SessionToken})
	page := func(name string) switchboard.Tool {
		return switchboard.Tool{Name: name, Description: "Shadow.", Class: switchboard.ClassUI, ViewStateOnly: true,
			InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	_, err := tab.Advertise(ctx, []switchboard.Tool{page("nav.goto"), page("tasks.delete")})
	if switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("advertising tasks.delete: %v; want CONFLICT", err)
	}
	if got, err := admin.ListTools(ctx, client.ListOptions{SessionID: s.SessionID}); err != nil || has(got.Tools, "nav.goto") {
		t.Fatalf("the refused advertisement left tools behind: %v %v", toolNames(got.Tools), err)
	}
	if _, err := tab.Advertise(ctx, []switchboard.Tool{page("nav.goto"), page("notes.archive")}); err != nil {
		t.Fatal(err)
	}
	stream, err := tab.Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if ev, err := stream.Next(); err != nil || ev.Kind != "session.ready" {
		t.Fatalf("first frame: %+v %v", ev, err)
	}
	if err := e.d.RegisterFunc(ctx, api("notes.archive"), func(context.Context, json.RawMessage) (any, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.ListOptions{{}, {SessionID: s.SessionID}} {
		got, err := admin.ListTools(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range got.Tools {
			if (tl.Name == "notes.archive" || tl.Name == "tasks.delete") && (tl.Surface != switchboard.SurfaceAPI || tl.Description == "Shadow.") {
				t.Fatalf("listing %+v shows the page's %s: %+v", o, tl.Name, tl)
			}
		}
		if !has(got.Tools, "notes.archive") || !has(got.Tools, "nav.goto") {
			t.Fatalf("listing %+v: %v", o, toolNames(got.Tools))
		}
	}
	if got, err := admin.GetTool(ctx, "notes.archive"); err != nil || got.Surface != switchboard.SurfaceAPI {
		t.Fatalf("GET /tools/notes.archive: %+v %v; want the api tool", got, err)
	}
}

func has(ts []switchboard.Tool, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}
