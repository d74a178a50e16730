package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// taskDaemon is an assistantDaemon with the tools a delegated task uses:
// reads in two projects, a mutation that needs approval, and a tool
// outside the user's rights, each counting its runs.
type taskDaemon struct {
	*assistantDaemon
	mu    sync.Mutex
	wrote []string
}

func newTaskDaemon(t *testing.T) *taskDaemon {
	t.Helper()
	e := &taskDaemon{assistantDaemon: newAssistantDaemon(t, map[string]string{
		"finance.read": `{"revenue":120}`, "design.read": `{"slides":12}`, "billing.read": `{"balance":42}`,
	})}
	ctx := context.Background()
	if _, err := e.admin.RegisterTools(ctx, "", []switchboard.Tool{{Name: "design.write", Description: "Write a design document.",
		Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, InputSchema: json.RawMessage(`{"type":"object"}`),
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: e.backend(t)}}}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// backend is the app's backend for design.write: it records each write.
func (e *taskDaemon) backend(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.wrote = append(e.wrote, string(body))
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"written":true}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/design/write"
}

func (e *taskDaemon) writes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.wrote)
}

// agent is a client holding an agent token.
type agent struct {
	*client.Client
	token string
}

func (a agent) Token() string { return a.token }

// agentFor mints an agent token acting for user with allow globs.
func (e *taskDaemon) agentFor(t *testing.T, name, user string, allow ...string) agent {
	t.Helper()
	tok, err := e.admin.CreateToken(context.Background(), client.TokenRequest{Agent: name, User: user, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	return agent{client.New(e.srv.URL, tok.Token, nil), tok.Token}
}

// waitTask polls the task until done says so; a task that ends otherwise
// fails the test at once.
func waitTask(t *testing.T, c *client.Client, id string, done func(switchboard.Task) bool) switchboard.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		tk, err := c.Task(ctx, id)
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		if done(tk) {
			return tk
		}
		if tk.Status.Terminal() {
			t.Fatalf("task %s ended %s (%+v) before the awaited state; steps %+v", id, tk.Status, tk.Error, tk.Steps)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s never reached the awaited state: %s, steps %+v", id, tk.Status, tk.Steps)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func status(s switchboard.TaskStatus) func(switchboard.Task) bool {
	return func(t switchboard.Task) bool { return t.Status == s }
}

// A task spanning two projects runs through the assistant within its
// envelope: the envelope asked for more than its owner's rights and was
// narrowed (and says so), a tool outside it is TOOL_NOT_FOUND to the
// assistant and never runs, the mutation waits for the owner's approval
// (input_required), and the task completes with its steps linked to their
// invocations and the assistant's answer as its artifact.
func TestTaskRunsWithinItsEnvelope(t *testing.T) {
	t.Parallel()
	e := newTaskDaemon(t)
	ctx := context.Background()
	alice := e.agentFor(t, "planner", "user:alice", "finance.*", "design.*")
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "finance_read", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c2", Name: "billing.read", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c3", Name: "design_write", Args: `{"doc":"board pack"}`}}},
		modeltest.Turn{Text: "The Q3 board pack is in the design project."},
	)
	tk, err := alice.CreateTask(ctx, client.TaskRequest{Goal: "Prepare the Q3 board pack", Projects: []string{"finance", "design"},
		Envelope: switchboard.TaskEnvelope{Allow: []string{"finance.*", "design.*", "billing.*"}, MaxCalls: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Owner != "user:alice" || tk.Creator != "agent:planner" || tk.Assignee != "agent:assistant" {
		t.Fatalf("task %+v: want owner user:alice, creator agent:planner, assignee agent:assistant", tk)
	}
	if got := strings.Join(tk.Envelope.Allow, ","); got != "design.*,finance.*" {
		t.Fatalf("the envelope allows %s, want it narrowed to design.*,finance.*", got)
	}
	if len(tk.Narrowed) != 1 || !strings.Contains(tk.Narrowed[0], `"billing.*"`) {
		t.Fatalf("narrowed %q, want one note about billing.*", tk.Narrowed)
	}

	tk = waitTask(t, alice.Client, tk.ID, status(switchboard.TaskInputRequired))
	// The digest shows the open task to its owner's agent and the admin,
	// not to another user's agent.
	if got := e.digestTasks(t, e.token); len(got) != 1 || got[0].ID != tk.ID || got[0].Status != switchboard.TaskInputRequired {
		t.Fatalf("the admin's digest lists tasks %+v", got)
	}
	if got := e.digestTasks(t, alice.Token()); len(got) != 1 || got[0].ID != tk.ID {
		t.Fatalf("alice's agent's digest lists tasks %+v", got)
	}
	if got := e.digestTasks(t, e.agentFor(t, "planner", "user:bob").Token()); len(got) != 0 {
		t.Fatalf("bob's agent's digest lists alice's tasks %+v", got)
	}
	last := tk.Steps[len(tk.Steps)-1]
	if last.Kind != "approval" || last.Tool != "design.write" || last.ApprovalID == "" {
		t.Fatalf("the task waits on %+v, want the approval of design.write", last)
	}
	if _, err := e.admin.Decide(ctx, last.ApprovalID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	tk = waitTask(t, alice.Client, tk.ID, status(switchboard.TaskCompleted))

	var calls []string
	for _, s := range tk.Steps {
		if s.Kind == "call" {
			calls = append(calls, s.Tool+":"+s.Status)
			if inv, err := e.admin.GetInvocation(ctx, s.InvocationID); err != nil || inv.Tool != s.Tool {
				t.Fatalf("step %+v does not name its invocation: %+v, %v", s, inv, err)
			}
		}
	}
	if got := strings.Join(calls, ","); got != "finance.read:succeeded,design.write:succeeded" {
		t.Fatalf("call steps %s, want finance.read and design.write succeeded", got)
	}
	if e.ran["billing.read"] != 0 || e.writes() != 1 {
		t.Fatalf("billing.read ran %d times (want 0), design.write %d (want 1)", e.ran["billing.read"], e.writes())
	}
	if r := toolResultContent(e, 2); !strings.Contains(r, string(switchboard.CodeToolNotFound)) {
		t.Fatalf("the assistant's billing.read call answered %s, want TOOL_NOT_FOUND", r)
	}
	if len(tk.Artifacts) != 1 || tk.Artifacts[0].Text != "The Q3 board pack is in the design project." {
		t.Fatalf("artifacts %+v, want the assistant's answer", tk.Artifacts)
	}
	if tk.Usage.Calls != 2 || len(tk.Runs) != 1 {
		t.Fatalf("usage %+v runs %v, want 2 calls in one run", tk.Usage, tk.Runs)
	}
	// The model was never offered what the envelope leaves out.
	if got := strings.Join(e.offered(0), ","); strings.Contains(got, "billing") || !strings.Contains(got, "finance_read") {
		t.Fatalf("the task's assistant was offered %s", got)
	}
}

// digestTasks is the tasks section of GET /digest for token.
func (e *taskDaemon) digestTasks(t *testing.T, token string) []switchboard.DigestTask {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/digest", nil)
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

// toolResultContent is the tool message the model saw in request n.
func toolResultContent(e *taskDaemon, n int) string {
	msgs, _ := e.model.Requests()[n]["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["role"] == "tool" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// A task stops at its call budget with BUDGET_EXCEEDED, the call past it
// not run; a resume with nothing left to spend is refused with the same
// code and changes nothing.
func TestTaskStopsAtItsBudget(t *testing.T) {
	t.Parallel()
	e := newTaskDaemon(t)
	ctx := context.Background()
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "finance_read", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c2", Name: "design_read", Args: `{}`}}},
	)
	tk, err := e.admin.CreateTask(ctx, client.TaskRequest{Goal: "Read everything", Envelope: switchboard.TaskEnvelope{MaxCalls: 1}})
	if err != nil {
		t.Fatal(err)
	}
	tk = waitTask(t, e.admin, tk.ID, func(t switchboard.Task) bool { return t.Status.Terminal() || t.Status == switchboard.TaskFailed })
	if tk.Status != switchboard.TaskFailed || tk.Error == nil || tk.Error.Code != switchboard.CodeBudgetExceeded {
		t.Fatalf("task %s %+v, want failed BUDGET_EXCEEDED", tk.Status, tk.Error)
	}
	if e.ran["finance.read"] != 1 || e.ran["design.read"] != 0 || tk.Usage.Calls != 1 {
		t.Fatalf("ran %v usage %+v, want finance.read once and nothing past the budget", e.ran, tk.Usage)
	}
	if _, err := e.admin.ResumeTask(ctx, tk.ID); switchboard.CodeOf(err) != switchboard.CodeBudgetExceeded {
		t.Fatalf("resuming a task with no budget left: %v, want BUDGET_EXCEEDED", err)
	}
	if again, _ := e.admin.Task(ctx, tk.ID); again.Revision != tk.Revision {
		t.Fatalf("a refused resume changed the task: revision %d → %d", tk.Revision, again.Revision)
	}
}

// Tasks are their owner's: another user's agent, and an unknown id, get
// NOT_FOUND for show, cancel and resume and see none listed; the admin
// sees every task. A cancel stops the run; a second cancel is CONFLICT.
// Bad envelopes are refused with INVALID_INPUT and store nothing.
func TestTasksAreTheirOwners(t *testing.T) {
	t.Parallel()
	e := newTaskDaemon(t)
	ctx := context.Background()
	alice := e.agentFor(t, "planner", "user:alice")
	bob := e.agentFor(t, "planner", "user:bob")
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(modeltest.Turn{Text: "Working on it", Hold: hold})
	tk, err := alice.CreateTask(ctx, client.TaskRequest{Goal: "Summarise the quarter"})
	if err != nil {
		t.Fatal(err)
	}
	for _, try := range []func() error{
		func() error { _, err := bob.Task(ctx, tk.ID); return err },
		func() error { _, err := bob.CancelTask(ctx, tk.ID); return err },
		func() error { _, err := bob.ResumeTask(ctx, tk.ID); return err },
		func() error { _, err := alice.Task(ctx, "task_nope"); return err },
	} {
		if err := try(); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("another user's (or an unknown) task: %v, want NOT_FOUND", err)
		}
	}
	if ts, err := bob.Tasks(ctx, 0); err != nil || len(ts) != 0 {
		t.Fatalf("bob lists %d tasks (%v), want none", len(ts), err)
	}
	if ts, err := e.admin.Tasks(ctx, 0, switchboard.TaskWorking); err != nil || len(ts) != 1 || ts[0].ID != tk.ID {
		t.Fatalf("the admin lists %+v (%v), want alice's working task", ts, err)
	}
	waitTask(t, alice.Client, tk.ID, func(t switchboard.Task) bool { return len(t.Runs) == 1 })
	tk, err = alice.CancelTask(ctx, tk.ID)
	if err != nil || tk.Status != switchboard.TaskCancelled {
		t.Fatalf("cancel: %+v, %v", tk, err)
	}
	run := waitRunEnded(t, e.admin, tk.Runs[0])
	if run.Status != switchboard.RunCancelled {
		t.Fatalf("the cancelled task's run is %s, want cancelled", run.Status)
	}
	if _, err := alice.CancelTask(ctx, tk.ID); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("a second cancel: %v, want CONFLICT", err)
	}

	for _, bad := range []client.TaskRequest{
		{Goal: " "},
		{Goal: "x", Assignee: "user:someone"},
		{Goal: "x", Envelope: switchboard.TaskEnvelope{Allow: []string{"bad glob"}}},
		{Goal: "x", Envelope: switchboard.TaskEnvelope{MaxCalls: -1}},
		{Goal: "x", Envelope: switchboard.TaskEnvelope{Deadline: time.Now().Add(-time.Hour)}},
	} {
		if _, err := alice.CreateTask(ctx, bad); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Fatalf("create %+v: %v, want INVALID_INPUT", bad, err)
		}
	}
	if ts, _ := e.admin.Tasks(ctx, 0); len(ts) != 1 {
		t.Fatalf("refused creates stored tasks: %d", len(ts))
	}
}

// waitRunEnded polls a run until it is no longer running.
func waitRunEnded(t *testing.T, c *client.Client, id string) switchboard.RunInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r, err := c.GetRun(ctx, id)
		if err == nil && r.Status != switchboard.RunRunning {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s never ended: %+v, %v", id, r, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A task whose completed steps name a tool that was deleted fails cleanly
// on resume with TOOL_NOT_FOUND, starting no run.
func TestTaskWithDeletedToolFailsCleanly(t *testing.T) {
	t.Parallel()
	e := newTaskDaemon(t)
	ctx := context.Background()
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "design_write", Args: `{}`}}},
	)
	tk, err := e.admin.CreateTask(ctx, client.TaskRequest{Goal: "Write the doc"})
	if err != nil {
		t.Fatal(err)
	}
	tk = waitTask(t, e.admin, tk.ID, status(switchboard.TaskInputRequired))
	if _, err := e.admin.CancelTask(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	waitRunEnded(t, e.admin, tk.Runs[0])
	tk, _ = e.admin.Task(ctx, tk.ID)
	if err := e.admin.DeleteTool(ctx, "design.write"); err != nil {
		t.Fatal(err)
	}
	// The cancelled call is a step only once it ended: a step on a tool
	// that no longer exists.
	if len(tk.Steps) == 0 {
		t.Fatalf("no steps recorded: %+v", tk)
	}
	_, err = e.admin.ResumeTask(ctx, tk.ID)
	if switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("resume of a task whose step's tool was deleted: %v, want TOOL_NOT_FOUND", err)
	}
	got, _ := e.admin.Task(ctx, tk.ID)
	if got.Status != switchboard.TaskFailed || got.Error == nil || got.Error.Code != switchboard.CodeToolNotFound || len(got.Runs) != 1 {
		t.Fatalf("after the refused resume: %s %+v runs %v, want failed TOOL_NOT_FOUND and no new run", got.Status, got.Error, got.Runs)
	}
}
