package daemon_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The daemon tells the registry the approval floor, so a class the floor
// makes user-only is hidden from agents like a declared user-only tool:
// not listed, and TOOL_NOT_FOUND when called.
func TestApprovalFloorHidesFromAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: daemon.NewSecret(), Governance: daemon.GovernanceOptions{
		ApprovalFloor: map[switchboard.Class]switchboard.Approval{switchboard.ClassMutate: switchboard.ApprovalUserOnly},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ran := 0
	for _, tl := range []switchboard.Tool{
		{Name: "tasks.list", Description: "List tasks.", Class: switchboard.ClassRead, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: json.RawMessage(`{"type":"object"}`)},
	} {
		if err := d.RegisterFunc(ctx, tl, func(context.Context, json.RawMessage) (any, error) { ran++; return true, nil }); err != nil {
			t.Fatal(err)
		}
	}
	planner := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	agent := switchboard.WithPrincipal(ctx, planner) // what the registry's listing reads
	listed, err := d.Registry.List(agent, "")
	var names []string
	for _, tl := range listed {
		if tl.Origin == nil || tl.Origin.Source != switchboard.SourceCore { // not the daemon's own workspace and agents tools
			names = append(names, tl.Name)
		}
	}
	if err != nil || len(names) != 1 || names[0] != "tasks.list" {
		t.Fatalf("the agent lists %v (%v), want only tasks.list", names, err)
	}
	if _, err := d.Broker.Call(ctx, broker.CallRequest{Tool: "tasks.create", Caller: &planner}); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("the agent calls tasks.create: %v, want TOOL_NOT_FOUND", err)
	}
	if all, _ := d.Registry.List(ctx, ""); len(all) != 6 || ran != 0 { // the two tasks tools and four core ones
		t.Fatalf("without a principal: %d tools, %d ran", len(all), ran)
	}
}
