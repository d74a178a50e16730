package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// assigneeDaemon is a daemon over a durable store with read tools in three
// projects, each counting its runs; restart closes it and starts another
// over the same data.
type assigneeDaemon struct {
	d     durable
	token string
	url   string
	stop  func()
	mu    sync.Mutex
	ran   map[string]int
}

func newAssigneeDaemon(t *testing.T, d durable) *assigneeDaemon {
	e := &assigneeDaemon{d: d, token: daemon.NewSecret(), ran: map[string]int{}}
	e.start(t)
	t.Cleanup(func() { e.stop() })
	return e
}

func (e *assigneeDaemon) start(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	st := e.d.open(t)
	dm, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: e.token})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"finance.read", "design.read", "billing.read"} {
		tl := switchboard.Tool{Name: name, Description: "Read " + name + ".", Class: switchboard.ClassRead, InputSchema: json.RawMessage(`{"type":"object"}`)}
		if err := dm.RegisterFunc(ctx, tl, func(context.Context, json.RawMessage) (any, error) {
			e.mu.Lock()
			e.ran[name]++
			e.mu.Unlock()
			return map[string]any{"read": name}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// A payment waits for the owner's approval (an MCP task's call).
	pay := switchboard.Tool{Name: "finance.pay", Description: "Pay an invoice.", Class: switchboard.ClassMutate, Approval: switchboard.ApprovalHITL,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
	if err := dm.RegisterFunc(ctx, pay, func(context.Context, json.RawMessage) (any, error) {
		e.mu.Lock()
		e.ran[pay.Name]++
		e.mu.Unlock()
		return map[string]any{"paid": true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := dm.RecoverTasks(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dm.Handler())
	e.url = srv.URL
	e.stop = func() {
		srv.Close()
		dm.Close()
		st.Close()
	}
}

func (e *assigneeDaemon) restart(t *testing.T) {
	e.stop()
	e.start(t)
}

func (e *assigneeDaemon) runs(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ran[name]
}

func (e *assigneeDaemon) client(token string) *client.Client { return client.New(e.url, token, nil) }

func (e *assigneeDaemon) mint(t *testing.T, agent, user string, allow ...string) string {
	t.Helper()
	tok, err := e.client(e.token).CreateToken(context.Background(), client.TokenRequest{Agent: agent, User: user, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

// callFor calls tool as token for task (the Switchboard-Task header).
func (e *assigneeDaemon) callFor(t *testing.T, token, task, tool string) (switchboard.CallResponse, error) {
	t.Helper()
	return e.client(token).CallToolWith(context.Background(), tool, nil, client.CallOptions{}, client.CallExtra{Task: task})
}

// An agent other than the built-in assistant works a task handed to it,
// on SQLite and Postgres: the task names it as assignee (an agent that
// does not act for the owner is refused), it finds the task in its
// digest and with assignee=me, and each call it declares for the task
// passes the task's envelope (a tool outside it is TOOL_NOT_FOUND there,
// though the agent's own scope allows it), counts against the task's
// budget and becomes a step naming its invocation. A restart leaves the
// task as it was; the agent goes on and completes it with its artifact.
// Only the assignee ends its task. A second task stops at its call budget
// with BUDGET_EXCEEDED, a third at its deadline with TIMEOUT.
func TestAssignedAgentWorksTask(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			e := newAssigneeDaemon(t, d)
			planner := e.mint(t, "planner", "user:alice", "finance.*", "design.*")
			keeper := e.mint(t, "bookkeeper", "user:alice", "*")
			bobs := e.mint(t, "bookkeeper", "user:bob", "*")
			e.mint(t, "auditor", "user:bob")

			for _, bad := range []struct {
				assignee string
				code     switchboard.Code
			}{
				{"agent:ghost", switchboard.CodeAgentNotFound},
				{"agent:auditor", switchboard.CodeAgentNotFound}, // bob's agent, not alice's
				{"user:bob", switchboard.CodeInvalidInput},
			} {
				_, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "x", Assignee: bad.assignee})
				if switchboard.CodeOf(err) != bad.code {
					t.Fatalf("a task for %s: %v, want %s", bad.assignee, err, bad.code)
				}
			}
			tk, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "Reconcile the Q3 invoices", Assignee: "agent:bookkeeper",
				Envelope: switchboard.TaskEnvelope{Allow: []string{"finance.*"}, MaxCalls: 3}})
			if err != nil {
				t.Fatal(err)
			}
			if tk.Assignee != "agent:bookkeeper" || tk.Status != switchboard.TaskSubmitted || len(tk.Runs) != 0 {
				t.Fatalf("created %+v: want assigned to agent:bookkeeper, submitted, no assistant run", tk)
			}
			mine, err := e.client(keeper).AssignedTasks(ctx, 0)
			if err != nil || len(mine) != 1 || mine[0].ID != tk.ID {
				t.Fatalf("the bookkeeper's assigned tasks: %+v, %v", mine, err)
			}
			if theirs, _ := e.client(bobs).AssignedTasks(ctx, 0); len(theirs) != 0 {
				t.Fatalf("bob's bookkeeper is assigned %+v", theirs)
			}
			if dt := digestOf(t, e.url, keeper); len(dt) != 1 || dt[0].ID != tk.ID || dt[0].Assignee != "agent:bookkeeper" {
				t.Fatalf("the bookkeeper's digest lists tasks %+v", dt)
			}

			// Picked up: the first call for it.
			resp, err := e.callFor(t, keeper, tk.ID, "finance.read")
			if err != nil || resp.Status != switchboard.StatusSucceeded {
				t.Fatalf("the assignee's call for its task: %+v, %v", resp, err)
			}
			tk, _ = e.client(keeper).Task(ctx, tk.ID)
			if tk.Status != switchboard.TaskWorking || tk.Usage.Calls != 1 || len(tk.Steps) != 1 ||
				tk.Steps[0].InvocationID != resp.InvocationID || tk.Steps[0].Tool != "finance.read" || tk.Steps[0].Status != "succeeded" {
				t.Fatalf("after one call the task is %s, usage %+v, steps %+v", tk.Status, tk.Usage, tk.Steps)
			}
			if inv, err := e.client(e.token).GetInvocation(ctx, resp.InvocationID); err != nil || inv.Caller != "agent:bookkeeper" {
				t.Fatalf("the step's invocation: %+v, %v", inv, err)
			}
			// Outside the envelope, though within the agent's own scope.
			if _, err := e.callFor(t, keeper, tk.ID, "billing.read"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
				t.Fatalf("a call outside the task's envelope: %v, want TOOL_NOT_FOUND", err)
			}
			if e.runs("billing.read") != 0 {
				t.Fatal("billing.read ran under a task that does not allow it")
			}
			if _, err := e.client(keeper).CallTool(ctx, "billing.read", nil, client.CallOptions{}); err != nil {
				t.Fatalf("the same agent's own call of billing.read: %v", err)
			}
			// Only the assignee calls for it.
			if _, err := e.callFor(t, bobs, tk.ID, "finance.read"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
				t.Fatalf("another user's agent calling for the task: %v, want NOT_FOUND", err)
			}
			if _, err := e.callFor(t, planner, tk.ID, "finance.read"); switchboard.CodeOf(err) != switchboard.CodeForbidden {
				t.Fatalf("the task's creator calling for it: %v, want FORBIDDEN", err)
			}

			// A restart leaves the agent's task as it is.
			e.restart(t)
			again, err := e.client(keeper).Task(ctx, tk.ID)
			if err != nil || again.Status != switchboard.TaskWorking || len(again.Runs) != 0 || again.Usage.Calls != 1 {
				t.Fatalf("after a restart: %+v, %v; want it working, one call, no assistant run", again, err)
			}
			if _, err := e.callFor(t, keeper, tk.ID, "finance.read"); err != nil {
				t.Fatal(err)
			}
			for _, other := range []string{planner, bobs} {
				_, err := e.client(other).CompleteTask(ctx, tk.ID, "not mine")
				if want := map[string]switchboard.Code{planner: switchboard.CodeForbidden, bobs: switchboard.CodeNotFound}[other]; switchboard.CodeOf(err) != want {
					t.Fatalf("complete by someone else: %v, want %s", err, want)
				}
			}
			tk, err = e.client(keeper).CompleteTask(ctx, tk.ID, "The Q3 invoices reconcile.")
			if err != nil || tk.Status != switchboard.TaskCompleted || len(tk.Artifacts) != 1 || tk.Artifacts[0].Text != "The Q3 invoices reconcile." {
				t.Fatalf("complete: %+v, %v", tk, err)
			}
			if tk.Usage.Calls != 2 || len(tk.Steps) != 2 || e.runs("finance.read") != 2 {
				t.Fatalf("usage %+v, steps %+v, finance.read ran %d: want two calls, two steps", tk.Usage, tk.Steps, e.runs("finance.read"))
			}
			if _, err := e.client(keeper).CompleteTask(ctx, tk.ID, "again"); switchboard.CodeOf(err) != switchboard.CodeConflict {
				t.Fatalf("completing a finished task: %v, want CONFLICT", err)
			}
			if _, err := e.callFor(t, keeper, tk.ID, "finance.read"); switchboard.CodeOf(err) != switchboard.CodeConflict {
				t.Fatalf("a call for a finished task: %v, want CONFLICT", err)
			}

			// The call budget.
			small, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "One look", Assignee: "agent:bookkeeper",
				Envelope: switchboard.TaskEnvelope{MaxCalls: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.callFor(t, keeper, small.ID, "design.read"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.callFor(t, keeper, small.ID, "design.read"); switchboard.CodeOf(err) != switchboard.CodeBudgetExceeded {
				t.Fatalf("a call past the budget: %v, want BUDGET_EXCEEDED", err)
			}
			small, _ = e.client(planner).Task(ctx, small.ID)
			if small.Status != switchboard.TaskFailed || small.Error == nil || small.Error.Code != switchboard.CodeBudgetExceeded ||
				small.Usage.Calls != 1 || e.runs("design.read") != 1 {
				t.Fatalf("past its budget the task is %s %+v, usage %+v, design.read ran %d", small.Status, small.Error, small.Usage, e.runs("design.read"))
			}

			// The deadline: the stored record is moved past it, as time would.
			late, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "By tonight", Assignee: "agent:bookkeeper",
				Envelope: switchboard.TaskEnvelope{Deadline: time.Now().Add(time.Hour)}})
			if err != nil {
				t.Fatal(err)
			}
			st := d.open(t)
			rec, err := st.TaskGet(ctx, late.ID)
			if err != nil {
				t.Fatal(err)
			}
			rec.Envelope.Deadline = time.Now().Add(-time.Minute)
			if _, err := st.TaskUpdate(ctx, rec); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if _, err := e.callFor(t, keeper, late.ID, "finance.read"); switchboard.CodeOf(err) != switchboard.CodeTimeout {
				t.Fatalf("a call past the deadline: %v, want TIMEOUT", err)
			}
			if late, _ = e.client(planner).Task(ctx, late.ID); late.Status != switchboard.TaskFailed || late.Error.Code != switchboard.CodeTimeout {
				t.Fatalf("past its deadline the task is %s %+v", late.Status, late.Error)
			}
		})
	}
}

// digestOf is the tasks section of GET /digest for token.
func digestOf(t *testing.T, url, token string) []switchboard.DigestTask {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/digest", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d switchboard.WorkspaceDigest
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("digest: %d %v", resp.StatusCode, err)
	}
	return d.Tasks
}

// The agent fails its task with a code and a message; an unknown code is
// refused; the owner resumes it and it is submitted again, for its agent.
func TestAssignedAgentFailsTask(t *testing.T) {
	t.Parallel()
	e := newAssigneeDaemon(t, durables(t)[0])
	ctx := context.Background()
	keeper := e.mint(t, "bookkeeper", "user:alice")
	planner := e.mint(t, "planner", "user:alice")
	tk, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "Export the ledger", Assignee: "bookkeeper"})
	if err != nil || tk.Assignee != "agent:bookkeeper" {
		t.Fatalf("create: %+v, %v", tk, err)
	}
	if _, err := e.client(keeper).FailTask(ctx, tk.ID, "NOT_A_CODE", "x"); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("an unknown code: %v, want INVALID_INPUT", err)
	}
	tk, err = e.client(keeper).FailTask(ctx, tk.ID, "", "the ledger export is locked")
	if err != nil || tk.Status != switchboard.TaskFailed || tk.Error.Code != switchboard.CodeUpstreamError || !strings.Contains(tk.Error.Message, "locked") {
		t.Fatalf("fail: %+v, %v", tk, err)
	}
	tk, err = e.client(planner).ResumeTask(ctx, tk.ID)
	if err != nil || tk.Status != switchboard.TaskSubmitted || tk.Error != nil || len(tk.Runs) != 0 {
		t.Fatalf("resume: %+v, %v; want submitted again with no assistant run", tk, err)
	}
	if _, err := e.client(planner).ResumeTask(ctx, tk.ID); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("resuming a task its agent has: %v, want CONFLICT", err)
	}
}

