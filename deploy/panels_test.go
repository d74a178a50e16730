package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// formSpec is an agent's panel with one form over its own state.
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

// panelEvent is a panel event the tab read.
type panelEvent struct {
	kind string
	sn   struct {
		InstanceID string          `json:"instanceId"`
		Version    int             `json:"version"`
		Title      string          `json:"title"`
		Spec       json.RawMessage `json:"spec"`
		Values     map[string]map[string]any
	}
}

// tabPanels reads the panel events of a tab's stream.
func tabPanels(stream *client.EventStream) <-chan panelEvent {
	out := make(chan panelEvent, 64)
	go func() {
		defer close(out)
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			if !strings.HasPrefix(ev.Kind, "panel.") || ev.Kind == "panel.canvas" {
				continue
			}
			pe := panelEvent{kind: ev.Kind}
			_ = json.Unmarshal(ev.Data, &pe.sn)
			out <- pe
		}
	}()
	return out
}

func nextPanelEvent(t *testing.T, ch <-chan panelEvent, kind, instance string) panelEvent {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the tab's stream ended before %s", kind)
			}
			if ev.kind == kind && (instance == "" || ev.sn.InstanceID == instance) {
				return ev
			}
		case <-deadline:
			t.Fatalf("the tab did not get %s for %s", kind, instance)
		}
	}
}

