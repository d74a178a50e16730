package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// canvasEvents reads the panel.canvas events of a tab's stream (the
// policy the tab is told is in force).
func canvasEvents(stream *client.EventStream) <-chan map[string]any {
	out := make(chan map[string]any, 16)
	go func() {
		defer close(out)
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			if ev.Kind == "panel.canvas" {
				var c map[string]any
				_ = json.Unmarshal(ev.Data, &c)
				out <- c
			}
		}
	}()
	return out
}

// TestReplicasCanvas: the canvas policy is the same on every replica
// (issue 16). A session minted with a narrowing through replica 0 has its
// tab's stream on replica 1; an agent's compose through replica 2 is
// gated by the narrowing exactly as on one replica. The host layer set
// through replica 0 is in force for a tab replica 1 holds, and every
// replica answers the same canvas.
func TestReplicasCanvas(t *testing.T) {
	c := newCluster(t, 3, "--demo", "--canvas-policy", "open")
	ctx := context.Background()
	tok, err := c.at(0).CreateToken(ctx, client.TokenRequest{Agent: "planner", Allow: []string{"panel.*"}})
	if err != nil {
		t.Fatal(err)
	}
	planner := client.New("http://"+c.reps[2].addr, tok.Token, nil)

	mint := func(body string) client.SessionCredentials {
		var cred client.SessionCredentials
		if err := c.at(0).Do(ctx, "POST", "/api/v1/sessions", json.RawMessage(body), &cred); err != nil {
			t.Fatal(err)
		}
		return cred
	}
	narrowed := mint(`{"principal": "user:1", "canvasPolicy": {"hitlOnCompose": true}}`)
	plain := mint(`{"principal": "user:2"}`)

	// Both tabs stream from replica 1.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := map[string]<-chan map[string]any{}
	for _, cred := range []client.SessionCredentials{narrowed, plain} {
		stream, err := c.at(1).Tab(cred).Events(sctx, "")
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		events[cred.SessionID] = canvasEvents(stream)
		attachPanels(t, c.reps[1].addr, cred)
	}

	// Every replica answers the narrowed session's canvas the same.
	for i := range c.reps {
		var got map[string]any
		if err := c.at(i).Do(ctx, "GET", "/api/v1/sessions/"+narrowed.SessionID+"/canvas", nil, &got); err != nil {
			t.Fatal(err)
		}
		if got["hitlOnCompose"] != true || got["allowDelete"] != true {
			t.Fatalf("replica %d: canvas of the narrowed session %v", i, got)
		}
	}

	compose := func(cred client.SessionCredentials) (switchboard.CallResponse, error) {
		return planner.CallToolWith(ctx, "panel.compose", json.RawMessage(`{"spec": `+formSpec+`, "sessionId": "`+cred.SessionID+`"}`),
			client.CallOptions{}, client.CallExtra{Async: true})
	}
	// Under the open daemon layer, the plain session's compose through
	// replica 2 runs once replica 2 knows where the tab is.
	eventually(t, 30*time.Second, "compose in the plain session through replica 2", func() (bool, string) {
		resp, err := compose(plain)
		if err != nil {
			return false, err.Error()
		}
		if resp.Status == switchboard.StatusAwaitingApproval {
			t.Fatalf("compose in the plain session is gated: %+v", resp)
		}
		got, err := planner.GetInvocation(ctx, resp.InvocationID)
		return err == nil && got.Status == switchboard.StatusSucceeded, fmt.Sprint(got.Status, got.Error, err)
	})
	// The narrowed session's compose waits for the user.
	resp, err := compose(narrowed)
	if err != nil || resp.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("compose in the narrowed session through replica 2: %+v %v, want awaiting_approval", resp, err)
	}

	// The host sets guarded through replica 0: the plain tab on replica 1
	// is told, every replica answers it, and a compose through replica 2
	// now waits for the user.
	var layers map[string]any
	if err := c.at(0).Do(ctx, "PUT", "/api/v1/canvas", json.RawMessage(`{"preset": "guarded"}`), &layers); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-events[plain.SessionID]:
		if got["preset"] != "guarded" || got["hitlOnCompose"] != true {
			t.Fatalf("the plain tab on replica 1 was told %v", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the plain tab on replica 1 was not told the host's new policy")
	}
	for i := range c.reps {
		var got struct {
			Host      map[string]any `json:"host"`
			Effective map[string]any `json:"effective"`
		}
		if err := c.at(i).Do(ctx, "GET", "/api/v1/canvas", nil, &got); err != nil {
			t.Fatal(err)
		}
		if got.Host["preset"] != "guarded" || got.Effective["preset"] != "guarded" {
			t.Fatalf("replica %d: GET /canvas %+v", i, got)
		}
	}
	resp, err = compose(plain)
	if err != nil || resp.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("compose in the plain session after PUT guarded: %+v %v, want awaiting_approval", resp, err)
	}
}
