package mcpserver

import (
	"context"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
)

// decideRecorder is an Approvals that holds one pending request and keeps
// the decisions it is asked to make.
type decideRecorder struct {
	a       switchboard.ApprovalRequest
	decided []approval.Decision
}

func (r *decideRecorder) Get(context.Context, string) (switchboard.ApprovalRequest, error) {
	return r.a, nil
}

func (r *decideRecorder) Decide(_ context.Context, _ string, d approval.Decision) (switchboard.ApprovalRequest, error) {
	r.decided = append(r.decided, d)
	return r.a, nil
}

func (r *decideRecorder) Wait(context.Context, string) (switchboard.ApprovalRequest, error) {
	return r.a, nil
}

// sessionsFor is an AgentSessions whose every session says it acts for
// user, as the workspace's registry answers UserOf.
type sessionsFor struct{ user string }

func (sessionsFor) External(context.Context, switchboard.Principal, string, string) string { return "" }
func (sessionsFor) EndExternal(context.Context, switchboard.Principal, string, string, string) {
}
func (sessionsFor) Work(ctx context.Context, _ string) (context.Context, func()) {
	return ctx, func() {}
}
func (s sessionsFor) UserOf(string) (string, bool) { return s.user, true }

// An MCP client's answer to an approval decides as the person the
// approval was asked of — the one rule the console, the tab and
// approval.Service.Decide read (workspace.AskedOf) — whatever the agent's
// live session says: a request that names no user is the operator's.
func TestInputResponseDecidesAsTheApprovalsPerson(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, user, want string
	}{
		{"names its user", "user:bob", "user:bob"},
		{"names nobody", "", switchboard.Operator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &decideRecorder{a: switchboard.ApprovalRequest{ID: "apr1", InvocationID: "inv1",
				Agent: "agent:planner", AgentID: "as_1", User: tc.user, Status: switchboard.ApprovalPending}}
			s := &Server{log: slog.New(slog.DiscardHandler), opts: Options{
				Approvals: rec, Elicitation: ElicitForm, Agents: sessionsFor{user: "user:alice"}}}
			s.answered(context.Background(), stateCaller, requestState{Invocation: "inv1", Approval: "apr1", Mode: "form"},
				&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}})
			if len(rec.decided) != 1 {
				t.Fatalf("decisions = %d, want 1", len(rec.decided))
			}
			d := rec.decided[0]
			if got := d.By.String(); got != tc.want || !d.Approve || d.Channel != approval.ChannelElicitation {
				t.Errorf("decided by %s (approve %v, channel %s), want %s approving over elicitation", got, d.Approve, d.Channel, tc.want)
			}
		})
	}
}