// attachPanels is the renderer's GET of its panels (it marks the tab as
// showing panels and answers the instances stored for it).
func attachPanels(t *testing.T, addr string, cred client.SessionCredentials) []json.RawMessage {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/sessions/"+cred.SessionID+"/panels", nil)
	req.Header.Set("Authorization", "Bearer "+cred.SessionToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Instances []json.RawMessage `json:"instances"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		t.Fatalf("GET panels on %s: %s", addr, resp.Status)
	}
	return body.Instances
}

// TestReplicasPanels: panel instances and their changes across three
// replicas on one Postgres (issue 16 items 1–2). The tab's stream is on
// replica 0; panels are composed, changed, leased and read through the
// others; then replica 0 is killed and the tab reattaches to replica 1.
func TestReplicasPanels(t *testing.T) {
	c := newCluster(t, 3, "--demo", "--canvas-policy", "open")
	ctx := context.Background()

	// Each agent has one token, used on every replica.
	tokens := map[string]string{}
	agent := func(i int, name string) *client.Client {
		if tokens[name] == "" {
			tok, err := c.at(0).CreateToken(ctx, client.TokenRequest{Agent: name, Allow: []string{"panel.*"}})
			if err != nil {
				t.Fatal(err)
			}
			tokens[name] = tok.Token
		}
		return client.New("http://"+c.reps[i].addr, tokens[name], nil)
	}
	planner1 := agent(1, "planner")

	cred, err := c.at(0).CreateSession(ctx, "user:42")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.at(0).Tab(cred).Events(sctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	events := tabPanels(stream)
	attachPanels(t, c.reps[0].addr, cred)

	// Compose through replica 1 reaches the tab on replica 0 as panel.open.
	// Replica 1 learns where the tab is over the bus; until then the call
	// answers SESSION_GONE and composes nothing.
	var composed struct {
		InstanceID string `json:"instanceId"`
		SessionID  string `json:"sessionId"`
	}
	eventually(t, 30*time.Second, "compose through replica 1", func() (bool, string) {
		resp, err := planner1.CallTool(ctx, "panel.compose", json.RawMessage(`{"spec": `+formSpec+`, "sessionId": "`+cred.SessionID+`"}`), client.CallOptions{})
		if err != nil {
			return false, err.Error()
		}
		_ = json.Unmarshal(resp.Result, &composed)
		return true, ""
	})
	if composed.SessionID != cred.SessionID || composed.InstanceID == "" {
		t.Fatalf("composed %+v", composed)
	}
	open := nextPanelEvent(t, events, "panel.open", composed.InstanceID)
	if open.sn.Title != "Edit task" {
		t.Fatalf("panel.open on replica 0: %+v", open.sn)
	}

	// An update through replica 2 reaches the tab as panel.update (made
	// with the admin token: a user's change, which takes no lease).
	patch := `{"instanceId": "` + composed.InstanceID + `", "patch": [{"op": "replace", "path": "/nodes/body/props/title", "value": "Edit the task"}]}`
	eventually(t, 30*time.Second, "patch through replica 2", func() (bool, string) {
		_, err := c.at(2).CallTool(ctx, "panel.patch", json.RawMessage(patch), client.CallOptions{})
		return err == nil, fmt.Sprint(err)
	})
	upd := nextPanelEvent(t, events, "panel.update", composed.InstanceID)
	if !strings.Contains(string(upd.sn.Spec), `"Edit the task"`) || upd.sn.Version <= open.sn.Version {
		t.Fatalf("panel.update on replica 0: %+v after %+v", upd.sn, open.sn)
	}

	// A lease taken through replica 0 is held against another agent
	// through replica 1. (An agent's lease belongs to its agent session,
	// which is per replica: docs/deploy.md.)
	fill := func(cl *client.Client, title string) error {
		_, err := cl.CallTool(ctx, "panel.fill", json.RawMessage(`{"instanceId": "`+composed.InstanceID+`", "values": {"title": "`+title+`"}}`), client.CallOptions{})
		return err
	}
	if err := fill(agent(0, "planner"), "Notes by the planner"); err != nil {
		t.Fatal(err)
	}
	nextPanelEvent(t, events, "panel.update", composed.InstanceID)
	if err := fill(agent(1, "writer"), "Notes by the writer"); switchboard.CodeOf(err) != switchboard.CodeLeaseHeld {
		t.Fatalf("fill by another agent through replica 1: %v, want LEASE_HELD", err)
	}

	// Replica 0 dies. The tab reattaches to replica 1 and gets its panels
	// from the store; panel.read_state through replica 2 still answers.
	c.kill(0)
	cancel()
	stream2, err := c.at(1).Tab(cred).Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream2.Close()
	got := attachPanels(t, c.reps[1].addr, cred)
	if len(got) != 1 || !strings.Contains(string(got[0]), composed.InstanceID) || !strings.Contains(string(got[0]), "Notes by the planner") {
		t.Fatalf("the tab reattached to replica 1 got %s", got)
	}
	resp, err := c.at(2).CallTool(ctx, "panel.read_state", json.RawMessage(`{"panelId": "`+composed.InstanceID+`"}`), client.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Values map[string]map[string]any `json:"values"`
		Lease  *struct {
			Principal string `json:"principal"`
		} `json:"lease"`
	}
	_ = json.Unmarshal(resp.Result, &st)
	if st.Values["task"]["title"] != "Notes by the planner" || st.Lease == nil || st.Lease.Principal != "agent:planner" {
		t.Fatalf("read_state through replica 2 after replica 0 died: %s", resp.Result)
	}
	// And a change through replica 2 reaches the tab on replica 1.
	events2 := tabPanels(stream2)
	eventually(t, 30*time.Second, "fill through replica 2 after the failover", func() (bool, string) {
		err := fill(c.at(2), "After the failover") // the user's change: it wins over the lease
		return err == nil, fmt.Sprint(err)
	})
	if ev := nextPanelEvent(t, events2, "panel.update", composed.InstanceID); ev.sn.Values["task"]["title"] != "After the failover" {
		t.Fatalf("panel.update on replica 1: %+v", ev.sn)
	}
	// A compose that names no tab, through replica 2, finds the one tab
	// showing panels on replica 1.
	var second struct {
		InstanceID string `json:"instanceId"`
		SessionID  string `json:"sessionId"`
	}
	eventually(t, 30*time.Second, "compose naming no tab through replica 2", func() (bool, string) {
		resp, err := agent(2, "planner").CallTool(ctx, "panel.compose", json.RawMessage(`{"spec": `+formSpec+`}`), client.CallOptions{})
		if err != nil {
			return false, err.Error()
		}
		_ = json.Unmarshal(resp.Result, &second)
		return true, ""
	})
	if second.SessionID != cred.SessionID {
		t.Fatalf("composed naming no tab: %+v", second)
	}
	nextPanelEvent(t, events2, "panel.open", second.InstanceID)
}
