package panel_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/session"
)

// TestCanvasOnEveryReplica: the host layer set through one replica and a
// session's narrowing minted through the other are both in force on each
// (issue 16): before, each lived only in the process that took it, so the
// other replica enforced a wider surface.
func TestCanvasOnEveryReplica(t *testing.T) {
	t.Parallel()
	p := newReplicaPair(t)
	ctx := context.Background()

	// The narrowing goes in with the session (as POST /sessions does); no
	// service is told of it.
	narrowed, err := p.sessA.CreateFor(ctx, session.OpenRequest{Principal: "user:1", Canvas: json.RawMessage(`{"hitlOnCompose":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := p.sessA.CreateFor(ctx, session.OpenRequest{Principal: "user:2"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := p.sessA.Attach(ctx, narrowed.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p.svcA.Attach(ctx, narrowed.SessionID)

	// The host opens the surface through B: A's tab is told, with its
	// narrowing still in force.
	if _, err := p.svcB.SetHostCanvas(panel.CanvasPolicy{Preset: panel.CanvasOpen}); err != nil {
		t.Fatal(err)
	}
	if c := event[panel.Canvas](t, conn, panel.EventCanvas); !c.HITLOnCompose || !c.AllowDelete {
		t.Fatalf("tab on A was told %s, want open with hitlOnCompose kept by its narrowing", c)
	}
	for name, svc := range map[string]*panel.Service{"A": p.svcA, "B": p.svcB} {
		if l := svc.CanvasLayers(""); l.Host.Preset != panel.CanvasOpen || l.Effective.Preset != panel.CanvasOpen {
			t.Fatalf("replica %s: host layer %+v effective %s, want open", name, l.Host, l.Effective)
		}
		if c := svc.CanvasFor(narrowed.SessionID); !c.HITLOnCompose || !c.AllowDelete {
			t.Fatalf("replica %s: narrowed session under %s", name, c)
		}
		if c := svc.CanvasFor(plain.SessionID); c.Preset != panel.CanvasOpen {
			t.Fatalf("replica %s: plain session under %s, want open", name, c)
		}
	}

	// An agent's compose asked of B for the tab A holds waits for the
	// user, as it would on one replica; in the plain session it does not.
	agent := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	compose := func(session string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"sessionId": session, "spec": json.RawMessage(formSpec)})
		return b
	}
	if !p.svcB.NeedsApproval(agent, switchboard.Tool{Name: panel.ToolCompose}, compose(narrowed.SessionID)) {
		t.Fatal("compose in the narrowed session through B is not gated")
	}
	if p.svcB.NeedsApproval(agent, switchboard.Tool{Name: panel.ToolCompose}, compose(plain.SessionID)) {
		t.Fatal("compose in the plain session under an open host layer is gated")
	}

	// A compose naming no tab goes to the one tab showing panels, A's
	// narrowed one: B gates it by that tab's policy once it knows of the
	// tab (presence is announced over the bus at once; the deadline is a
	// bound, not a pause).
	unnamed, _ := json.Marshal(map[string]any{"spec": json.RawMessage(formSpec)})
	for deadline := time.Now().Add(10 * time.Second); !p.svcB.NeedsApproval(agent, switchboard.Tool{Name: panel.ToolCompose}, unnamed); {
		if time.Now().After(deadline) {
			t.Fatal("a compose naming no tab, through B, is not gated by the narrowing of the only tab (on A)")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The agent's patch of its panel in that tab, asked of B (which holds
	// no copy of the instance), waits for the user as on A.
	res, err := p.svcA.Compose(switchboard.WithPrincipal(ctx, agent), panel.ComposeRequest{Spec: json.RawMessage(formSpec), SessionID: narrowed.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"instanceId": res.InstanceID,
		"patch": json.RawMessage(`[{"op": "replace", "path": "/nodes/body/props/title", "value": "Edit the task"}]`)})
	for name, svc := range map[string]*panel.Service{"A": p.svcA, "B": p.svcB} {
		if !svc.NeedsApproval(agent, switchboard.Tool{Name: panel.ToolPatch}, patch) {
			t.Fatalf("replica %s: the agent's patch in the narrowed session is not gated", name)
		}
	}

	// Guarded again through A: B enforces it at once (it reads the store).
	if _, err := p.svcA.SetHostCanvas(panel.CanvasPolicy{Preset: panel.CanvasGuarded}); err != nil {
		t.Fatal(err)
	}
	if c := p.svcB.CanvasFor(plain.SessionID); c.Preset != panel.CanvasGuarded {
		t.Fatalf("B after A set guarded: %s", c)
	}
	if !p.svcB.NeedsApproval(agent, switchboard.Tool{Name: panel.ToolCompose}, compose(plain.SessionID)) {
		t.Fatal("compose through B is not gated after A set the host layer guarded")
	}
}
