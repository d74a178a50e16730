package daemon_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/panel"
)

// listSpec is a small agent-composed panel.
const listSpec = `{"v": 1, "root": "body",
 "sources": {"task": {"kind": "state", "path": "/task", "key": "id"}},
 "state": {"task": {"id": "t-1", "title": "Write the notes"}},
 "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Edit task"}, "children": ["form"]},
  "form": {"type": "field-form", "props": {"bind": "task", "submit": "save", "fields": [
    {"path": "title", "label": "Title", "kind": "text", "required": true}]}}
 },
 "actions": {"save": {"kind": "mutate", "source": "task", "op": "update"}}}`

// TestPanelListAcrossReplicas: panel.list naming no tab lists the open
// panels of every replica's tabs, on Postgres with each replica's own bus:
// asked of replica B it shows the panel in A's tab (with its lease) beside
// the one in B's own tab, and asked of A the same two.
func TestPanelListAcrossReplicas(t *testing.T) {
	t.Parallel()
	ds, _ := pgReplicasWith(t, 2, daemon.Options{})
	ctx := context.Background()
	planner := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"})
	open := func(d *daemon.Daemon, user string) (tab, instance string) {
		t.Helper()
		s, err := d.Sessions.Create(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := d.Sessions.Attach(ctx, s.SessionID, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		d.Panels.Attach(ctx, s.SessionID)
		res, err := d.Panels.Compose(planner, panel.ComposeRequest{Spec: json.RawMessage(listSpec), SessionID: s.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Panels.Fill(planner, panel.FillRequest{InstanceID: res.InstanceID,
			Values: map[string]json.RawMessage{"title": json.RawMessage(`"filled"`)}}); err != nil {
			t.Fatal(err)
		}
		return s.SessionID, res.InstanceID
	}
	_, onA := open(ds[0], "user:1")
	_, onB := open(ds[1], "user:2")
	want := []string{onA, onB}
	slices.Sort(want)
	for i, d := range ds {
		var got []string
		var leased int
		for deadline := time.Now().Add(10 * time.Second); ; { // presence is announced at once
			list, err := d.Panels.List(planner, "")
			if err != nil {
				t.Fatal(err)
			}
			got, leased = nil, 0
			for _, in := range list.Instances {
				got = append(got, in.InstanceID)
				if in.Lease != nil && in.Lease.Principal == "agent:planner" {
					leased++
				}
			}
			slices.Sort(got)
			if slices.Equal(got, want) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("panel.list without a tab on replica %d lists %v, want %v (both replicas' tabs)", i, got, want)
		}
		if leased != 2 {
			t.Errorf("replica %d shows %d of the planner's 2 leases", i, leased)
		}
	}
}
