package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/internal/storetest"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/sqlite"
)

// projectSpec is a settings form over adapter source "project" (adapter
// projects, the record whose id is params.projectId) saved by "save".
func projectSpec(t *testing.T) json.RawMessage {
	t.Helper()
	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.BodyWith(panelspec.BodyProps{Title: "Project settings"}, b.FormSubmit("project", "save",
		panelspec.TextField("name", "Name").Required(), panelspec.TextField("owner", "Owner")))
	b.Source("project", panelspec.Source{Kind: panelspec.SourceAdapter, Adapter: "projects", Key: "id",
		Query: json.RawMessage(`{"where": {"id": {"$param": "projectId"}}}`)})
	b.Action("save", panelspec.Mutate("project", panelspec.OpUpdate))
	spec, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// startDeclDaemon starts a daemon on the SQLite file at path with a
// connected tab, as panelDaemon does.
func startDeclDaemon(t *testing.T, path string) *panelDaemon {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close(); st.Close() })
	tab, err := d.Sessions.Create(ctx, "user:7")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.Sessions.Attach(ctx, tab.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	pd := &panelDaemon{d: d, srv: srv, tab: tab, token: func(r scope.TokenRequest) string {
		tok, err := d.Tokens.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}}
	if code, body := pd.do(t, tab.SessionToken, "GET", "/api/v1/sessions/"+tab.SessionID+"/panels", ""); code != 200 {
		t.Fatalf("attach the tab: %d %v", code, body)
	}
	return pd
}

func panelIDs(t *testing.T, p *panelDaemon) []string {
	t.Helper()
	code, body := p.do(t, mcpToken, "GET", "/api/v1/panels", "")
	if code != 200 {
		t.Fatalf("GET /panels: %d %v", code, body)
	}
	var ids []string
	for _, x := range body["panels"].([]any) {
		ids = append(ids, x.(map[string]any)["id"].(string))
	}
	return ids
}

