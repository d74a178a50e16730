package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// The catalog routes (list, describe, search) include the open tabs'
// browser tools, each naming its tab, and drop them when the tab closes.
func TestCatalogRoutesIncludeOpenTabs(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{})
	ctx := context.Background()
	cred := br.open(t)
	tab := br.admin.Tab(cred)
	stop := serveTab(t, tab)
	defer stop()
	for !br.sess.Connected(cred.SessionID) {
		time.Sleep(time.Millisecond) // the stream attaches on serveTab's goroutine
	}

	m, err := br.admin.ListTools(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var listed *switchboard.Tool
	for i := range m.Tools {
		if m.Tools[i].Name == "nav.goto" {
			listed = &m.Tools[i]
		}
	}
	if listed == nil || listed.Origin == nil || listed.Origin.SessionID != cred.SessionID {
		t.Fatalf("GET /tools lists nav.goto as %+v; want it with origin.sessionId %s", listed, cred.SessionID)
	}
	got, err := br.admin.GetTool(ctx, "nav.goto")
	if err != nil || got.Origin == nil || got.Origin.SessionID != cred.SessionID {
		t.Fatalf("GET /tools/nav.goto: %+v %v", got, err)
	}
	res, err := br.admin.SearchTools(ctx, switchboard.SearchQuery{Query: "go to a page of the app"})
	if err != nil || len(res.OpenTab) != 1 || res.OpenTab[0].Name != "nav.goto" || res.OpenTab[0].SessionID != cred.SessionID {
		t.Fatalf("search: %+v %v; want nav.goto under openTab with its session", res, err)
	}
	if res, err := br.admin.SearchTools(ctx, switchboard.SearchQuery{Query: "go to a page", Surface: switchboard.SurfaceAPI}); err != nil || len(res.OpenTab) != 0 {
		t.Fatalf("an api-only search lists open tabs: %+v %v", res, err)
	}

	if err := tab.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m, err = br.admin.ListTools(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range m.Tools {
		if tl.Name == "nav.goto" {
			t.Fatalf("a closed tab's tool is still listed: %+v", tl)
		}
	}
	if _, err := br.admin.GetTool(ctx, "nav.goto"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("describe after close: %v; want TOOL_NOT_FOUND", err)
	}
}