// A tab acts for the user it was opened for: its session token lists,
// reads and cancels that user's tasks, while another user's task is
// NOT_FOUND to it as an unknown id is; creating, resuming and completing
// a task are FORBIDDEN to a tab.
func TestTabSeesItsUsersTasks(t *testing.T) {
	t.Parallel()
	e := newAssigneeDaemon(t, durables(t)[0])
	ctx := context.Background()
	admin := e.client(e.token)
	sess, err := admin.CreateSession(ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	tab := e.client(sess.SessionToken)
	e.mint(t, "bookkeeper", "user:alice")
	e.mint(t, "bookkeeper", "user:bob")
	alices, err := e.client(e.mint(t, "planner", "user:alice")).CreateTask(ctx, client.TaskRequest{Goal: "Alice's", Assignee: "agent:bookkeeper"})
	if err != nil {
		t.Fatal(err)
	}
	bobs, err := e.client(e.mint(t, "planner", "user:bob")).CreateTask(ctx, client.TaskRequest{Goal: "Bob's", Assignee: "agent:bookkeeper"})
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := tab.Tasks(ctx, 0); err != nil || len(ts) != 1 || ts[0].ID != alices.ID {
		t.Fatalf("the tab lists %+v, %v; want alice's task only", ts, err)
	}
	if got, err := tab.Task(ctx, alices.ID); err != nil || got.Goal != "Alice's" {
		t.Fatalf("the tab reads its user's task: %+v, %v", got, err)
	}
	for _, try := range []func() error{
		func() error { _, err := tab.Task(ctx, bobs.ID); return err },
		func() error { _, err := tab.CancelTask(ctx, bobs.ID); return err },
	} {
		if err := try(); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("another user's task from the tab: %v, want NOT_FOUND", err)
		}
	}
	for _, try := range []func() error{
		func() error { _, err := tab.CreateTask(ctx, client.TaskRequest{Goal: "x"}); return err },
		func() error { _, err := tab.ResumeTask(ctx, alices.ID); return err },
		func() error { _, err := tab.CompleteTask(ctx, alices.ID, "done"); return err },
	} {
		if err := try(); switchboard.CodeOf(err) != switchboard.CodeForbidden {
			t.Fatalf("a tab starting or ending work: %v, want FORBIDDEN", err)
		}
	}
	if got, err := tab.CancelTask(ctx, alices.ID); err != nil || got.Status != switchboard.TaskCancelled {
		t.Fatalf("the tab cancels its user's task: %+v, %v", got, err)
	}
}

