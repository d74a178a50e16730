package panel_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/panelspec/sqladapter"
	"github.com/switchboardhq/switchboard/sqlite"
)

// env is the panel service over the real pieces: a SQLite store, the
// registry, the broker (with an optional policy), the session manager and
// an app database behind the SQL adapter.
type env struct {
	store *sqlite.Store
	reg   *registry.Registry
	br    *broker.Broker
	sess  *session.Manager
	svc   *panel.Service
	app   *sql.DB
}

var agentP = switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "assistant"}

func newEnv(t *testing.T, policy broker.Policy) *env {
	t.Helper()
	return newEnvWith(t, policy, nil)
}

// newEnvWith is newEnv with the panel service's options adjusted by opt.
func newEnvWith(t *testing.T, policy broker.Policy, opt func(*panel.Options)) *env {
	t.Helper()
	return newEnvPolicy(t, func(*sqlite.Store, *env) broker.Policy { return policy }, opt)
}

// newEnvPolicy is newEnvWith with the broker's policy made over the store
// and the env (whose svc is set once the policy's calls can come).
func newEnvPolicy(t *testing.T, mk func(*sqlite.Store, *env) broker.Policy, opt func(*panel.Options)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{store: st}
	policy := mk(st, e)
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.New(session.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Shutdown)
	br := broker.New(broker.Options{Store: st, Registry: reg, Browser: sess, Policy: policy})
	t.Cleanup(br.Close)
	po := panel.Options{Caller: br, Tabs: sess, Tools: reg, Store: st}
	if opt != nil {
		opt(&po)
	}
	svc := panel.New(po)
	t.Cleanup(svc.Close)
	e.reg, e.br, e.sess, e.svc = reg, br, sess, svc
	e.register(t, svc.Tools())

	app, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	for _, q := range []string{
		`CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL, budget INTEGER, public BOOLEAN NOT NULL DEFAULT 0)`,
		`INSERT INTO projects VALUES ('apollo', 'Apollo', 'active', 1200, 1), ('borealis', 'Borealis', 'paused', 800, 0)`,
	} {
		if _, err := app.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	e.app = app
	a, err := sqladapter.New(app, sqladapter.SQLite, sqladapter.Table{Name: "projects", Key: "id", Columns: []string{"name", "status", "budget", "public"}})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := svc.RegisterAdapter("projects", a, panel.AdapterOptions{Ops: []string{panel.OpUpdate, panel.OpDelete},
		Approval: map[string]switchboard.Approval{panel.OpUpdate: switchboard.ApprovalHITL}})
	if err != nil {
		t.Fatal(err)
	}
	e.register(t, tools)
	if err := svc.Register(settingsPanel(t)); err != nil {
		t.Fatal(err)
	}
	return e
}

// register declares tools as core Go-function tools, as the daemon does.
func (e *env) register(t *testing.T, tools []panel.ToolFunc) {
	t.Helper()
	decls := make([]switchboard.Tool, len(tools))
	for i, tf := range tools {
		decls[i] = tf.Tool
		decls[i].Binding = &switchboard.Binding{Go: true}
		e.br.Handle(tf.Tool.Name, tf.Func)
	}
	if _, err := e.reg.Register(context.Background(), switchboard.SourceCore, decls); err != nil {
		t.Fatal(err)
	}
}

// settingsPanel is a host panel editing one project.
func settingsPanel(t *testing.T) panel.Def {
	t.Helper()
	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.BodyWith(panelspec.BodyProps{Title: "Project settings"},
		b.FormSubmit("project", "save",
			panelspec.TextField("name", "Name").Required().Length(1, 40),
			panelspec.SelectField("status", "Status", panelspec.Opt("active", "Active"), panelspec.Opt("paused", "Paused")).Required(),
			panelspec.NumberField("budget", "Budget").Range(0, 100000),
			panelspec.CheckboxField("public", "Public"),
			panelspec.TextField("id", "Id").ReadOnly(),
		),
		b.Button("Delete", "delete"))
	b.Source("project", panelspec.Source{Kind: panelspec.SourceAdapter, Adapter: "projects", Key: "id",
		Query: json.RawMessage(`{"where": {"id": {"$param": "projectId"}}}`)})
	b.Action("save", panelspec.Mutate("project", panelspec.OpUpdate))
	b.Action("delete", panelspec.Action{Kind: panelspec.ActionMutate, Source: "project", Op: panelspec.OpDelete, Destructive: true, Confirm: "Delete it?"})
	spec, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return panel.Def{ID: "project.settings", Title: "Project settings", Description: "Edit one project.", Scope: "one project", Spec: spec}
}

// tab opens a browser session with a connected stream that shows panels.
func (e *env) tab(t *testing.T) (string, *session.Conn) {
	t.Helper()
	ctx := context.Background()
	c, err := e.sess.Create(ctx, "user:42")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := e.sess.Attach(ctx, c.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	e.svc.Attach(ctx, c.SessionID)
	return c.SessionID, conn
}

// event waits for the next event of kind on the tab's stream (skipping
// others) and decodes its data.
func event[T any](t *testing.T, conn *session.Conn, kind string) T {
	t.Helper()
	deadline := time.After(10 * time.Second) // a bound, not a pause: events arrive in microseconds
	for {
		for ev, ok := conn.Next(); ok; ev, ok = conn.Next() {
			if ev.Kind != kind {
				continue
			}
			var v T
			if err := json.Unmarshal(ev.Data, &v); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			return v
		}
		select {
		case <-conn.Ready():
		case <-deadline:
			t.Fatalf("no %s event", kind)
		}
	}
}

// drain discards queued events.
func drain(conn *session.Conn) {
	for _, ok := conn.Next(); ok; _, ok = conn.Next() {
	}
}

// call runs a panel tool through the broker as p.
func (e *env) call(t *testing.T, p switchboard.Principal, tool string, input any) (switchboard.Invocation, error) {
	t.Helper()
	return e.callIn(t, switchboard.WithPrincipal(context.Background(), p), tool, input)
}

// callIn runs a panel tool through the broker as the principal the test
// put in ctx (the admin when it put none), within ctx's agent session.
func (e *env) callIn(t *testing.T, ctx context.Context, tool string, input any) (switchboard.Invocation, error) {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return e.br.Call(ctx, requestIn(ctx, tool, b))
}

// requestIn is a call of tool by the principal the test put in ctx (the
// admin when it put none), within ctx's agent session.
func requestIn(ctx context.Context, tool string, input json.RawMessage) broker.CallRequest {
	p, ok := switchboard.PrincipalFrom(ctx)
	if !ok {
		p = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
	}
	req := broker.CallRequest{Tool: tool, Input: input, Caller: &p}
	req.AgentSession, _ = switchboard.AgentSessionFrom(ctx)
	return req
}

// as is ctx for principal p acting in agent session agentID ("" for none).
func as(p switchboard.Principal, agentID string) context.Context {
	ctx := switchboard.WithPrincipal(context.Background(), p)
	if agentID != "" {
		ctx = switchboard.WithAgentSession(ctx, agentID)
	}
	return ctx
}

// do runs a panel tool through the broker as p and decodes its result.
func do[T any](t *testing.T, e *env, p switchboard.Principal, tool string, input any) T {
	t.Helper()
	inv, err := e.call(t, p, tool, input)
	return result[T](t, inv, err)
}

// result decodes a successful call's result.
func result[T any](t *testing.T, inv switchboard.Invocation, err error) T {
	t.Helper()
	if err != nil {
		t.Fatalf("call %s: %v", inv.Tool, err)
	}
	var v T
	if err := json.Unmarshal(inv.Result, &v); err != nil {
		t.Fatalf("%s result %s: %v", inv.Tool, inv.Result, err)
	}
	return v
}

func (e *env) project(t *testing.T, id string) (name string, budget int) {
	t.Helper()
	if err := e.app.QueryRow(`SELECT name, budget FROM projects WHERE id = ?`, id).Scan(&name, &budget); err != nil {
		t.Fatal(err)
	}
	return name, budget
}

// tableSpec is an agent's panel listing the projects from the adapter.
const tableSpec = `{"v": 1, "origin": "host", "root": "body",
 "sources": {"all": {"kind": "adapter", "adapter": "projects", "query": {"orderBy": "id"}}},
 "nodes": {
  "body":  {"type": "panel-body", "props": {"title": "All projects"}, "children": ["table"]},
  "table": {"type": "table", "props": {"source": "all", "columns": [{"key": "name", "label": "Name"}, {"key": "budget", "label": "Budget", "kind": "number"}]}}
 }}`
