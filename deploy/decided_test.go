package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestApprovalDecidedWhileReplicaDown: calls awaiting approval on a
// replica that is killed, decided through a survivor before it takes the
// dead replica's work over. The approved call runs exactly once, the
// denied one ends denied, and each approval and its invocation agree;
// retries with the call's idempotency key, made while nobody owns it, never
// run it again.
func TestApprovalDecidedWhileReplicaDown(t *testing.T) {
	c := newCluster(t, 2)
	be := newBackend(t)
	ctx := context.Background()
	lb := c.lb()
	c.register(be.tools(), "test.send")

	tok, err := lb.CreateToken(ctx, client.TokenRequest{Agent: "bot-down", User: "user:alice"})
	if err != nil {
		t.Fatal(err)
	}
	agent := client.New("http://"+c.reps[0].addr, tok.Token, nil)
	call := func(body, key string) switchboard.CallResponse {
		t.Helper()
		resp, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(body), client.CallOptions{},
			client.CallExtra{Async: true, IdempotencyKey: key})
		if err != nil || resp.Status != switchboard.StatusAwaitingApproval {
			t.Fatalf("the agent's call %s: %+v %v", body, resp, err)
		}
		return resp
	}
	approved := call(`{"down":"approve"}`, "down-approve")
	denied := call(`{"down":"deny"}`, "down-deny")
	pending, err := c.at(1).Approvals(ctx, client.ApprovalQuery{})
	if err != nil || len(pending) != 2 {
		t.Fatalf("pending approvals seen on replica 1: %+v %v", pending, err)
	}
	aprOf := map[string]string{}
	for _, a := range pending {
		aprOf[a.InvocationID] = a.ID
	}

	c.kill(0)
	// Decided on the survivor at once, before the dead replica's lease
	// lapses (timeout) and its calls are taken over.
	if _, err := c.at(1).Decide(ctx, aprOf[approved.InvocationID], client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.at(1).Decide(ctx, aprOf[denied.InvocationID], client.Decision{Approve: false, Reason: "not now"}); err != nil {
		t.Fatal(err)
	}
	// The agent retries through the survivor while the call has no owner.
	retry := client.New("http://"+c.reps[1].addr, tok.Token, nil)
	var wg sync.WaitGroup
	retries := make([]switchboard.CallResponse, 4)
	for i := range retries {
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			retries[i], _ = retry.CallToolWith(rctx, "test.send", json.RawMessage(`{"down":"approve"}`), client.CallOptions{},
				client.CallExtra{IdempotencyKey: "down-approve"})
		})
	}

	for _, want := range []struct {
		id     string
		status switchboard.Status
		apr    switchboard.ApprovalStatus
	}{
		{approved.InvocationID, switchboard.StatusSucceeded, switchboard.ApprovalApproved},
		{denied.InvocationID, switchboard.StatusDenied, switchboard.ApprovalDenied},
	} {
		var inv switchboard.Invocation
		eventually(t, 60*time.Second, "a survivor settles "+want.id, func() (bool, string) {
			inv, err = lb.GetInvocation(ctx, want.id)
			return err == nil && inv.Status.Terminal(), fmt.Sprint(inv.Status, err)
		})
		if inv.Status != want.status {
			t.Errorf("invocation %s ended %s %+v, want %s (its approval was %s)", want.id, inv.Status, inv.Error, want.status, want.apr)
		}
		a, err := lb.Approval(ctx, aprOf[want.id])
		if err != nil || a.Status != want.apr {
			t.Errorf("approval of %s: %+v %v, want %s", want.id, a, err, want.apr)
		}
	}
	wg.Wait()
	for i, r := range retries {
		// In flight, a keyed retry over HTTP is CONFLICT ("retry later");
		// never a second invocation.
		if r.InvocationID != "" && (r.InvocationID != approved.InvocationID || r.Status != switchboard.StatusSucceeded) {
			t.Errorf("retry %d: %+v, want CONFLICT or the succeeded %s", i, r, approved.InvocationID)
		}
	}
	again, err := retry.CallToolWith(ctx, "test.send", json.RawMessage(`{"down":"approve"}`), client.CallOptions{},
		client.CallExtra{IdempotencyKey: "down-approve"})
	if err != nil || again.InvocationID != approved.InvocationID || again.Status != switchboard.StatusSucceeded {
		t.Errorf("a retry after the outcome: %+v %v, want the replayed success of %s", again, err, approved.InvocationID)
	}
	if got := be.count(`{"down":"approve"}`); got != 1 {
		t.Errorf("the approved call ran %d times at the backend, want once", got)
	}
	// Resumed by the survivor, it still acts for the person it was made
	// for, not for the operator.
	if got := be.sub(`{"down":"approve"}`); got != "user:alice" {
		t.Errorf("the resumed call's assertion claims sub %q, want user:alice", got)
	}
	if got := be.count(`{"down":"deny"}`); got != 0 {
		t.Errorf("the denied call ran %d times at the backend", got)
	}
	rep, err := c.at(1).VerifyActivity(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("activity verify: %+v %v", rep, err)
	}
}