// Bad input to the declaration routes: a batch with one invalid, unsafe
// or over-budget spec is refused whole with the validator's code and
// registers nothing; an unknown adapter's invalidate and an unknown
// panel's delete are 404 NOT_FOUND; agent and tab tokens are refused; a
// manifest whose panel is refused registers none of its tools either.
func TestDeclaredPanelsBadInput(t *testing.T) {
	t.Parallel()
	p := startDeclDaemon(t, filepath.Join(t.TempDir(), "sb.db"))
	good := map[string]any{"id": "project.settings", "title": "Project settings", "description": "Edit one project.", "spec": projectSpec(t)}
	unsafe := `{"v":1,"origin":"host","root":"r","nodes":{"r":{"type":"body","props":{"title":"x"},"children":["l"]},"l":{"type":"link","props":{"href":"javascript:alert(1)","label":"go"}}}}`
	var many strings.Builder
	many.WriteString(`{"v":1,"origin":"host","root":"r","nodes":{"r":{"type":"body","props":{"title":"x"},"children":[`)
	for i := range 201 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"t` + itoa(i) + `"`)
	}
	many.WriteString(`]}`)
	for i := range 201 {
		many.WriteString(`,"t` + itoa(i) + `":{"type":"text","props":{"text":"x"}}`)
	}
	many.WriteString(`}}`)
	for _, c := range []struct {
		name, spec string
		want       switchboard.Code
	}{
		{"not a spec", `{"nodes": 3}`, switchboard.CodeSpecParse},
		{"unsafe", unsafe, switchboard.CodeSpecUnsafe},
		{"over budget", many.String(), switchboard.CodeSpecBudget},
		{"undeclared action", `{"v":1,"origin":"host","root":"r","nodes":{"r":{"type":"body","props":{"title":"x"},"children":["b"]},"b":{"type":"button","props":{"label":"Go","action":"nope"}}}}`, switchboard.CodeSpecAction},
	} {
		bad := map[string]any{"id": "bad.panel", "title": "Bad", "description": "Bad.", "spec": json.RawMessage(c.spec)}
		code, body := p.do(t, mcpToken, "POST", "/api/v1/panels", mustJSON(t, []any{good, bad}))
		if code < 400 || panelErrCode(body) != string(c.want) {
			t.Fatalf("%s: %d %v, want %s", c.name, code, body, c.want)
		}
		if ids := panelIDs(t, p); len(ids) != 0 {
			t.Fatalf("%s: a refused batch registered %v", c.name, ids)
		}
	}
	for _, body := range []string{`{"id": "x"}`, `[{"id": "x", "title": "X", "description": "X.", "spec": {}, "colour": "red"}]`, `[]`} {
		if code, b := p.do(t, mcpToken, "POST", "/api/v1/panels", body); code != 400 || panelErrCode(b) != "INVALID_INPUT" {
			t.Fatalf("POST /panels %s: %d %v, want 400 INVALID_INPUT", body, code, b)
		}
	}
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/adapters/nope/invalidate", ""); code != 404 || panelErrCode(body) != "NOT_FOUND" {
		t.Fatalf("invalidate an unknown adapter: %d %v, want 404 NOT_FOUND", code, body)
	}
	for _, path := range []string{"/api/v1/panels/nope", "/api/v1/adapters/nope"} {
		if code, body := p.do(t, mcpToken, "DELETE", path, ""); code != 404 || panelErrCode(body) != "NOT_FOUND" {
			t.Fatalf("DELETE %s: %d %v, want 404 NOT_FOUND", path, code, body)
		}
	}
	// An adapter batch with one adapter lacking its query binding: none.
	adapters := `[{"name": "projects", "query": {"method": "POST", "url": "http://127.0.0.1:9/query"}}, {"name": "tasks"}]`
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/adapters", adapters); code != 400 || panelErrCode(body) != "INVALID_INPUT" {
		t.Fatalf("adapter batch with a bad adapter: %d %v", code, body)
	}
	if code, _ := p.do(t, mcpToken, "GET", "/api/v1/tools/data.projects.query", ""); code != 404 {
		t.Fatalf("a refused adapter batch left data.projects.query (%d)", code)
	}
	// Not the admin: an agent token and the tab's session token.
	agent := p.token(scope.TokenRequest{Agent: "planner"})
	for _, tok := range []string{agent, p.tab.SessionToken} {
		for _, r := range [][2]string{{"POST", "/api/v1/panels"}, {"GET", "/api/v1/panels"}, {"POST", "/api/v1/adapters"}, {"POST", "/api/v1/adapters/projects/invalidate"}, {"DELETE", "/api/v1/panels/x"}} {
			code, body := p.do(t, tok, r[0], r[1], mustJSON(t, []any{good}))
			if code != 403 || panelErrCode(body) != "FORBIDDEN" {
				t.Fatalf("%s %s with a non-admin token: %d %v, want 403 FORBIDDEN", r[0], r[1], code, body)
			}
		}
	}
	if code, _ := p.do(t, "", "POST", "/api/v1/panels", mustJSON(t, []any{good})); code != 401 {
		t.Fatalf("POST /panels without a token: %d, want 401", code)
	}
	// A manifest: its tool, its adapter and a panel with an unsafe spec.
	manifest := map[string]any{"tools": []any{map[string]any{"name": "projects.archive", "description": "Archive a project.",
		"inputSchema": map[string]any{"type": "object"}, "surface": "api", "class": "mutate",
		"binding": map[string]any{"http": map[string]any{"method": "POST", "url": "http://127.0.0.1:9/archive"}}}},
		"adapters": []any{map[string]any{"name": "projects", "query": map[string]any{"method": "POST", "url": "http://127.0.0.1:9/query"}}},
		"panels":   []any{good, map[string]any{"id": "bad.panel", "title": "Bad", "description": "Bad.", "spec": json.RawMessage(unsafe)}}}
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/tools", mustJSON(t, manifest)); code < 400 || panelErrCode(body) != "SPEC_UNSAFE" {
		t.Fatalf("manifest with an unsafe panel: %d %v, want SPEC_UNSAFE", code, body)
	}
	for _, name := range []string{"projects.archive", "data.projects.query"} {
		if code, _ := p.do(t, mcpToken, "GET", "/api/v1/tools/"+name, ""); code != 404 {
			t.Fatalf("a refused manifest registered %s (%d)", name, code)
		}
	}
	if ids := panelIDs(t, p); len(ids) != 0 {
		t.Fatalf("a refused manifest registered panels %v", ids)
	}
	// Nothing refused reached the ledger as registered.
	code, body := p.do(t, mcpToken, "GET", "/api/v1/activity?verb=panel.register", "")
	if code != 200 || strings.Contains(mustJSON(t, body), "panel.register") {
		t.Fatalf("refused declarations were ledgered: %d %v", code, body)
	}
}

// projectsBackend is an app backend in Go standing in for the Node one
// of the e2e test: it counts mutations and can answer garbage or hang.
type projectsBackend struct {
	srv     *httptest.Server
	mu      sync.Mutex
	name    string
	mutates atomic.Int32
	mode    atomic.Value // "", "garbage" or "hang"
	asserts atomic.Int32
	release chan struct{}
}

func newProjectsBackend(t *testing.T) *projectsBackend {
	b := &projectsBackend{name: "Apollo", release: make(chan struct{})}
	b.mode.Store("")
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Switchboard-Assertion") != "" {
			b.asserts.Add(1)
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/query":
			switch b.mode.Load() {
			case "garbage":
				_, _ = io.WriteString(w, `{"rows": "not records"}`)
				return
			case "hang":
				select {
				case <-b.release:
				case <-r.Context().Done():
				}
				return
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			_, _ = io.WriteString(w, `{"records": [{"id": "apollo", "name": `+mustJSONString(b.name)+`, "owner": "Alex"}]}`)
		case r.Method == "PUT" && r.URL.Path == "/projects/apollo":
			var in struct{ Values map[string]any }
			_ = json.Unmarshal(body, &in)
			b.mutates.Add(1)
			b.mu.Lock()
			if n, ok := in.Values["name"].(string); ok {
				b.name = n
			}
			b.mu.Unlock()
			_, _ = io.WriteString(w, `{"record": {"id": "apollo"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(b.release); b.srv.Close() })
	return b
}

