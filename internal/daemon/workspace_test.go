package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/workspace"
	"github.com/switchboardhq/switchboard/sqlite"
)

const wsToken = "workspace-daemon-test-token"

type wsEnv struct {
	d   *daemon.Daemon
	srv *httptest.Server
}

func newWorkspaceDaemon(t *testing.T) *wsEnv {
	t.Helper()
	return newWorkspaceDaemonWith(t, daemon.Options{})
}

func newWorkspaceDaemonWith(t *testing.T, opts daemon.Options) *wsEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.AdminToken = st, wsToken
	d, err := daemon.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		d.Close()
		st.Close()
	})
	return &wsEnv{d: d, srv: srv}
}

// do sends method path with bearer tok and a JSON body (string or value)
// and decodes the answer into out (if non-nil); it returns the status and
// the error code of an error answer.
func (e *wsEnv) do(t *testing.T, method, path, tok string, body any, out any) (int, string) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, r)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 400 {
		var env switchboard.ErrorEnvelope
		_ = json.Unmarshal(raw, &env)
		if env.Error == nil {
			t.Fatalf("%s %s: %d without an error envelope: %s", method, path, res.StatusCode, raw)
		}
		return res.StatusCode, string(env.Error.Code)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return res.StatusCode, ""
}

type openedSession struct {
	SessionID    string `json:"sessionId"`
	SessionToken string `json:"sessionToken"`
}

func (e *wsEnv) openSession(t *testing.T, user string) openedSession {
	t.Helper()
	var s openedSession
	if code, c := e.do(t, "POST", "/api/v1/sessions", wsToken, map[string]string{"principal": user}, &s); code != http.StatusCreated {
		t.Fatalf("open session: %d %s", code, c)
	}
	return s
}

func TestContextReportRoute(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	alice, bob := e.openSession(t, "alice"), e.openSession(t, "bob")
	path := "/api/v1/sessions/" + alice.SessionID + "/context"
	good := `{"contexts": [{"id": "route:/projects/apollo", "kind": "page", "label": "Apollo", "attention": "focused",
		"route": "/projects/apollo", "selection": {"panelId": "settings", "text": "Budget"},
		"panels": [{"id": "settings", "type": "form", "title": "Project settings", "dirty": true, "origin": "host"}]}]}`

	var res workspace.ReportResult
	if code, c := e.do(t, "PUT", path, alice.SessionToken, good, &res); code != http.StatusOK || res.Contexts != 1 || res.Panels != 1 {
		t.Fatalf("good report: %d %s %+v", code, c, res)
	}
	for name, tc := range map[string]struct {
		tok, body string
		status    int
		code      string
	}{
		"no token":        {"", good, 401, "UNAUTHORIZED"},
		"admin token":     {wsToken, good, 401, "UNAUTHORIZED"},
		"another tab":     {bob.SessionToken, good, 401, "UNAUTHORIZED"},
		"unknown key":     {alice.SessionToken, `{"contexts": [], "extra": 1}`, 400, "INVALID_INPUT"},
		"unknown ctx key": {alice.SessionToken, `{"contexts": [{"id": "a", "kind": "page", "attention": "visible", "panels": [], "html": "<b>"}]}`, 400, "INVALID_INPUT"},
		"bad attention":   {alice.SessionToken, `{"contexts": [{"id": "a", "kind": "page", "attention": "urgent", "panels": []}]}`, 400, "INVALID_INPUT"},
		"long label":      {alice.SessionToken, fmt.Sprintf(`{"contexts": [{"id": "a", "kind": "page", "label": %q, "attention": "visible", "panels": []}]}`, strings.Repeat("x", 301)), 400, "INVALID_INPUT"},
		"no contexts":     {alice.SessionToken, `{}`, 400, "INVALID_INPUT"},
		"not json":        {alice.SessionToken, `{"contexts": [`, 400, "INVALID_INPUT"},
		"too large":       {alice.SessionToken, `{"contexts": [{"id": "` + strings.Repeat("x", 3<<20) + `"}]}`, 413, "PAYLOAD_TOO_LARGE"},
	} {
		if code, c := e.do(t, "PUT", path, tc.tok, tc.body, nil); code != tc.status || c != tc.code {
			t.Errorf("%s: got %d %s, want %d %s", name, code, c, tc.status, tc.code)
		}
	}

	// The refused reports changed nothing.
	var d switchboard.WorkspaceDigest
	if code, c := e.do(t, "GET", "/api/v1/digest", wsToken, nil, &d); code != 200 || len(d.Contexts) != 1 || d.Contexts[0].Panels[0].Title != "Project settings" {
		t.Fatalf("digest after refused reports: %d %s %+v", code, c, d.Contexts)
	}
	if p := d.Contexts[0].Provenance; p == nil || p.DerivedFrom != "site-html" || d.Contexts[0].SessionID != alice.SessionID {
		t.Fatalf("context in the digest lacks provenance or tab: %+v", d.Contexts[0])
	}

	// Thousands of panels are accepted and budgeted.
	var panels []map[string]any
	for i := range 3000 {
		panels = append(panels, map[string]any{"id": fmt.Sprintf("p%d", i), "type": "card", "title": fmt.Sprintf("Card %d", i), "origin": "agent"})
	}
	huge := map[string]any{"contexts": []map[string]any{{"id": "board", "kind": "page", "label": "Board", "attention": "visible", "panels": panels}}}
	if code, c := e.do(t, "PUT", "/api/v1/sessions/"+bob.SessionID+"/context", bob.SessionToken, huge, &res); code != 200 ||
		res.Panels != workspace.MaxPanelsPerTab || res.Dropped.Panels != 3000-workspace.MaxPanelsPerTab {
		t.Fatalf("huge report: %d %s %+v", code, c, res)
	}
	if code, _ := e.do(t, "GET", "/api/v1/digest", wsToken, nil, &d); code != 200 || d.Tokens > workspace.DefaultMaxTokens || d.Dropped == nil || d.Dropped.Panels == 0 {
		t.Fatalf("digest of the huge report: %d tokens, dropped %+v", d.Tokens, d.Dropped)
	}

	// A tab's digest is its user's: alice does not see bob's board.
	if code, c := e.do(t, "GET", "/api/v1/digest", alice.SessionToken, nil, &d); code != 200 || len(d.Contexts) != 1 || d.User != "user:alice" {
		t.Fatalf("alice's digest: %d %s %+v", code, c, d)
	}
	// Closing the tab drops its contexts.
	if code, c := e.do(t, "DELETE", "/api/v1/sessions/"+alice.SessionID, wsToken, nil, nil); code != http.StatusNoContent {
		t.Fatalf("close: %d %s", code, c)
	}
	if _, err := e.d.Workspace.Context(context.Background(), "route:/projects/apollo", alice.SessionID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("a closed tab's context is still kept: %v", err)
	}
}

