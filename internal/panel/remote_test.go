package panel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/panelspec/sqladapter"
)

// replicaPair is two panel services in one process that behave as two
// replicas: their own session managers (announcing their tabs to each
// other over one bus), one store, one bus.
type replicaPair struct {
	e          *env
	sessA      *session.Manager
	svcA, svcB *panel.Service
}

func newReplicaPair(t *testing.T) *replicaPair {
	t.Helper()
	return newReplicaPairWith(t, alive("rep_a"), alive("rep_b"))
}

// newReplicaPairWith is newReplicaPair with each replica's view of which
// replicas are alive.
func newReplicaPairWith(t *testing.T, liveA, liveB cluster.Liveness) *replicaPair {
	t.Helper()
	e := newEnv(t, nil)
	b := bus.NewLocal()
	mk := func(live cluster.Liveness) (*session.Manager, *panel.Service) {
		sess, err := session.New(session.Options{Store: e.store, Bus: b, Replica: live.Self(), Presence: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sess.Shutdown)
		ask, err := cluster.NewAsker(b, live, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ask.Close)
		svc := panel.New(panel.Options{Caller: e.br, Tabs: sess, Tools: e.reg, Store: e.store, Bus: b, Asker: ask, Canvases: e.store})
		t.Cleanup(svc.Close)
		return sess, svc
	}
	p := &replicaPair{e: e}
	p.sessA, p.svcA = mk(liveA)
	_, p.svcB = mk(liveB)
	return p
}

// alive is a Liveness under which every replica stays alive.
type alive string

func (a alive) Self() string              { return string(a) }
func (alive) Gone(string) <-chan struct{} { return nil }

// newAsker is replica name's end of cluster asks on b.
func newAsker(t *testing.T, b bus.Bus, name string) *cluster.Asker {
	t.Helper()
	a, err := cluster.NewAsker(b, alive(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// goneTo is a Liveness that knows replica gone is gone.
type goneTo struct{ self, gone string }

func (g goneTo) Self() string { return g.self }
func (g goneTo) Gone(id string) <-chan struct{} {
	if id != g.gone {
		return nil
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// TestForwardToAGoneHolder: a change for a tab whose replica is known
// gone ends UNAVAILABLE at once, saying what to do, instead of waiting for
// the call's deadline.
func TestForwardToAGoneHolder(t *testing.T) {
	t.Parallel()
	p := newReplicaPairWith(t, alive("rep_a"), goneTo{self: "rep_b", gone: "rep_a"})
	ctx := context.Background()
	c, err := p.sessA.Create(ctx, "user:42")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := p.sessA.Attach(ctx, c.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p.svcA.Attach(ctx, c.SessionID)
	call, cancel := context.WithTimeout(switchboard.WithPrincipal(ctx, agentP), time.Hour)
	defer cancel()
	deadline := time.Now().Add(10 * time.Second) // a bound: presence is announced at once
	for {
		_, err = p.svcB.Compose(call, panel.ComposeRequest{Spec: json.RawMessage(formSpec), SessionID: c.SessionID})
		if switchboard.CodeOf(err) != switchboard.CodeSessionGone || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable || !strings.Contains(err.Error(), "replica rep_a") {
		t.Fatalf("compose for a tab on a gone replica: %v", err)
	}
	if call.Err() != nil {
		t.Fatal("the compose waited for its deadline")
	}
}

// TestForwardedToTheTabsReplica: a compose and a fill asked of the replica
// that does not hold the tab run on the one that does (its tab gets
// panel.open and panel.update), and a lease taken there holds against
// another agent asking through the other replica.
func TestForwardedToTheTabsReplica(t *testing.T) {
	t.Parallel()
	p := newReplicaPair(t)
	ctx := context.Background()
	c, err := p.sessA.Create(ctx, "user:42")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := p.sessA.Attach(ctx, c.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p.svcA.Attach(ctx, c.SessionID)

	planner := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	writer := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "writer"}
	var res panel.ComposeResult
	deadline := time.Now().Add(10 * time.Second) // a bound: presence is announced at once
	for {
		res, err = p.svcB.Compose(switchboard.WithPrincipal(ctx, planner), panel.ComposeRequest{Spec: json.RawMessage(formSpec), SessionID: c.SessionID})
		if switchboard.CodeOf(err) != switchboard.CodeSessionGone || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if sn := event[panel.Snapshot](t, conn, panel.EventOpen); sn.InstanceID != res.InstanceID {
		t.Fatalf("the tab got %s, want %s", sn.InstanceID, res.InstanceID)
	}
	fill, err := p.svcB.Fill(switchboard.WithPrincipal(ctx, planner), panel.FillRequest{InstanceID: res.InstanceID,
		Values: map[string]json.RawMessage{"title": json.RawMessage(`"by the planner"`)}})
	if err != nil || len(fill.Applied) != 1 || fill.Lease == nil {
		t.Fatalf("fill through the other replica: %+v %v", fill, err)
	}
	if sn := event[panel.Snapshot](t, conn, panel.EventUpdate); sn.Values["task"]["title"] != "by the planner" {
		t.Fatalf("panel.update: %+v", sn.Values)
	}
	if _, err := p.svcB.Fill(switchboard.WithPrincipal(ctx, writer), panel.FillRequest{InstanceID: res.InstanceID,
		Values: map[string]json.RawMessage{"title": json.RawMessage(`"by the writer"`)}}); switchboard.CodeOf(err) != switchboard.CodeLeaseHeld {
		t.Fatalf("another agent's fill: %v, want LEASE_HELD", err)
	}
	st, err := p.svcB.ReadState(switchboard.WithPrincipal(ctx, writer), res.InstanceID)
	if err != nil || st.Values["task"]["title"] != "by the planner" || st.Lease == nil || st.Lease.Principal != "agent:planner" {
		t.Fatalf("read_state on the other replica: %+v %v", st, err)
	}

	// A compose that names no tab, asked of the replica without tabs,
	// goes to the one tab showing panels, on the other replica.
	var second panel.ComposeResult
	for {
		second, err = p.svcB.Compose(switchboard.WithPrincipal(ctx, writer), panel.ComposeRequest{Spec: json.RawMessage(tableSpec)})
		if switchboard.CodeOf(err) != switchboard.CodeToolUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || second.SessionID != c.SessionID {
		t.Fatalf("compose naming no tab through the other replica: %+v %v", second.SessionID, err)
	}
	if sn := event[panel.Snapshot](t, conn, panel.EventOpen); sn.InstanceID != second.InstanceID {
		t.Fatalf("the tab got %s, want %s", sn.InstanceID, second.InstanceID)
	}
	list, err := p.svcB.List(switchboard.WithPrincipal(ctx, writer), c.SessionID)
	if err != nil || len(list.Instances) != 2 || list.Instances[0].InstanceID != res.InstanceID {
		t.Fatalf("panel.list of the tab on the other replica: %+v %v", list.Instances, err)
	}
}

const formSpec = `{"v": 1, "root": "body",
 "sources": {"task": {"kind": "state", "path": "/task", "key": "id"}},
 "state": {"task": {"id": "t-1", "title": "Write the notes", "estimate": 3}},
 "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Edit task"}, "children": ["form"]},
  "form": {"type": "field-form", "props": {"bind": "task", "submit": "save", "fields": [
    {"path": "title", "label": "Title", "kind": "text", "required": true},
    {"path": "estimate", "label": "Estimate", "kind": "number", "min": 0, "max": 90}]}}
 },
 "actions": {"save": {"kind": "mutate", "source": "task", "op": "update"}}}`

// TestAdapterInvalidationCrossesReplicas: a data tool's mutation made on
// one replica refreshes the panels showing that adapter on another (each
// replica's adapter notifies only its own process).
func TestAdapterInvalidationCrossesReplicas(t *testing.T) {
	t.Parallel()
	p := newReplicaPair(t)
	ctx := context.Background()
	table := sqladapter.Table{Name: "projects", Key: "id", Columns: []string{"name", "status", "budget", "public"}}
	var updateB func(context.Context, json.RawMessage) (any, error)
	for i, svc := range []*panel.Service{p.svcA, p.svcB} {
		a, err := sqladapter.New(p.e.app, sqladapter.SQLite, table)
		if err != nil {
			t.Fatal(err)
		}
		tools, err := svc.RegisterAdapter("projects", a, panel.AdapterOptions{Ops: []string{panel.OpUpdate}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tf := range tools {
			if i == 1 && tf.Tool.Name == panel.AdapterToolName("projects", panel.OpUpdate) {
				updateB = tf.Func
			}
		}
	}
	c, err := p.sessA.Create(ctx, "user:42")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := p.sessA.Attach(ctx, c.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p.svcA.Attach(ctx, c.SessionID)
	if _, err := p.svcA.Compose(switchboard.WithPrincipal(ctx, agentP), panel.ComposeRequest{Spec: json.RawMessage(tableSpec), SessionID: c.SessionID}); err != nil {
		t.Fatal(err)
	}
	event[panel.Snapshot](t, conn, panel.EventOpen)

	if _, err := updateB(ctx, json.RawMessage(`{"key": "apollo", "values": {"name": "Apollo (renamed on B)"}}`)); err != nil {
		t.Fatal(err)
	}
	sn := event[panel.Snapshot](t, conn, panel.EventUpdate)
	if !strings.Contains(string(sn.Data["all"]), "Apollo (renamed on B)") {
		t.Fatalf("the panel on replica A shows %s after the change on B", sn.Data["all"])
	}
}