func mustJSONString(s string) string { b, _ := json.Marshal(s); return string(b) }

// awaitSnapshot polls the instance until ok accepts it (no timed
// assertion: the deadline only ends a test that would hang).
func awaitSnapshot(t *testing.T, p *panelDaemon, instance string, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, sn := p.do(t, mcpToken, "GET", "/api/v1/sessions/"+p.tab.SessionID+"/panels/"+instance, "")
		if code == 200 && ok(sn) {
			return sn
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: last snapshot %d %v", what, code, sn)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func projectName(sn map[string]any) string {
	data, _ := sn["data"].(map[string]any)
	recs, _ := data["project"].([]any)
	if len(recs) == 0 {
		return ""
	}
	n, _ := recs[0].(map[string]any)["name"].(string)
	return n
}

func sourceError(sn map[string]any) string {
	errs, _ := sn["errors"].(map[string]any)
	e, _ := errs["project"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// A panel and an adapter declared over HTTP: the panel reads the backend
// (with the assertion), the data tool's update reaches it once, the
// backend's invalidate refreshes the open panel, a backend answering
// garbage or nothing leaves the panel with an error state, and both
// declarations survive a restart.
func TestDeclaredAdapterOverHTTP(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sb.db")
	be := newProjectsBackend(t)
	p := startDeclDaemon(t, path)
	adapters := []any{map[string]any{"name": "projects", "description": "the studio's projects",
		"query":    map[string]any{"method": "POST", "url": be.srv.URL + "/query", "timeoutMs": 2000},
		"mutate":   map[string]any{"update": map[string]any{"method": "PUT", "url": be.srv.URL + "/projects/{key}"}},
		"approval": map[string]any{"update": "none"}}}
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/adapters", mustJSON(t, adapters)); code != 200 {
		t.Fatalf("declare the adapter: %d %v", code, body)
	}
	panels := []any{map[string]any{"id": "project.settings", "title": "Project settings", "description": "Edit one project.",
		"scope": "one project (params.projectId)", "contextKinds": []string{"project"}, "spec": projectSpec(t)}}
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/panels", mustJSON(t, panels)); code != 200 {
		t.Fatalf("declare the panel: %d %v", code, body)
	}
	code, body := p.call(t, mcpToken, "panel.open", map[string]any{"panel": "project.settings", "sessionId": p.tab.SessionID, "params": map[string]any{"projectId": "apollo"}})
	if code != 200 {
		t.Fatalf("open: %d %v", code, body)
	}
	inst := body["result"].(map[string]any)["instanceId"].(string)
	awaitSnapshot(t, p, inst, "the panel shows the backend's record", func(sn map[string]any) bool { return projectName(sn) == "Apollo" })

	code, body = p.call(t, mcpToken, "data.projects.update", map[string]any{"key": "apollo", "values": map[string]any{"name": "Apollo II"}})
	if code != 200 || be.mutates.Load() != 1 {
		t.Fatalf("update: %d %v, backend mutated %d times", code, body, be.mutates.Load())
	}
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/adapters/projects/invalidate", ""); code != 204 {
		t.Fatalf("invalidate: %d %v", code, body)
	}
	awaitSnapshot(t, p, inst, "the invalidation refreshes the panel", func(sn map[string]any) bool { return projectName(sn) == "Apollo II" })
	if be.asserts.Load() < 3 {
		t.Fatalf("%d backend requests carried Switchboard-Assertion, want every one", be.asserts.Load())
	}

	be.mode.Store("garbage")
	p.do(t, mcpToken, "POST", "/api/v1/adapters/projects/invalidate", "")
	awaitSnapshot(t, p, inst, "garbage degrades the panel", func(sn map[string]any) bool { return sourceError(sn) == "UPSTREAM_ERROR" })
	be.mode.Store("hang")
	p.do(t, mcpToken, "POST", "/api/v1/adapters/projects/invalidate", "")
	awaitSnapshot(t, p, inst, "a backend that does not answer degrades the panel", func(sn map[string]any) bool { return sourceError(sn) == "TIMEOUT" })
	be.mode.Store("")
	p.do(t, mcpToken, "POST", "/api/v1/adapters/projects/invalidate", "")
	awaitSnapshot(t, p, inst, "the panel recovers", func(sn map[string]any) bool { return sourceError(sn) == "" && projectName(sn) == "Apollo II" })

	code, body = p.do(t, mcpToken, "GET", "/api/v1/activity?limit=200", "")
	ledger := mustJSON(t, body)
	for _, v := range []string{"adapter.register", "panel.register", "tool.register"} {
		if code != 200 || !strings.Contains(ledger, `"`+v+`"`) {
			t.Fatalf("the ledger has no %s entry: %d %s", v, code, ledger)
		}
	}

	// A restart on the same store serves both.
	p.srv.Close()
	p.d.Close()
	q := startDeclDaemon(t, path)
	if ids := panelIDs(t, q); len(ids) != 1 || ids[0] != "project.settings" {
		t.Fatalf("after a restart GET /panels lists %v", ids)
	}
	code, body = q.call(t, mcpToken, "panel.open", map[string]any{"panel": "project.settings", "sessionId": q.tab.SessionID, "params": map[string]any{"projectId": "apollo"}})
	if code != 200 {
		t.Fatalf("open after a restart: %d %v", code, body)
	}
	awaitSnapshot(t, q, body["result"].(map[string]any)["instanceId"].(string), "the restarted daemon reads the backend",
		func(sn map[string]any) bool { return projectName(sn) == "Apollo II" })

	// Declared again without its update: that data tool goes, the query stays.
	adapters[0].(map[string]any)["mutate"] = map[string]any{}
	delete(adapters[0].(map[string]any), "approval")
	if code, body := q.do(t, mcpToken, "POST", "/api/v1/adapters", mustJSON(t, adapters)); code != 200 {
		t.Fatalf("declare the adapter again: %d %v", code, body)
	}
	if code, _ := q.do(t, mcpToken, "GET", "/api/v1/tools/data.projects.update", ""); code != 404 {
		t.Fatalf("data.projects.update outlived its op (%d)", code)
	}
	if code, _ := q.do(t, mcpToken, "GET", "/api/v1/tools/data.projects.query", ""); code != 200 {
		t.Fatalf("data.projects.query went with the update (%d)", code)
	}

	// GET /adapters lists what was declared, by name.
	if code, body := q.do(t, mcpToken, "GET", "/api/v1/adapters", ""); code != 200 || !strings.Contains(fmt.Sprint(body), "name:projects") {
		t.Fatalf("GET /adapters: %d %v", code, body)
	}
	// The adapter cannot go while a declared panel reads it.
	if code, body := q.do(t, mcpToken, "DELETE", "/api/v1/adapters/projects", ""); code != 409 || panelErrCode(body) != string(switchboard.CodeConflict) ||
		!strings.Contains(fmt.Sprint(body), "project.settings") {
		t.Fatalf("delete the adapter its panel reads: %d %v; want CONFLICT naming the panel", code, body)
	}
	// Removing both: the panel is gone and so are the data tools.
	if code, body := q.do(t, mcpToken, "DELETE", "/api/v1/panels/project.settings", ""); code != 204 {
		t.Fatalf("delete the panel: %d %v", code, body)
	}
	if code, body := q.do(t, mcpToken, "DELETE", "/api/v1/adapters/projects", ""); code != 204 {
		t.Fatalf("delete the adapter: %d %v", code, body)
	}
	if ids := panelIDs(t, q); len(ids) != 0 {
		t.Fatalf("after the delete GET /panels lists %v", ids)
	}
	for _, n := range []string{"data.projects.query", "data.projects.update"} {
		if code, _ := q.do(t, mcpToken, "GET", "/api/v1/tools/"+n, ""); code != 404 {
			t.Fatalf("%s outlived its adapter (%d)", n, code)
		}
	}
}

