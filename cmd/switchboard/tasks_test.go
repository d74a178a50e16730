package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestTasksCommands: tasks create / list / show / resume / cancel against
// a daemon with no model configured, so every run fails at once with
// MODEL_ERROR — which the task shows, and a resume runs again.
func TestTasksCommands(t *testing.T) {
	_, srv := newTestDaemon(t)
	admin := []string{"--addr", srv.URL, "--token", testToken}
	code, out, errs := run(t, append(admin, "--json", "tasks", "create", "Prepare the Q3 board pack",
		"--project", "finance", "--project", "design", "--allow", "finance.*", "--max-calls", "5", "--deadline", "2099-01-01T00:00:00Z")...)
	var tk switchboard.Task
	if code != 0 || json.Unmarshal([]byte(out), &tk) != nil || tk.ID == "" {
		t.Fatalf("tasks create: %d %q %q", code, out, errs)
	}
	if tk.Envelope.MaxCalls != 5 || strings.Join(tk.Projects, ",") != "finance,design" || tk.Envelope.Deadline.Year() != 2099 {
		t.Fatalf("created %+v", tk)
	}
	cl := client.New(srv.URL, testToken, nil)
	failed := func() switchboard.Task {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			got, err := cl.Task(ctx, tk.ID)
			if err == nil && got.Status == switchboard.TaskFailed {
				return got
			}
			select {
			case <-ctx.Done():
				t.Fatalf("task never failed: %+v %v", got, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	failed()
	code, out, _ = run(t, append(admin, "tasks", "list")...)
	if code != 0 || !strings.Contains(out, tk.ID) || !strings.Contains(out, "failed") || !strings.Contains(out, "Prepare the Q3") {
		t.Fatalf("tasks list: %d %q", code, out)
	}
	code, out, _ = run(t, append(admin, "tasks", "show", tk.ID)...)
	if code != 0 || !strings.Contains(out, "MODEL_ERROR") || !strings.Contains(out, "projects: finance, design") || !strings.Contains(out, "allow [finance.*]") {
		t.Fatalf("tasks show: %d %q", code, out)
	}
	// A budget not given is no budget, not a budget of 0.
	if !strings.Contains(out, "maxCalls 5 maxTokens unlimited maxCost unlimited") {
		t.Fatalf("tasks show of the budgets: %q", out)
	}
	code, out, _ = run(t, append(admin, "tasks", "resume", tk.ID)...)
	if code != 0 || !strings.Contains(out, tk.ID) {
		t.Fatalf("tasks resume: %d %q", code, out)
	}
	if got := failed(); len(got.Runs) != 2 {
		t.Fatalf("after resume the task has runs %v, want 2", got.Runs)
	}
	code, _, errs = run(t, append(admin, "tasks", "cancel", tk.ID)...)
	if code == 0 || !strings.Contains(errs, "CONFLICT") {
		t.Fatalf("cancel of a failed task: %d %q, want CONFLICT", code, errs)
	}
	code, _, errs = run(t, append(admin, "tasks", "show", "task_nope")...)
	if code == 0 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("show of an unknown task: %d %q, want NOT_FOUND", code, errs)
	}
	// Per-project scopes: read finance, write design.
	code, out, errs = run(t, append(admin, "--json", "tasks", "create", "Write the Q3 deck", "--project", "finance=read", "--project", "design=write")...)
	var scoped switchboard.Task
	if code != 0 || json.Unmarshal([]byte(out), &scoped) != nil || len(scoped.Envelope.Projects) != 2 ||
		scoped.Envelope.Projects[0].Access != switchboard.ProjectRead || scoped.Envelope.Projects[1].Access != switchboard.ProjectWrite {
		t.Fatalf("tasks create with project scopes: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(admin, "tasks", "show", scoped.ID)...)
	if code != 0 || !strings.Contains(out, "project finance: read finance.*") || !strings.Contains(out, "project design: write design.*") {
		t.Fatalf("tasks show of project scopes: %d %q", code, out)
	}
	if !strings.Contains(out, "allow (what the owner may call)") {
		t.Fatalf("tasks show of a task given no --allow: %q, want it to say the owner's scope applies", out)
	}
	code, _, errs = run(t, append(admin, "tasks", "create", "x", "--project", "finance=admin")...)
	if code == 0 || !strings.Contains(errs, "NAME=read or NAME=write") {
		t.Fatalf("a bad project access: %d %q", code, errs)
	}
	code, _, errs = run(t, append(admin, "tasks", "create", "x", "--deadline", "friday")...)
	if code == 0 || !strings.Contains(errs, "RFC 3339") {
		t.Fatalf("a bad deadline: %d %q", code, errs)
	}
}

// TestTasksAssigneeCommands: a task handed to another agent with
// --assignee, which lists it with --assignee me, calls for it with
// tools call --task (a tool outside the envelope is TOOL_NOT_FOUND) and
// completes it; an agent that does not act for the owner is refused.
func TestTasksAssigneeCommands(t *testing.T) {
	d, srv := newTestDaemon(t)
	ctx := context.Background()
	for _, name := range []string{"finance.read", "billing.read"} {
		if err := d.RegisterFunc(ctx, switchboard.Tool{Name: name, Description: "Read " + name + ".", Class: switchboard.ClassRead,
			InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"ok": true}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	admin := client.New(srv.URL, testToken, nil)
	mint := func(agent, user string) []string {
		tok, err := admin.CreateToken(ctx, client.TokenRequest{Agent: agent, User: user})
		if err != nil {
			t.Fatal(err)
		}
		return []string{"--addr", srv.URL, "--token", tok.Token}
	}
	planner, keeper := mint("planner", "user:alice"), mint("bookkeeper", "user:alice")
	mint("stranger", "user:bob")
	code, _, errs := run(t, append(planner, "tasks", "create", "x", "--assignee", "agent:stranger")...)
	if code == 0 || !strings.Contains(errs, "AGENT_NOT_FOUND") {
		t.Fatalf("a task for another user's agent: %d %q", code, errs)
	}
	code, out, errs := run(t, append(planner, "--json", "tasks", "create", "Reconcile the Q3 invoices", "--assignee", "agent:bookkeeper", "--allow", "finance.*")...)
	var tk switchboard.Task
	if code != 0 || json.Unmarshal([]byte(out), &tk) != nil || tk.Assignee != "agent:bookkeeper" || tk.Status != switchboard.TaskSubmitted {
		t.Fatalf("tasks create --assignee: %d %q %q", code, out, errs)
	}
	if code, out, _ := run(t, append(keeper, "tasks", "list", "--assignee", "me")...); code != 0 || !strings.Contains(out, tk.ID) {
		t.Fatalf("tasks list --assignee me: %d %q", code, out)
	}
	if code, out, errs := run(t, append(keeper, "tools", "call", "finance.read", "--task", tk.ID)...); code != 0 {
		t.Fatalf("tools call --task: %d %q %q", code, out, errs)
	}
	if code, _, errs := run(t, append(keeper, "tools", "call", "billing.read", "--task", tk.ID)...); code == 0 || !strings.Contains(errs, "TOOL_NOT_FOUND") {
		t.Fatalf("tools call --task outside the envelope: %d %q", code, errs)
	}
	if code, out, errs := run(t, append(keeper, "tasks", "complete", tk.ID, "The invoices reconcile.")...); code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("tasks complete: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(planner, "tasks", "show", tk.ID)...)
	if code != 0 || !strings.Contains(out, "step 1: call finance.read succeeded") || !strings.Contains(out, "The invoices reconcile.") || !strings.Contains(out, "assignee: agent:bookkeeper") {
		t.Fatalf("tasks show: %d %q", code, out)
	}
}
