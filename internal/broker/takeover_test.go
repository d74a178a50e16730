package broker_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// TestApprovalUsedByATakeoverIsNotOverwritten: a replica cut off from
// the store past the replica timeout still waits for a call's approval
// while a survivor has taken the call over (Resume). One of the two uses
// the approval and runs the call; the other's wait fails ("already used")
// and must not write that failure over the running call: both answer
// with the one outcome, and the tool runs once.
func TestApprovalUsedByATakeoverIsNotOverwritten(t *testing.T) {
	ctx := context.Background()
	st, l := openLedger(t)
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 4)
	svc, err := approval.New(approval.Options{Store: st, Ledger: l, Notify: func(_ context.Context, kind string, data []byte) {
		if kind == approval.EventRequest {
			var ev approval.RequestEvent
			_ = json.Unmarshal(data, &ev)
			asked <- ev.ApprovalID
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	tool := switchboard.Tool{Name: "tasks.delete", Description: "Delete a task.", Class: switchboard.ClassMutate,
		Approval: switchboard.ApprovalHITL, Binding: &switchboard.Binding{Go: true}}
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
		t.Fatal(err)
	}
	b := bus.NewLocal()
	var runs atomic.Int32
	started, release := make(chan struct{}, 2), make(chan struct{})
	run := func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return map[string]bool{"deleted": true}, nil
	}
	mk := func() *broker.Broker {
		br := broker.New(broker.Options{Store: st, Registry: reg, Policy: svc, Bus: b, OnActivity: l.Observe})
		br.Handle(tool.Name, run)
		t.Cleanup(br.Close)
		return br
	}
	cutOff, survivor := mk(), mk()

	type answer struct {
		inv switchboard.Invocation
		err error
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	bot := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}
	go func() {
		inv, err := cutOff.Call(ctx, broker.CallRequest{Tool: tool.Name, Input: json.RawMessage(`{"id":"t1"}`), Caller: &bot})
		first <- answer{inv, err}
	}()
	var apr string
	select {
	case apr = <-asked:
	case got := <-first:
		t.Fatalf("the call did not wait for approval: %s %v", got.inv.Status, got.err)
	}
	a, err := svc.Get(ctx, apr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		inv, err := survivor.Resume(ctx, a.InvocationID, apr)
		second <- answer{inv, err}
	}()
	if _, err := svc.Decide(ctx, apr, approval.Decision{By: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}, Approve: true}); err != nil {
		t.Fatal(err)
	}
	<-started // one of them runs it, and holds it running
	// The other's wait has failed by now or fails meanwhile; whatever it
	// wrote, the record must still be the running call's.
	close(release)
	for _, ch := range []chan answer{first, second} {
		if got := <-ch; got.err != nil || got.inv.Status != switchboard.StatusSucceeded {
			t.Errorf("an answer: %s %v; want the one succeeded outcome", got.inv.Status, got.err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if inv, err := st.InvocationGet(ctx, a.InvocationID); err != nil || inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("the record: %s %v", inv.Status, err)
	}
}
