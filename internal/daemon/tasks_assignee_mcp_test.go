package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// An assigned agent works its task over MCP, on SQLite and Postgres: a
// tools/call whose _meta "switchboard/task" names the task is admitted
// as the Switchboard-Task header is — it counts against the budget,
// marks the task working and becomes a step; a tool outside the envelope
// (though within the agent's own scope) is the unknown tool it is for
// any MCP client, and never runs; another agent's token naming the task
// is refused with the task's code; the call past the budget is
// BUDGET_EXCEEDED and fails the task.
func TestAssignedAgentWorksTaskOverMCP(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			e := newAssigneeDaemon(t, d)
			planner := e.mint(t, "planner", "user:alice", "finance.*", "design.*")
			keeper := e.mint(t, "bookkeeper", "user:alice", "*")
			bobs := e.mint(t, "bookkeeper", "user:bob", "*")
			tk, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "Reconcile the Q3 invoices", Assignee: "agent:bookkeeper",
				Envelope: switchboard.TaskEnvelope{Allow: []string{"finance.*"}, MaxCalls: 3}})
			if err != nil {
				t.Fatal(err)
			}
			connect := func(token string) *mcp.ClientSession {
				c := mcp.NewClient(&mcp.Implementation{Name: "agent-client", Version: "1"}, nil)
				cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			call := func(cs *mcp.ClientSession, tool, task string) (*mcp.CallToolResult, error) {
				var meta mcp.Meta
				if task != "" {
					meta = mcp.Meta{"switchboard/task": task}
				}
				return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Meta: meta})
			}
			code := func(res *mcp.CallToolResult) string {
				if res == nil || !res.IsError || len(res.Content) == 0 {
					return ""
				}
				text, _ := res.Content[0].(*mcp.TextContent)
				c, _, _ := strings.Cut(text.Text, ":")
				return c
			}
			cs := connect(keeper)

			res, err := call(cs, "finance-read", tk.ID)
			if err != nil || res.IsError {
				t.Fatalf("the assignee's call for its task: %+v, %v", res, err)
			}
			invID, _ := res.Meta["switchboard/invocationId"].(string)
			tk, _ = e.client(keeper).Task(ctx, tk.ID)
			if tk.Status != switchboard.TaskWorking || tk.Usage.Calls != 1 || len(tk.Steps) != 1 || invID == "" ||
				tk.Steps[0].InvocationID != invID || tk.Steps[0].Tool != "finance.read" || tk.Steps[0].Status != "succeeded" {
				t.Fatalf("after one MCP call the task is %s, usage %+v, steps %+v (invocation %q)", tk.Status, tk.Usage, tk.Steps, invID)
			}

			// Outside the envelope: what any client gets for a tool that
			// does not exist.
			_, unknown := call(cs, "no-such-tool", "")
			_, err = call(cs, "billing-read", tk.ID)
			if err == nil || unknown == nil || strings.ReplaceAll(err.Error(), "billing-read", "no-such-tool") != unknown.Error() {
				t.Fatalf("a call outside the task's envelope: %v; an unknown tool: %v", err, unknown)
			}
			if e.runs("billing.read") != 0 {
				t.Fatal("billing.read ran under a task that does not allow it")
			}
			if res, err := call(cs, "billing-read", ""); err != nil || res.IsError {
				t.Fatalf("the same agent's own call of billing-read: %+v, %v", res, err)
			}

			// Only the assignee calls for it.
			for token, want := range map[string]switchboard.Code{bobs: switchboard.CodeNotFound, planner: switchboard.CodeForbidden} {
				res, err := call(connect(token), "finance-read", tk.ID)
				if err != nil || code(res) != string(want) {
					t.Fatalf("another agent calling for the task: %+v, %v; want %s", res, err, want)
				}
			}
			tk, _ = e.client(keeper).Task(ctx, tk.ID)
			if tk.Usage.Calls != 1 || len(tk.Steps) != 1 || e.runs("finance.read") != 1 {
				t.Fatalf("after the refused calls: usage %+v, steps %+v, finance.read ran %d; want one call, one step", tk.Usage, tk.Steps, e.runs("finance.read"))
			}

			// The call budget.
			small, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "One look", Assignee: "agent:bookkeeper",
				Envelope: switchboard.TaskEnvelope{MaxCalls: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := call(cs, "design-read", small.ID); err != nil || res.IsError {
				t.Fatalf("%+v, %v", res, err)
			}
			if res, err := call(cs, "design-read", small.ID); err != nil || code(res) != string(switchboard.CodeBudgetExceeded) {
				t.Fatalf("a call past the budget: %+v, %v; want BUDGET_EXCEEDED", res, err)
			}
			small, _ = e.client(planner).Task(ctx, small.ID)
			if small.Status != switchboard.TaskFailed || small.Error == nil || small.Error.Code != switchboard.CodeBudgetExceeded ||
				small.Usage.Calls != 1 || len(small.Steps) != 1 || e.runs("design.read") != 1 {
				t.Fatalf("past its budget the task is %s %+v, usage %+v, steps %+v, design.read ran %d", small.Status, small.Error, small.Usage, small.Steps, e.runs("design.read"))
			}

			// Run as an MCP task (params.task), the call counts at once and
			// becomes the task's step when it ends, after its approval.
			paid, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "Pay the invoice", Assignee: "agent:bookkeeper",
				Envelope: switchboard.TaskEnvelope{Allow: []string{"finance.*"}}})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := openRawMCP(t, e.url+"/mcp", keeper)
			var out struct {
				Task wireTask `json:"task"`
			}
			if err := json.Unmarshal(m.ok("tools/call", map[string]any{"name": "finance-pay", "task": map[string]any{"ttl": 60000},
				"_meta": map[string]any{"switchboard/task": paid.ID}}), &out); err != nil || out.Task.TaskID == "" {
				t.Fatalf("finance-pay as an MCP task: %+v, %v", out, err)
			}
			paid, _ = e.client(planner).Task(ctx, paid.ID)
			if paid.Status != switchboard.TaskWorking || paid.Usage.Calls != 1 || len(paid.Steps) != 0 {
				t.Fatalf("while the payment awaits approval the task is %s, usage %+v, steps %+v", paid.Status, paid.Usage, paid.Steps)
			}
			admin := e.client(e.token)
			list, err := admin.Approvals(ctx, client.ApprovalQuery{Invocation: out.Task.TaskID})
			if err != nil || len(list) != 1 {
				t.Fatalf("the payment's approvals: %+v, %v", list, err)
			}
			if _, err := admin.Decide(ctx, list[0].ID, client.Decision{Approve: true}); err != nil {
				t.Fatal(err)
			}
			m.until(out.Task.TaskID, "completed")
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				paid, _ = e.client(planner).Task(ctx, paid.ID)
				if len(paid.Steps) > 0 || time.Now().After(deadline) {
					break
				}
			}
			if len(paid.Steps) != 1 || paid.Steps[0].InvocationID != out.Task.TaskID || paid.Steps[0].Status != "succeeded" ||
				paid.Usage.Calls != 1 || e.runs("finance.pay") != 1 {
				t.Fatalf("after the MCP task: usage %+v, steps %+v, finance.pay ran %d", paid.Usage, paid.Steps, e.runs("finance.pay"))
			}
		})
	}
}
