package panel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
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
