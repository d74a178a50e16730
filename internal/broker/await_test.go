package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// TestSubmitAndAwait: Submit answers once the call is recorded, and Await
// — in this broker, or in another one on the same store and bus, as on
// another replica — returns the record once it reaches the asked state.
func TestSubmitAndAwait(t *testing.T) {
	t.Parallel()
	b := bus.NewLocal()
	e := newEnv(t, func(o *broker.Options) { o.Bus = b; o.RecordAfter = -1 })
	blk := newBlocker()
	e.goTool(t, slowTool("test.block", 0, 0, switchboard.CostCheap), blk.fn)
	reg, err := registry.New(context.Background(), e.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := broker.New(broker.Options{Store: e.store, Registry: reg, Bus: b})
	t.Cleanup(other.Close)

	ctx := context.Background()
	inv, err := e.b.Submit(ctx, broker.CallRequest{Tool: "test.block", Caller: &operator})
	if err != nil || inv.ID == "" || inv.Status.Terminal() {
		t.Fatalf("Submit = %+v, %v; want a recorded call in flight", inv, err)
	}
	<-blk.started
	if got, err := e.b.Await(ctx, inv.ID, broker.Decided); err != nil || got.Status != switchboard.StatusDispatched {
		t.Fatalf("Await(Decided) = %s, %v; want dispatched at once", got.Status, err)
	}
	here, there := make(chan switchboard.Invocation, 1), make(chan switchboard.Invocation, 1)
	go func() { got, _ := e.b.Await(ctx, inv.ID, nil); here <- got }()
	go func() { got, _ := other.Await(ctx, inv.ID, broker.Terminal); there <- got }()
	close(blk.release)
	for _, ch := range []chan switchboard.Invocation{here, there} {
		if got := <-ch; got.Status != switchboard.StatusSucceeded || string(got.Result) != `{"ok":true}` {
			t.Fatalf("Await = %+v; want the succeeded record", got)
		}
	}
}

func TestAwaitEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *broker.Options) { o.RecordAfter = -1 })
	blk := newBlocker()
	e.goTool(t, slowTool("test.block", 0, 0, switchboard.CostCheap), blk.fn)
	ctx := context.Background()
	if _, err := e.b.Await(ctx, "no-such-call", nil); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("Await of an unknown id: %v, want NOT_FOUND", err)
	}
	inv, err := e.b.Submit(ctx, broker.CallRequest{Tool: "test.block", Caller: &operator})
	if err != nil {
		t.Fatal(err)
	}
	<-blk.started
	stop := errors.New("the caller gave up")
	wctx, cancel := context.WithCancelCause(ctx)
	cancel(stop)
	if got, err := e.b.Await(wctx, inv.ID, nil); !errors.Is(err, stop) || got.Status.Terminal() {
		t.Fatalf("Await with an ended context = %s, %v; want the cause", got.Status, err)
	}
	close(blk.release)
	if got, err := e.b.Await(ctx, inv.ID, nil); err != nil || got.Status != switchboard.StatusSucceeded {
		t.Fatalf("Await = %s, %v", got.Status, err)
	}
	// A call refused before it is recorded: no record, the refusal.
	if got, err := e.b.Submit(ctx, broker.CallRequest{Tool: "test.nothing", Caller: &operator}); got.ID != "" || switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("Submit of an unknown tool = %+v, %v", got, err)
	}
}

// TestCallerIsExplicit: the request's Caller is who calls, with no
// principal in the context: it is recorded and the tool runs as it.
func TestCallerIsExplicit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var ran switchboard.Principal
	e.goTool(t, echoTool, func(ctx context.Context, _ json.RawMessage) (any, error) {
		ran, _ = switchboard.PrincipalFrom(ctx)
		return map[string]string{"ok": "yes"}, nil
	})
	bot := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", User: "user:alice"}
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: echoTool.Name, Input: []byte(`{"msg":"hi"}`), Caller: &bot, AgentSession: "ag-1"})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Caller != "agent:bot" || inv.AgentID != "ag-1" || ran.String() != "agent:bot" || ran.ActsFor() != "user:alice" {
		t.Fatalf("record caller %q agent %q, tool ran as %v (for %s)", inv.Caller, inv.AgentID, ran, ran.ActsFor())
	}
}

// TestIdempotencyKeyIsPerUser: two tokens of one agent name acting for two
// users are two callers: the same key and input from bob runs bob's call
// instead of replaying alice's result to him.
func TestIdempotencyKeyIsPerUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.goTool(t, echoTool, func(ctx context.Context, _ json.RawMessage) (any, error) {
		runs.Add(1)
		p, _ := switchboard.PrincipalFrom(ctx)
		return map[string]string{"for": p.ActsFor()}, nil
	})
	ctx := context.Background()
	call := func(user string) switchboard.Invocation {
		t.Helper()
		p := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: user}
		inv, err := e.b.Call(ctx, broker.CallRequest{Tool: echoTool.Name, Input: []byte(`{"msg":"hi"}`), Caller: &p, IdempotencyKey: "k1"})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	alice, again, bob := call("user:alice"), call("user:alice"), call("user:bob")
	if again.ID != alice.ID {
		t.Fatalf("alice's retry ran anew (%s, first %s)", again.ID, alice.ID)
	}
	if bob.ID == alice.ID || string(bob.Result) != `{"for":"user:bob"}` || runs.Load() != 2 {
		t.Fatalf("bob got %s %s (alice's %s); the tool ran %d times", bob.ID, bob.Result, alice.ID, runs.Load())
	}
}