// Declarations made on one replica are served by the other (the store
// and the bus), and removed there when removed on the first.
func TestDeclaredPanelsAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := pgReplicas(t, 2)
	a, b := rs[0], rs[1]
	adapters := []any{map[string]any{"name": "projects", "query": map[string]any{"method": "POST", "url": "http://127.0.0.1:9/query"}}}
	if err := a.c.Do(ctx, "POST", "/api/v1/adapters", adapters, nil); err != nil {
		t.Fatal(err)
	}
	panels := []any{map[string]any{"id": "project.settings", "title": "Project settings", "description": "Edit one project.", "spec": projectSpec(t)}}
	if err := a.c.Do(ctx, "POST", "/api/v1/panels", panels, nil); err != nil {
		t.Fatal(err)
	}
	has := func(r pgReplica) bool {
		for _, p := range r.d.Panels.Panels() {
			if p.ID == "project.settings" {
				return true
			}
		}
		return false
	}
	await := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	await("B serves A's panel", func() bool { return has(b) })
	// B knows the adapter: its invalidate is no 404, and its delete works.
	if err := b.c.Do(ctx, "POST", "/api/v1/adapters/projects/invalidate", nil, nil); err != nil {
		t.Fatalf("invalidate on B: %v", err)
	}
	if err := b.c.Do(ctx, "DELETE", "/api/v1/panels/project.settings", nil, nil); err != nil {
		t.Fatal(err)
	}
	await("A drops the panel B removed", func() bool { return !has(a) })
}

