package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// agentEvent is the value of a switchboard.agent.status event.
type agentEvent struct {
	AgentID string                  `json:"agentId"`
	Status  switchboard.AgentStatus `json:"status"`
	Task    string                  `json:"task"`
}

// TestReplicasAgents runs agent sessions across three real replicas on
// one Postgres (issue 16, agent status): a session registered on replica
// 0 is listed and read on the others, kept alive through replica 2, its
// status events reach a tab on replica 1, a handoff made through replica
// 1 lands in the owner's inbox, an interrupt sent to replica 2 cancels the
// work replica 0 holds, and when replica 0 is killed its
// sessions end on the survivors' lists.
func TestReplicasAgents(t *testing.T) {
	c := newCluster(t, 3)
	be := newBackend(t)
	ctx := context.Background()
	// A slow read: an agent's call runs at once (no approval) and is held
	// at the backend until cancelled.
	slowRead := switchboard.Tool{Name: "test.slowread", Description: "A slow read at /slow.", Class: switchboard.ClassRead,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: be.srv.URL + "/slow"}}}
	c.register(append(be.tools(), slowRead), "test.slowread")

	// A tab of the daemon's user (whose agents the admin token and agent
	// tokens start) holds its stream on replica 1.
	cred, err := c.at(1).CreateSession(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.at(1).Tab(cred).Events(sctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	events := make(chan agentEvent, 64)
	go func() {
		defer close(events)
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			var custom struct { // an AG-UI CUSTOM event
				Value agentEvent `json:"value"`
			}
			if ev.Kind == "switchboard.agent.status" && json.Unmarshal(ev.Data, &custom) == nil {
				events <- custom.Value
			}
		}
	}()
	// await reads the tab's events on replica 1 until agent id shows status.
	await := func(id string, status switchboard.AgentStatus) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("the tab's stream on replica 1 ended")
				}
				if ev.AgentID == id && ev.Status == status {
					return
				}
			case <-timeout:
				t.Fatalf("the tab on replica 1 did not see agent %s %s", id, status)
			}
		}
	}
	// Registered on replica 0; listed and read on 1 and 2 at once (the
	// store is the truth, not a message).
	reg, err := c.at(0).RegisterAgent(ctx, client.AgentSpec{Kind: switchboard.AgentBackground, Label: "indexer", Task: "indexing the docs"})
	if err != nil {
		t.Fatal(err)
	}
	id := reg.ID
	await(id, switchboard.AgentIdle)
	for i := 1; i <= 2; i++ {
		list, err := c.at(i).Agents(ctx, client.AgentQuery{Active: true})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, a := range list {
			found = found || (a.ID == id && a.Task == "indexing the docs" && a.Transport == "host")
		}
		if !found {
			t.Fatalf("replica %d does not list the agent registered on replica 0: %+v", i, list)
		}
		if a, err := c.at(i).Agent(ctx, id); err != nil || a.Status != switchboard.AgentIdle {
			t.Fatalf("replica %d reads %+v, %v", i, a, err)
		}
	}
	var d switchboard.WorkspaceDigest
	if err := c.at(2).Do(ctx, "GET", "/api/v1/digest", nil, &d); err != nil || !digestHas(d, id) {
		t.Fatalf("replica 2's digest misses the agent: %+v, %v", d.Agents, err)
	}

	// Kept alive through replica 2: the heartbeat is recorded in the
	// store, where every replica (and the owner's sweep) reads it.
	before, _ := c.at(1).Agent(ctx, id)
	time.Sleep(10 * time.Millisecond) // the next stamp is later at the store's microsecond precision
	hb, err := c.at(2).HeartbeatAgent(ctx, id)
	if err != nil || hb.Status != switchboard.AgentIdle || hb.HeartbeatIntervalMs <= 0 {
		t.Fatalf("heartbeat through replica 2: %+v, %v", hb, err)
	}
	if after, _ := c.at(1).Agent(ctx, id); !after.LastSeen.After(before.LastSeen) {
		t.Fatalf("replica 1 reads last seen %v after a heartbeat through replica 2 (before: %v)", after.LastSeen, before.LastSeen)
	}

	t.Run("HandoffThroughAnotherReplica", func(t *testing.T) {
		// Handed a task through replica 1; its inbox is on replica 0, the
		// owner, where agents.list of it shows the handoff.
		resp, err := c.at(1).CallTool(ctx, "agents.handoff", json.RawMessage(`{"to":"`+id+`","task":"Reindex the changelog"}`), client.CallOptions{})
		if err != nil || resp.Status != switchboard.StatusSucceeded {
			t.Fatalf("agents.handoff through replica 1: %+v, %v", resp, err)
		}
		resp, err = c.at(0).CallTool(ctx, "agents.list", json.RawMessage(`{"agentId":"`+id+`"}`), client.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Handoffs []switchboard.AgentHandoff `json:"handoffs"`
		}
		if json.Unmarshal(resp.Result, &page) != nil || len(page.Handoffs) != 1 || page.Handoffs[0].Task != "Reindex the changelog" {
			t.Fatalf("the owner's inbox: %s", resp.Result)
		}
	})

	t.Run("InterruptThroughAnotherReplica", func(t *testing.T) {
		// An agent token's call in flight on replica 0, at a slow backend.
		tok, err := c.lb().CreateToken(ctx, client.TokenRequest{Agent: "bot-interrupted"})
		if err != nil {
			t.Fatal(err)
		}
		bot := client.New("http://"+c.reps[0].addr, tok.Token, nil)
		type answer struct {
			resp switchboard.CallResponse
			err  error
		}
		done := make(chan answer, 1)
		go func() {
			resp, err := bot.CallTool(ctx, "test.slowread", json.RawMessage(`{"interrupted":true}`), client.CallOptions{})
			done <- answer{resp, err}
		}()
		select {
		case <-be.entered:
		case <-time.After(60 * time.Second):
			t.Fatal("the agent's call did not reach the backend")
		}
		var ext switchboard.AgentSession
		list, err := c.at(2).Agents(ctx, client.AgentQuery{Kind: "external", Active: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if a.Principal == "agent:bot-interrupted" {
				ext = a
			}
		}
		if ext.ID == "" {
			t.Fatalf("replica 2 does not list the agent calling through replica 0: %+v", list)
		}
		got, err := c.at(2).InterruptAgent(ctx, ext.ID)
		if err != nil || got.Status != switchboard.AgentCancelled || !strings.Contains(got.Reason, "interrupted by user:admin") {
			t.Fatalf("interrupt through replica 2: %+v, %v", got, err)
		}
		select {
		case a := <-done:
			if switchboard.CodeOf(a.err) != switchboard.CodeCancelled && a.resp.Status != switchboard.StatusCancelled {
				t.Fatalf("the call on replica 0 ended %+v, %v; want it cancelled by the interrupt", a.resp, a.err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the interrupt sent to replica 2 did not cancel the call on replica 0")
		}
		await(ext.ID, switchboard.AgentCancelled)
		for i := range c.reps {
			if a, err := c.at(i).Agent(ctx, ext.ID); err != nil || a.Status != switchboard.AgentCancelled {
				t.Fatalf("replica %d reads %+v, %v", i, a, err)
			}
		}
		if _, err := c.at(1).InterruptAgent(ctx, ext.ID); switchboard.CodeOf(err) != switchboard.CodeConflict {
			t.Fatalf("a second interrupt through replica 1: %v, want CONFLICT", err)
		}

		// The registered agent: interrupted through replica 2, ended on
		// every replica, and the tab on replica 1 hears it.
		got, err = c.at(2).InterruptAgent(ctx, id)
		if err != nil || got.Status != switchboard.AgentCancelled {
			t.Fatalf("interrupt of the registered agent through replica 2: %+v, %v", got, err)
		}
		await(id, switchboard.AgentCancelled)
		for i := range c.reps {
			if a, _ := c.at(i).Agent(ctx, id); a.Status != switchboard.AgentCancelled {
				t.Fatalf("replica %d reads %+v", i, a)
			}
		}
	})

	t.Run("KillOwner", func(t *testing.T) {
		live, err := c.at(0).RegisterAgent(ctx, client.AgentSpec{Kind: switchboard.AgentVoice, Label: "voice", Status: switchboard.AgentRunning, Task: "listening"})
		if err != nil {
			t.Fatal(err)
		}
		await(live.ID, switchboard.AgentRunning)
		c.kill(0)
		for i := 1; i <= 2; i++ {
			eventually(t, 60*time.Second, fmt.Sprintf("replica %d lists the killed replica's agent as ended", i), func() (bool, string) {
				a, err := c.at(i).Agent(ctx, live.ID)
				return err == nil && a.Status == switchboard.AgentCancelled && strings.Contains(a.Reason, "replica"), fmt.Sprintf("%+v %v", a, err)
			})
			list, err := c.at(i).Agents(ctx, client.AgentQuery{Active: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range list {
				if a.ID == live.ID {
					t.Fatalf("replica %d still lists the killed replica's agent as active: %+v", i, a)
				}
			}
		}
		await(live.ID, switchboard.AgentCancelled) // the survivor's end reaches the tab too
	})
}

func digestHas(d switchboard.WorkspaceDigest, id string) bool {
	for _, a := range d.Agents {
		if a.ID == id {
			return true
		}
	}
	return false
}