// An assigned agent's calls for a task keep the envelope's per-project
// access, as the assistant's do: in a project the task may only read, a
// mutation is TOOL_NOT_FOUND and never asks for approval, though the
// agent's own scope allows it; the project's reads run.
func TestAssignedAgentKeepsProjectScopes(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			e := newAssigneeDaemon(t, d)
			planner := e.mint(t, "planner", "user:alice", "finance.*")
			keeper := e.mint(t, "bookkeeper", "user:alice", "*")
			tk, err := e.client(planner).CreateTask(ctx, client.TaskRequest{Goal: "Check the Q3 invoices", Assignee: "agent:bookkeeper",
				Envelope: switchboard.TaskEnvelope{Projects: []switchboard.ProjectScope{{Name: "finance", Access: switchboard.ProjectRead}}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.callFor(t, keeper, tk.ID, "finance.pay"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
				t.Fatalf("a mutation in a project the task may only read: %v, want TOOL_NOT_FOUND", err)
			}
			if e.runs("finance.pay") != 0 {
				t.Fatal("finance.pay ran under a read-only project")
			}
			if pending, err := e.client(e.token).Approvals(ctx, client.ApprovalQuery{}); err != nil || len(pending) != 0 {
				t.Fatalf("approvals after the refused call: %+v, %v; want none", pending, err)
			}
			if resp, err := e.callFor(t, keeper, tk.ID, "finance.read"); err != nil || resp.Status != switchboard.StatusSucceeded {
				t.Fatalf("a read in the read-only project: %+v, %v", resp, err)
			}
		})
	}
}
