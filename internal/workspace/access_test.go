package workspace_test

import (
	"context"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// The one approvals rule: the operator sees all, a user their own, a tab
// its user's (as the tab rule allows), an agent its own calls for its own
// user; no agent decides; the operator deciding another's is an override.
func TestSeesApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	forAlice := switchboard.ApprovalRequest{ID: "apr_1", Agent: "agent:planner", User: "user:alice", SessionID: "ses_a"}
	assistantInTab := switchboard.ApprovalRequest{ID: "apr_2", Agent: "agent:assistant", User: "user:alice", SessionID: "ses_a"}
	operators := switchboard.ApprovalRequest{ID: "apr_3", Agent: "agent:planner"}
	agent := func(user string) workspace.Viewer {
		return workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: user})
	}
	user := func(id string) workspace.Viewer {
		return workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalUser, ID: id})
	}
	for _, c := range []struct {
		name        string
		v           workspace.Viewer
		apr         switchboard.ApprovalRequest
		sees, mayDo bool
	}{
		{"operator, alice's", user("admin"), forAlice, true, true},
		{"alice, hers", user("alice"), forAlice, true, true},
		{"bob, alice's", user("bob"), forAlice, false, false},
		{"alice, the operator's", user("alice"), operators, false, false},
		{"alice's tab, her assistant's call in it", workspace.TabViewer("ses_a", "alice"), assistantInTab, true, true},
		{"bob's tab, alice's assistant's call", workspace.TabViewer("ses_b", "user:bob"), assistantInTab, false, false},
		{"bob's tab, alice's agent's call", workspace.TabViewer("ses_b", "user:bob"), forAlice, false, false},
		{"the planner for alice, its own", agent("user:alice"), forAlice, true, false},
		{"the planner for bob, alice's planner's", agent("user:bob"), forAlice, false, false},
		{"the operator's planner, its own", agent(""), operators, true, false},
		{"the operator's planner, alice's planner's", agent(""), forAlice, false, false},
	} {
		if got := workspace.SeesApproval(ctx, nil, c.v, c.apr); got != c.sees {
			t.Errorf("%s: sees %v, want %v", c.name, got, c.sees)
		}
		if got := workspace.MayDecide(ctx, nil, c.v, c.apr); got != c.mayDo {
			t.Errorf("%s: may decide %v, want %v", c.name, got, c.mayDo)
		}
	}
	if !workspace.Override(switchboard.Operator, forAlice) || workspace.Override(switchboard.Operator, operators) || workspace.Override("user:alice", forAlice) {
		t.Error("Override")
	}
	if f := workspace.UserFilter(agent("user:bob")); f != "user:bob" {
		t.Errorf("an agent's filter %q", f)
	}
	if f := workspace.UserFilter(user("admin")); f != "" {
		t.Errorf("the operator's filter %q", f)
	}
}
