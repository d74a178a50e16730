package panel_test

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/sqlite"
)

// storedValues reads an instance's form values as the store holds them.
func storedValues(t *testing.T, e *env, id string) (map[string]any, int64) {
	t.Helper()
	p, err := e.store.PanelInstanceGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Values map[string]map[string]any `json:"values"`
	}
	if err := json.Unmarshal(p.Doc, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Values["project"], p.Version
}

func edit(t *testing.T, svc *panel.Service, id, field, value string) panel.EditResult {
	t.Helper()
	res, err := svc.Edit(context.Background(), id, panel.EditRequest{Values: map[string]json.RawMessage{field: json.RawMessage(value)}})
	if err != nil || len(res.Applied) != 1 {
		t.Fatalf("edit %s: %+v %v", field, res, err)
	}
	return res
}

// TestStoredInstanceConflict: two services over one store, as two replicas
// that both hold a copy of one instance (a tab that moved away and back).
// A change made on a stale copy is refused by the store's compare-and-swap,
// the stale copy is dropped, and the change is made again on the stored
// state: neither replica's update is lost.
func TestStoredInstanceConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	session, _ := e.tab(t)
	v := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}, "sessionId": session})

	other := panel.New(panel.Options{Caller: e.br, Tabs: e.sess, Tools: e.reg, Store: e.store})
	t.Cleanup(other.Close)
	if got := other.Attach(ctx, session); len(got) != 1 || got[0].InstanceID != v.InstanceID {
		t.Fatalf("the second replica rebuilt %+v from the store, want the one instance", got)
	}

	edit(t, e.svc, v.InstanceID, "name", `"from A"`)
	// other's copy is a version behind: its write is refused, it reloads,
	// and its edit lands on top of A's.
	edit(t, other, v.InstanceID, "budget", `777`)
	vals, version := storedValues(t, e, v.InstanceID)
	if vals["name"] != "from A" || vals["budget"] != float64(777) {
		t.Fatalf("stored values %v: an update was lost", vals)
	}
	// And the first replica, stale now, does the same.
	edit(t, e.svc, v.InstanceID, "status", `"paused"`)
	vals, version2 := storedValues(t, e, v.InstanceID)
	if vals["name"] != "from A" || vals["budget"] != float64(777) || vals["status"] != "paused" || version2 != version+1 {
		t.Fatalf("stored values %v (version %d after %d): an update was lost", vals, version2, version)
	}
}

// TestStoredInstanceRebuilt: a replica that never saw a tab (its first one
// died) rebuilds the tab's instances, values, unsaved marks and lease from
// the store when the tab attaches, and changes them from there.
func TestStoredInstanceRebuilt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	session, _ := e.tab(t)
	v := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}, "sessionId": session})
	do[panel.FillResult](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": v.InstanceID, "values": map[string]any{"name": "Apollo II"}})

	next := panel.New(panel.Options{Caller: e.br, Tabs: e.sess, Tools: e.reg, Store: e.store})
	t.Cleanup(next.Close)
	st, err := next.ReadState(switchboard.WithPrincipal(ctx, agentP), v.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Values["project"]["name"] != "Apollo II" || len(st.Filled["project"]) != 1 || st.Lease == nil || st.Lease.Principal != "agent:assistant" {
		t.Fatalf("rebuilt state %+v", st)
	}
	got := next.Attach(ctx, session)
	if len(got) != 1 || got[0].Values["project"]["name"] != "Apollo II" || got[0].Lease == nil {
		t.Fatalf("attach on the new replica: %+v", got)
	}
	// Another agent is still held off by the stored lease.
	planner := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	if _, err := next.Fill(switchboard.WithPrincipal(ctx, planner), panel.FillRequest{InstanceID: v.InstanceID,
		Values: map[string]json.RawMessage{"name": json.RawMessage(`"x"`)}}); switchboard.CodeOf(err) != switchboard.CodeLeaseHeld {
		t.Fatalf("fill by another agent on the new replica: %v, want LEASE_HELD", err)
	}
	if err := next.CloseInstance(ctx, v.InstanceID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PanelInstanceGet(ctx, v.InstanceID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("closed instance still stored: %v", err)
	}
}

// TestClosedSessionForgetsStoredInstances: closing a session (on any
// replica) deletes its stored instances, even when no replica holds its
// tab any more.
func TestClosedSessionForgetsStoredInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	session, _ := e.tab(t)
	do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec), "sessionId": session})
	other := panel.New(panel.Options{Caller: e.br, Tabs: e.sess, Tools: e.reg, Store: e.store})
	t.Cleanup(other.Close)
	other.ForgetSession(session)
	if list, err := e.store.PanelInstanceList(ctx, session); err != nil || len(list) != 0 {
		t.Fatalf("stored instances after the session closed: %v %v", list, err)
	}
}

