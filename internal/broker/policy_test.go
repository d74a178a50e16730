package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// gate is a minimal Policy: it forbids one tool and lets a decide func
// settle approvals, to prove the seam's order and records.
type gate struct {
	forbid string
	decide func(inv switchboard.Invocation) error
}

func (g *gate) Admit(_ context.Context, _ switchboard.Principal, t switchboard.Tool) error {
	if t.Name == g.forbid {
		return switchboard.Errorf(switchboard.CodeForbidden, "%s is not yours to run", t.Name)
	}
	return nil
}

func (g *gate) NeedsApproval(_ switchboard.Principal, t switchboard.Tool, _ json.RawMessage) bool {
	return t.Approval == switchboard.ApprovalHITL
}

func (g *gate) RequestApproval(_ context.Context, inv switchboard.Invocation, _ switchboard.Tool) (string, error) {
	return "apr-" + inv.ID, nil
}

func (g *gate) AwaitApproval(_ context.Context, id string, inv switchboard.Invocation) error {
	if id != "apr-"+inv.ID {
		return switchboard.Errorf(switchboard.CodeInternal, "approval %s does not bind to %s", id, inv.ID)
	}
	return g.decide(inv)
}

func TestPolicySeam(t *testing.T) {
	g := &gate{forbid: "test.secret"}
	e := newEnv(t, func(o *broker.Options) { o.Policy = g })
	secret, risky := echoTool, echoTool
	secret.Name, risky.Name = "test.secret", "test.risky"
	risky.Approval = switchboard.ApprovalHITL
	e.goTool(t, secret, echo)
	e.goTool(t, risky, echo)
	in := json.RawMessage(`{"msg":"x"}`)

	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.secret", Input: in, Caller: &operator})
	wantCode(t, err, switchboard.CodeForbidden)
	if inv.ID != "" {
		t.Fatal("a forbidden call was recorded")
	}
	// The policy comes before validation: bad input to a forbidden tool is
	// still FORBIDDEN, so the error does not describe the tool's schema.
	_, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "test.secret", Input: json.RawMessage(`{"msg":7}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeForbidden)

	g.decide = func(inv switchboard.Invocation) error {
		if inv.Status != switchboard.StatusAwaitingApproval {
			t.Errorf("approval sees status %s, want awaiting_approval", inv.Status)
		}
		return switchboard.Errorf(switchboard.CodeUserDenied, "the user said no")
	}
	inv, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "test.risky", Input: in, Caller: &operator})
	wantCode(t, err, switchboard.CodeUserDenied)
	terminal(t, e, inv.ID, switchboard.StatusDenied, switchboard.CodeUserDenied)

	g.decide = func(switchboard.Invocation) error { return nil }
	if inv, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "test.risky", Input: in, Caller: &operator}); err != nil || inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("approved call: %+v %v", inv, err)
	}
}

// A Durable call whose context ends with that cause while it awaits
// approval is left awaiting approval, to be resumed; ended with another
// cause, it is cancelled as before.
func TestDurableCallLeftAwaitingApproval(t *testing.T) {
	stopped := errors.New("stopping")
	g := &gate{}
	e := newEnv(t, func(o *broker.Options) { o.Policy = g })
	risky := echoTool
	risky.Name, risky.Approval = "test.risky", switchboard.ApprovalHITL
	e.goTool(t, risky, echo)
	for _, tc := range []struct {
		cause error
		want  switchboard.Status
	}{{stopped, switchboard.StatusAwaitingApproval}, {errors.New("gone"), switchboard.StatusCancelled}} {
		ctx, cancel := context.WithCancelCause(context.Background())
		g.decide = func(switchboard.Invocation) error {
			cancel(tc.cause)
			return context.Cause(ctx) // as approval.Service does for approval.ErrStopped
		}
		inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.risky", Input: json.RawMessage(`{"msg":"x"}`), Durable: stopped, Caller: &operator})
		if err == nil {
			t.Fatalf("cause %v: no error", tc.cause)
		}
		got, gerr := e.b.Get(context.Background(), inv.ID)
		if gerr != nil || got.Status != tc.want {
			t.Fatalf("cause %v: %+v %v, want %s", tc.cause, got, gerr, tc.want)
		}
	}
}

// The record names the person its call was made for and, for a call that
// waits for approval, its approval request from its first write: readers
// take the id from the record instead of searching approvals.
func TestRecordNamesUserAndApproval(t *testing.T) {
	g := &gate{}
	e := newEnv(t, func(o *broker.Options) { o.Policy = g })
	risky := echoTool
	risky.Name, risky.Approval = "test.risky", switchboard.ApprovalHITL
	e.goTool(t, echoTool, echo)
	e.goTool(t, risky, echo)
	in := json.RawMessage(`{"msg":"x"}`)
	alice := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: "user:alice"}

	var asked switchboard.Invocation
	g.decide = func(inv switchboard.Invocation) error {
		asked = inv
		stored, err := e.b.Get(context.Background(), inv.ID)
		if err != nil || stored.ApprovalID == "" || stored.ApprovalID != inv.ApprovalID {
			t.Errorf("while awaiting: stored %+v %v, want approval %q", stored, err, inv.ApprovalID)
		}
		return nil
	}
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.risky", Input: in, Caller: &alice})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.b.Get(context.Background(), inv.ID)
	if err != nil || got.User != "user:alice" || got.ApprovalID == "" || got.ApprovalID != asked.ApprovalID || got.Caller != "agent:planner" {
		t.Fatalf("approved call's record: %+v %v", got, err)
	}

	inv, err = e.b.Call(context.Background(), broker.CallRequest{Tool: echoTool.Name, Input: in, Caller: &alice})
	if err != nil {
		t.Fatal(err)
	}
	if got, err = e.b.Get(context.Background(), inv.ID); err != nil || got.User != "user:alice" || got.ApprovalID != "" {
		t.Fatalf("a call without approval: %+v %v", got, err)
	}
	// An agent acting for nobody named acts for the operator.
	op := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	inv, _ = e.b.Call(context.Background(), broker.CallRequest{Tool: echoTool.Name, Input: in, Caller: &op})
	if got, err = e.b.Get(context.Background(), inv.ID); err != nil || got.User != switchboard.Operator {
		t.Fatalf("the operator's agent: %+v %v", got, err)
	}
}
