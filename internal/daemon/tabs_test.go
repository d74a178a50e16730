package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// GET /sessions and GET /sessions/{id}: the admin sees every tab in full,
// an agent token sees the tabs with only the tools (and, with
// workspace.describe_context, the contexts) its scope admits and never the
// tab's user, and a tab's own token sees only itself.
func TestOpenTabsRoutes(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	admin := client.New(e.srv.URL, wsToken, nil)

	alice := e.openSession(t, "alice")
	bob := e.openSession(t, "bob") // opened, never connected
	tab := admin.Tab(client.SessionCredentials{SessionID: alice.SessionID, SessionToken: alice.SessionToken})
	nav := switchboard.Tool{Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}}}`)}
	scroll := switchboard.Tool{Name: "ui.scroll_to", Description: "Scroll an element into view.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
	if _, err := tab.Advertise(ctx, []switchboard.Tool{nav, scroll}); err != nil {
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
	report := `{"contexts": [{"id": "route:/media", "kind": "page", "label": "Media", "attention": "focused", "panels": []}]}`
	if code, c := e.do(t, "PUT", "/api/v1/sessions/"+alice.SessionID+"/context", alice.SessionToken, report, nil); code != 200 {
		t.Fatalf("context report: %d %s", code, c)
	}

	// The admin: every kept tab, in full.
	items, err := admin.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 {
		t.Fatalf("admin lists %d tabs, want alice's only (bob never connected): %+v", len(items), items)
	}
	a := items[0]
	if a.ID != alice.SessionID || a.User != "alice" || a.State != switchboard.TabConnected || !a.Connected ||
		a.CreatedAt.IsZero() || a.LastSeen.IsZero() || !a.ExpiresAt.IsZero() ||
		!slices.Equal(toolNames(a.Tools), []string{"nav.goto", "ui.scroll_to"}) || len(a.Contexts) != 1 || a.Contexts[0].ID != "route:/media" {
		t.Fatalf("admin's view of alice's tab: %+v", a)
	}
	if a.Tools[0].Origin == nil || a.Tools[0].Origin.SessionID != alice.SessionID {
		t.Fatalf("a tab's tool does not name its session: %+v", a.Tools[0])
	}
	if got, err := admin.Session(ctx, alice.SessionID); err != nil || got.ID != a.ID || got.State != switchboard.TabConnected {
		t.Fatalf("show alice: %+v %v", got, err)
	}
	if got, err := admin.Session(ctx, bob.SessionID); err != nil || got.State != switchboard.TabGone || got.Connected || got.User != "bob" {
		t.Fatalf("show bob (open, no tab here): %+v %v", got, err)
	}
	if _, err := admin.Session(ctx, "ses_nope"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("show unknown: %v; want NOT_FOUND", err)
	}
	// The JSON keeps tools and contexts as arrays, never null.
	if raw := rawGet(t, e, "/api/v1/sessions/"+bob.SessionID, wsToken); !strings.Contains(raw, `"tools":[]`) || !strings.Contains(raw, `"contexts":[]`) {
		t.Fatalf("bob's JSON: %s", raw)
	}

	// An agent token: only the tools its scope admits, no user, contexts
	// only with workspace.describe_context.
	for _, tc := range []struct {
		allow    []string
		contexts int
	}{{[]string{"nav.*"}, 0}, {[]string{"nav.*", "workspace.describe_context"}, 1}} {
		tok, err := admin.CreateToken(ctx, client.TokenRequest{Agent: "helper", Allow: tc.allow})
		if err != nil {
			t.Fatal(err)
		}
		agent := client.New(e.srv.URL, tok.Token, nil)
		items, err := agent.Sessions(ctx)
		if err != nil || len(items) != 1 {
			t.Fatalf("agent %v lists %+v %v", tc.allow, items, err)
		}
		got := items[0]
		if got.User != "" || !slices.Equal(toolNames(got.Tools), []string{"nav.goto"}) || len(got.Contexts) != tc.contexts {
			t.Fatalf("agent %v sees %+v", tc.allow, got)
		}
		if one, err := agent.Session(ctx, alice.SessionID); err != nil || len(one.Tools) != 1 || one.User != "" {
			t.Fatalf("agent %v show: %+v %v", tc.allow, one, err)
		}
	}

	// A tab's own token: itself only; another tab is NOT_FOUND, as an
	// unknown one is.
	bobClient := client.New(e.srv.URL, bob.SessionToken, nil)
	if items, err := bobClient.Sessions(ctx); err != nil || len(items) != 1 || items[0].ID != bob.SessionID {
		t.Fatalf("bob's token lists %+v %v; want bob only", items, err)
	}
	if _, err := bobClient.Session(ctx, alice.SessionID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("bob's token shows alice: %v; want NOT_FOUND", err)
	}
	aliceClient := client.New(e.srv.URL, alice.SessionToken, nil)
	if got, err := aliceClient.Session(ctx, alice.SessionID); err != nil || got.User != "alice" || len(got.Tools) != 2 || len(got.Contexts) != 1 {
		t.Fatalf("alice's token shows herself: %+v %v", got, err)
	}
	if code, c := e.do(t, "GET", "/api/v1/sessions", "", nil, nil); code != 401 || c != "UNAUTHORIZED" {
		t.Fatalf("no token: %d %s", code, c)
	}

	// end = DELETE: the tab is closed, its stream ends, it leaves the list.
	if err := admin.CloseSession(ctx, alice.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Next(); err == nil {
		t.Fatal("the stream of a closed session goes on")
	}
	if got, err := admin.Session(ctx, alice.SessionID); err != nil || got.State != switchboard.TabClosed || got.ClosedAt.IsZero() {
		t.Fatalf("show after end: %+v %v", got, err)
	}
	if items, err := admin.Sessions(ctx); err != nil || len(items) != 0 {
		t.Fatalf("list after end: %+v %v", items, err)
	}
	if err := admin.CloseSession(ctx, "ses_nope"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("end unknown: %v; want NOT_FOUND", err)
	}
}

func toolNames(ts []switchboard.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func rawGet(t *testing.T, e *wsEnv, path, tok string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