// gatedStore is the SQLite store with gates that order one read against
// the deletion of a gone tab's instances (the reads and writes themselves
// are the store's).
type gatedStore struct {
	*sqlite.Store
	holdGet string        // the instance whose first read is held
	read    chan struct{} // closed when that read has been made
	release chan struct{} // closed to let that read answer
	deleted chan struct{} // closed once a tab's instances were deleted
	listed  chan string   // the tabs whose instances were listed
}

func (g *gatedStore) PanelInstanceGet(ctx context.Context, id string) (switchboard.PanelInstance, error) {
	p, err := g.Store.PanelInstanceGet(ctx, id)
	if id == g.holdGet {
		select {
		case <-g.read: // held once already
		default:
			close(g.read)
			<-g.release
		}
	}
	return p, err
}

func (g *gatedStore) PanelInstanceDeleteSession(ctx context.Context, sessionID string) (int, error) {
	<-g.read // after the held read
	n, err := g.Store.PanelInstanceDeleteSession(ctx, sessionID)
	select {
	case <-g.deleted:
	default:
		close(g.deleted)
	}
	return n, err
}

func (g *gatedStore) PanelInstanceList(ctx context.Context, sessionID string) ([]switchboard.PanelInstance, error) {
	select {
	case g.listed <- sessionID:
	default:
	}
	return g.Store.PanelInstanceList(ctx, sessionID)
}

// TestClosedTabReadRacingDeletion: a read of a closed tab's instance that
// reached the store before the instances were deleted, and answers after
// the deletion finished, is NOT_FOUND: it is read again rather than
// answered with the closed tab's instance (it once was, when the tab had
// stopped reading as gone meanwhile).
func TestClosedTabReadRacingDeletion(t *testing.T) {
	t.Parallel()
	g := &gatedStore{read: make(chan struct{}), release: make(chan struct{}), deleted: make(chan struct{}), listed: make(chan string, 1)}
	e := newEnvWith(t, nil, func(o *panel.Options) {
		g.Store = o.Store.(*sqlite.Store)
		o.Store = g
	})
	ctx := context.Background()
	b, conn := e.tab(t)
	v := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec), "sessionId": b})
	event[panel.Snapshot](t, conn, panel.EventOpen)
	g.holdGet = v.InstanceID

	if err := e.sess.Close(ctx, b); err != nil { // the deletion waits for the held read
		t.Fatal(err)
	}
	snap := make(chan error, 1)
	go func() {
		_, err := e.svc.Snapshot(ctx, v.InstanceID)
		snap <- err
	}()
	<-g.deleted
	// The tab stops reading as gone once the deletion is done: a listing
	// of it then asks the store.
	for listed := false; !listed; {
		if _, err := e.svc.List(ctx, b); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-g.listed:
			listed = s == b
		default:
			runtime.Gosched()
		}
	}
	close(g.release)
	if err := <-snap; switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("the closed tab's instance: %v", err)
	}
}