// TestDeclareUndoneWhenDeclarationsFail: a manifest whose catalog write
// succeeded but whose declarations' write failed leaves the catalog as it
// was — a tool it added is gone, a tool it replaced is back as it was —
// and the panel is not declared.
func TestDeclareUndoneWhenDeclarationsFail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var failPut atomic.Bool
	f := &storetest.Faulty{Store: st, FailNext: func(op string) error {
		if op == "PanelRegistrationPut" && failPut.Load() {
			return switchboard.Errorf(switchboard.CodeUnavailable, "injected: the store went away")
		}
		return nil
	}}
	d, err := daemon.New(ctx, daemon.Options{Store: f, AdminToken: mcpToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	tool := func(name, desc string) switchboard.Tool {
		return switchboard.Tool{Name: name, Description: desc, Class: switchboard.ClassRead,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: "http://127.0.0.1:1/x"}}}
	}
	if _, err := d.Registry.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("notes.list", "List the notes.")}); err != nil {
		t.Fatal(err)
	}
	failPut.Store(true)
	spec := json.RawMessage(`{"v":1,"origin":"host","root":"r","nodes":{"r":{"type":"body","props":{"title":"Notes"},"children":["t"]},"t":{"type":"text","props":{"text":"hi"}}}}`)
	_, err = d.DeclareManifest(ctx, switchboard.SourceHost, switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion,
		Tools:  []switchboard.Tool{tool("notes.list", "List the notes, newest first."), tool("notes.count", "Count the notes.")},
		Panels: []switchboard.HostPanel{{ID: "notes.board", Title: "Notes", Description: "The notes board.", Spec: spec}}})
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("declare with the declarations' write failing: %v", err)
	}
	if got, err := d.Registry.Get(ctx, "notes.list"); err != nil || got.Description != "List the notes." {
		t.Errorf("the replaced tool after the undo: %q %v; want its old description back", got.Description, err)
	}
	if _, err := d.Registry.Get(ctx, "notes.count"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Errorf("the added tool after the undo: %v; want it gone", err)
	}
	if ps, err := d.DeclaredPanels(ctx); err != nil || len(ps) != 0 {
		t.Errorf("declared panels after the failure: %+v %v", ps, err)
	}
}
