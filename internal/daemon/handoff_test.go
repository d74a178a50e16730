package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// TestAgentsToolsAndHandoffInTheDigest: agents.list and agents.handoff are
// catalog tools; a handoff is recorded in the ledger and shows in the
// target agent's digest (and its agents.list {agentId}); the digest's
// pendingApprovals name the agent session whose call waits.
func TestAgentsToolsAndHandoffInTheDigest(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "t1"}, nil }); err != nil {
		t.Fatal(err)
	}
	token := func(agent string) string {
		var tok struct {
			Token string `json:"token"`
		}
		if code, c := e.do(t, "POST", "/api/v1/tokens", wsToken, map[string]any{"agent": agent}, &tok); code != http.StatusCreated {
			t.Fatalf("token: %d %s", code, c)
		}
		return tok.Token
	}
	planner, writer := token("planner"), token("writer")
	call := func(tok, tool string, input any) (int, string, json.RawMessage) {
		t.Helper()
		var resp switchboard.CallResponse
		code, c := e.do(t, "POST", "/api/v1/tools/"+tool+"/call", tok, map[string]any{"input": input}, &resp)
		return code, c, resp.Result
	}
	digest := func(tok string) switchboard.WorkspaceDigest {
		t.Helper()
		var d switchboard.WorkspaceDigest
		if code, c := e.do(t, "GET", "/api/v1/digest", tok, nil, &d); code != http.StatusOK {
			t.Fatalf("digest: %d %s", code, c)
		}
		return d
	}

	// The writer's first request starts its session; the planner finds it.
	if d := digest(writer); len(d.Handoffs) != 0 {
		t.Fatalf("handoffs before any: %+v", d.Handoffs)
	}
	code, c, out := call(planner, "agents.list", map[string]any{})
	var page struct {
		Items []switchboard.AgentSession `json:"items"`
	}
	if code != http.StatusOK || json.Unmarshal(out, &page) != nil {
		t.Fatalf("agents.list: %d %s %s", code, c, out)
	}
	writerID, plannerID := "", ""
	for _, s := range page.Items {
		switch s.Principal {
		case "agent:writer":
			writerID = s.ID
		case "agent:planner":
			plannerID = s.ID
		}
	}
	if writerID == "" || plannerID == "" {
		t.Fatalf("agents.list shows %+v, want both agents", page.Items)
	}
	if code, c, _ := call(planner, "agents.list", map[string]any{"agentId": "agt_nope"}); code != http.StatusNotFound || c != "AGENT_NOT_FOUND" {
		t.Fatalf("agents.list of an unknown agent: %d %s", code, c)
	}

	code, c, out = call(planner, "agents.handoff", map[string]any{"to": writerID, "task": "Write the release notes",
		"artifacts": []any{map[string]any{"name": "plan", "parts": []any{map[string]any{"kind": "text", "text": "v2"}}}}})
	var h switchboard.AgentHandoff
	if code != http.StatusOK || json.Unmarshal(out, &h) != nil || h.From != plannerID || h.FromActor != "agent:planner" || h.To != writerID || h.ReturnTo != plannerID {
		t.Fatalf("agents.handoff: %d %s %s", code, c, out)
	}
	if code, c, _ := call(planner, "agents.handoff", map[string]any{"to": writerID}); code != http.StatusUnprocessableEntity || c != "SCHEMA_VIOLATION" {
		t.Fatalf("a handoff without a task: %d %s", code, c)
	}
	if !ledgerHas(t, e, "agent.handoff", map[string]any{"id": h.ID, "to": writerID, "task": "Write the release notes"}) {
		t.Error("no agent.handoff ledger entry")
	}
	d := digest(writer)
	if len(d.Handoffs) != 1 || d.Handoffs[0].ID != h.ID || d.Handoffs[0].Task != "Write the release notes" || d.Handoffs[0].FromActor != "agent:planner" || d.Handoffs[0].Artifacts != 1 {
		t.Fatalf("the writer's digest handoffs: %+v", d.Handoffs)
	}
	if d := digest(planner); len(d.Handoffs) != 0 {
		t.Fatalf("the planner's digest shows %+v", d.Handoffs)
	}
	code, _, out = call(writer, "agents.list", map[string]any{"agentId": writerID})
	var own struct {
		Items    []switchboard.AgentSession `json:"items"`
		Handoffs []switchboard.AgentHandoff `json:"handoffs"`
	}
	if code != http.StatusOK || json.Unmarshal(out, &own) != nil || len(own.Handoffs) != 1 || len(own.Handoffs[0].Artifacts) != 1 {
		t.Fatalf("agents.list of its own session: %d %s", code, out)
	}

	// An approval waiting for the user names the agent session, not the principal.
	var resp switchboard.CallResponse
	if code, c := e.do(t, "POST", "/api/v1/tools/tasks.create/call", writer, map[string]any{"input": map[string]any{}, "async": true}, &resp); code != http.StatusAccepted {
		t.Fatalf("call: %d %s", code, c)
	}
	d = digest(wsToken)
	if len(d.PendingApprovals) != 1 || d.PendingApprovals[0].AgentID != writerID || !d.PendingApprovals[0].Escalated {
		t.Fatalf("pendingApprovals: %+v, want the writer's session %s", d.PendingApprovals, writerID)
	}
}