func TestDigestRouteAndDrillDownTools(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	tab := e.openSession(t, "")
	body := `{"contexts": [{"id": "home", "kind": "page", "label": "Home", "attention": "focused", "selection": {"text": "Q3 revenue"},
		"panels": [{"id": "kpis", "type": "metric", "title": "KPIs", "origin": "host"}]}]}`
	if code, c := e.do(t, "PUT", "/api/v1/sessions/"+tab.SessionID+"/context", tab.SessionToken, body, nil); code != 200 {
		t.Fatalf("report: %d %s", code, c)
	}
	if code, c := e.do(t, "GET", "/api/v1/digest", "", nil, nil); code != 401 || c != "UNAUTHORIZED" {
		t.Fatalf("digest without a token: %d %s", code, c)
	}

	var call struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	if code, c := e.do(t, "POST", "/api/v1/tools/workspace.describe_context/call", wsToken, `{"input": {"id": "home"}}`, &call); code != 200 || call.Status != "succeeded" {
		t.Fatalf("describe_context: %d %s %+v", code, c, call)
	}
	var full switchboard.WorkspaceContext
	_ = json.Unmarshal(call.Result, &full)
	if full.Selection == nil || full.Selection.Text != "Q3 revenue" || len(full.Panels) != 1 {
		t.Fatalf("describe_context result: %s", call.Result)
	}
	if code, c := e.do(t, "POST", "/api/v1/tools/workspace.describe_context/call", wsToken, `{"input": {"id": "nope"}}`, &call); code != 404 || c != "NOT_FOUND" {
		t.Fatalf("describe_context of an unknown id: %d %s", code, c)
	}
	if code, c := e.do(t, "POST", "/api/v1/tools/activity.get/call", wsToken, `{"input": {"limit": 500}}`, nil); code != 422 || c != "SCHEMA_VIOLATION" {
		t.Fatalf("activity.get past its limit: %d %s", code, c)
	}

	// An agent scoped to activity.get sees the ledger entries about tools
	// it may see, and no contexts in its digest.
	var tok struct {
		Token string `json:"token"`
	}
	if code, c := e.do(t, "POST", "/api/v1/tokens", wsToken, `{"agent": "reader", "allow": ["activity.get"]}`, &tok); code != 201 {
		t.Fatalf("token: %d %s", code, c)
	}
	var d switchboard.WorkspaceDigest
	if code, c := e.do(t, "GET", "/api/v1/digest", tok.Token, nil, &d); code != 200 || len(d.Contexts) != 0 {
		t.Fatalf("scoped digest: %d %s %+v", code, c, d)
	}
	var page workspace.ActivityPage
	if code, c := e.do(t, "POST", "/api/v1/tools/activity.get/call", tok.Token, `{"input": {"since": "1h"}}`, &call); code != 200 {
		t.Fatalf("agent's activity.get: %d %s", code, c)
	}
	_ = json.Unmarshal(call.Result, &page)
	for _, it := range page.Items {
		if it.Target != "activity.get" {
			t.Fatalf("the agent sees an entry about a tool outside its scope: %+v", it)
		}
	}
	if code, c := e.do(t, "POST", "/api/v1/tools/workspace.describe_context/call", tok.Token, `{"input": {"id": "home"}}`, nil); code != 404 || c != "TOOL_NOT_FOUND" {
		t.Fatalf("describe_context outside the agent's scope: %d %s", code, c)
	}
	if code, _ := e.do(t, "POST", "/api/v1/tools/activity.get/call", wsToken, `{"input": {"actor": "agent:reader"}}`, &call); code != 200 {
		t.Fatal("admin activity.get")
	}
	_ = json.Unmarshal(call.Result, &page)
	if len(page.Items) == 0 || page.Items[len(page.Items)-1].Actor != "agent:reader" {
		t.Fatalf("activity.get by actor: %+v", page.Items)
	}
}

