package panel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/session"
)

// appsKey marks a caller whose client shows panels itself, as
// mcpserver.ShowsApps does for the daemon.
type appsKey struct{}

func showsPanels(ctx context.Context) bool { return ctx.Value(appsKey{}) != nil }

const noteSpec = `{"v": 1, "root": "body", "nodes": {"body": {"type": "panel-body", "props": {"title": "Note"}, "children": ["t"]},
 "t": {"type": "text", "props": {"text": "hello"}}}}`

// With no tab, a caller that shows panels itself composes into its chat
// surface; one that does not still gets TOOL_UNAVAILABLE; another
// principal reads the panel as not found; and a new service over the same
// store (a restart) gives the owner its panel back.
func TestChatSurface(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, nil, func(o *panel.Options) { o.ShowsPanels = showsPanels })
	plain := switchboard.WithPrincipal(context.Background(), agentP)
	apps := context.WithValue(plain, appsKey{}, true)

	if _, err := e.svc.Compose(plain, panel.ComposeRequest{Spec: json.RawMessage(noteSpec)}); switchboard.CodeOf(err) != switchboard.CodeToolUnavailable {
		t.Fatalf("compose with no tab and no chat: %v", err)
	}
	res, err := e.svc.Compose(apps, panel.ComposeRequest{Spec: json.RawMessage(noteSpec)})
	if err != nil || !strings.HasPrefix(res.SessionID, "chat_") {
		t.Fatalf("compose in the chat: %+v %v", res.Snapshot, err)
	}
	id := res.InstanceID
	other := context.WithValue(switchboard.WithPrincipal(context.Background(),
		switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "assistant", User: "user:bob"}), appsKey{}, true)
	if _, err := e.svc.Snapshot(other, id); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("the same agent for another user: %v", err)
	}
	if l, _ := e.svc.List(other, ""); len(l.Instances) != 0 {
		t.Fatalf("listed to another user: %+v", l.Instances)
	}
	if _, err := e.svc.Snapshot(plain, id); err != nil {
		t.Fatalf("the owner without the extension: %v", err)
	}

	again := panel.New(panel.Options{Caller: e.br, Tabs: e.sess, Tools: e.reg, Store: e.store, ShowsPanels: showsPanels})
	t.Cleanup(again.Close)
	if l, err := again.List(apps, ""); err != nil || len(l.Instances) != 1 || l.Instances[0].InstanceID != id {
		t.Fatalf("after a restart the owner lists %+v (%v)", l.Instances, err)
	}
}

// A chat surface ends SurfaceIdle after its principal's last call: its
// panels are dropped and their stored rows deleted, as a gone tab's are.
func TestChatSurfaceEnds(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, nil, func(o *panel.Options) {
		o.ShowsPanels = showsPanels
		o.SurfaceIdle = 20 * time.Millisecond
	})
	apps := context.WithValue(switchboard.WithPrincipal(context.Background(), agentP), appsKey{}, true)
	res, err := e.svc.Compose(apps, panel.ComposeRequest{Spec: json.RawMessage(noteSpec)})
	if err != nil {
		t.Fatal(err)
	}
	plain := switchboard.WithPrincipal(context.Background(), agentP) // reads without keeping it alive
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := e.svc.Snapshot(plain, res.InstanceID)
		rows, lerr := e.store.PanelInstanceList(context.Background(), res.SessionID)
		if switchboard.CodeOf(err) == switchboard.CodeNotFound && lerr == nil && len(rows) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle surface's panel is still there: %v, %d stored rows", err, len(rows))
		}
		time.Sleep(5 * time.Millisecond) // waiting for the surface's timer; nothing to subscribe to
	}
}

const chatFormSpec = `{"v": 1, "root": "body", "sources": {"note": {"kind": "state", "path": "/note"}}, "state": {"note": {"title": "Draft"}},
 "nodes": {"body": {"type": "panel-body", "props": {"title": "Note"}, "children": ["form"]},
  "form": {"type": "field-form", "props": {"bind": "note", "fields": [{"path": "title", "label": "Title", "kind": "text"}]}}}}`

// A sessionless client's requests may reach any replica: each keeps the
// chat surface, and a change made through one is what the other reads
// and changes next.
func TestChatSurfaceAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	b := bus.NewLocal()
	mk := func(name string) *panel.Service {
		sess, err := session.New(session.Options{Store: e.store, Bus: b, Replica: name, Presence: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sess.Shutdown)
		svc := panel.New(panel.Options{Caller: e.br, Tabs: sess, Tools: e.reg, Store: e.store, Bus: b, Asker: newAsker(t, b, name), Canvases: e.store, ShowsPanels: showsPanels})
		t.Cleanup(svc.Close)
		return svc
	}
	a, bsvc := mk("rep_a"), mk("rep_b")
	apps := context.WithValue(switchboard.WithPrincipal(context.Background(), agentP), appsKey{}, true)
	res, err := a.Compose(apps, panel.ComposeRequest{Spec: json.RawMessage(chatFormSpec)})
	if err != nil {
		t.Fatal(err)
	}
	id := res.InstanceID
	fill := func(svc *panel.Service, title string) {
		t.Helper()
		v, _ := json.Marshal(title)
		if r, err := svc.Fill(apps, panel.FillRequest{InstanceID: id, Values: map[string]json.RawMessage{"title": v}}); err != nil || len(r.Applied) != 1 {
			t.Fatalf("fill %q: %+v %v", title, r, err)
		}
	}
	title := func(svc *panel.Service) any {
		t.Helper()
		sn, err := svc.Snapshot(apps, id)
		if err != nil {
			t.Fatal(err)
		}
		return sn.Values["note"]["title"]
	}
	fill(bsvc, "from B")
	if got := title(a); got != "from B" {
		t.Fatalf("replica A reads %v after B's fill", got)
	}
	fill(a, "from A")
	if got := title(bsvc); got != "from A" {
		t.Fatalf("replica B reads %v after A's fill", got)
	}
}