// The digest is an MCP resource: the official client reads it, subscribes,
// and hears resources/updated when a tab's context changes; an agent's
// read is scoped by its token.
func TestDigestMCPResource(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	tab := e.openSession(t, "") // before subscribing: its ledger entry is a change of its own
	updated := make(chan string, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "digest-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	connect := func(tok string) *mcp.ClientSession {
		// 2025-11-25: resources/subscribe is a session's (2026-07-28 has
		// subscriptions/listen instead).
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect(wsToken)
	if caps := cs.InitializeResult().Capabilities.Resources; caps == nil || !caps.Subscribe {
		t.Fatalf("resources capability: %+v", caps)
	}
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	// Beside the digest: the MCP Apps panel view (no panel is open).
	if strings.Join(uris, " ") != mcpserver.DigestURI+" "+mcpserver.PanelViewURI {
		t.Fatalf("resources/list: %v", uris)
	}
	read := func(cs *mcp.ClientSession) switchboard.WorkspaceDigest {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.DigestURI})
		if err != nil {
			t.Fatal(err)
		}
		var d switchboard.WorkspaceDigest
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &d); err != nil || res.Contents[0].MIMEType != "application/json" {
			t.Fatalf("digest resource: %v %+v", err, res.Contents[0])
		}
		return d
	}
	if d := read(cs); len(d.Contexts) != 0 || d.User != "user:admin" {
		t.Fatalf("first read: %+v", d)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: mcpserver.DigestURI}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "switchboard://nothing"}); err == nil {
		t.Fatal("subscribing to an unknown resource succeeded")
	}
	drain(updated)
	body := `{"contexts": [{"id": "inbox", "kind": "page", "label": "Inbox", "attention": "focused", "panels": []}]}`
	if code, c := e.do(t, "PUT", "/api/v1/sessions/"+tab.SessionID+"/context", tab.SessionToken, body, nil); code != 200 {
		t.Fatalf("report: %d %s", code, c)
	}
	select {
	case uri := <-updated:
		if uri != mcpserver.DigestURI {
			t.Fatalf("updated %q", uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated after a context change")
	}
	if d := read(cs); len(d.Contexts) != 1 || d.Contexts[0].Label != "Inbox" {
		t.Fatalf("read after the change: %+v", d.Contexts)
	}

	var tok struct {
		Token string `json:"token"`
	}
	if code, c := e.do(t, "POST", "/api/v1/tokens", wsToken, `{"agent": "narrow", "allow": ["tasks.*"]}`, &tok); code != 201 {
		t.Fatalf("token: %d %s", code, c)
	}
	if d := read(connect(tok.Token)); len(d.Contexts) != 0 {
		t.Fatalf("an agent without workspace.* reads the user's contexts: %+v", d.Contexts)
	}
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
