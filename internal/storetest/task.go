package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// testTask checks a delegated task's record: create (a duplicate id is
// CONFLICT), get (an unknown id NOT_FOUND), the revision compare-and-swap
// (a stale update changes nothing and returns the current record), the
// round trip of the whole record, and list filters and order.
func testTask(t *testing.T, st switchboard.Store) {
	ctx := context.Background()
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	tk := switchboard.Task{ID: "task_1", Owner: "user:alice", Creator: "agent:planner", Assignee: "agent:assistant",
		Goal: "Prepare the board pack", Projects: []string{"finance", "design"}, Status: switchboard.TaskSubmitted,
		Envelope: switchboard.TaskEnvelope{Allow: []string{"finance.*"}, MaxCalls: 3, MaxCost: 2, Deadline: at.Add(time.Hour)},
		Replica:  "rep_a", CreatedAt: at, UpdatedAt: at, Steps: []switchboard.TaskStep{}, Artifacts: []switchboard.TaskArtifact{}}
	if err := st.TaskCreate(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if err := st.TaskCreate(ctx, tk); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("duplicate create: %v, want CONFLICT", err)
	}
	if _, err := st.TaskGet(ctx, "task_none"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("unknown id: %v, want NOT_FOUND", err)
	}
	got, err := st.TaskGet(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 1 || got.Replica != "rep_a" || !got.CreatedAt.Equal(at) || got.Envelope.MaxCost != 2 ||
		!got.Envelope.Deadline.Equal(at.Add(time.Hour)) || len(got.Projects) != 2 {
		t.Fatalf("stored task %+v", got)
	}
	next := got
	next.Status, next.Replica = switchboard.TaskWorking, "rep_b"
	next.Steps = append(next.Steps, switchboard.TaskStep{Kind: "call", InvocationID: "inv_1", Tool: "finance.read", Status: "succeeded", At: at})
	stored, err := st.TaskUpdate(ctx, next)
	if err != nil || stored.Revision != 2 {
		t.Fatalf("update: %+v, %v", stored, err)
	}
	stale := got
	stale.Status = switchboard.TaskCancelled
	cur, err := st.TaskUpdate(ctx, stale)
	if switchboard.CodeOf(err) != switchboard.CodeConflict || cur.Revision != 2 || cur.Status != switchboard.TaskWorking {
		t.Fatalf("stale update: %+v, %v; want CONFLICT and the current record", cur, err)
	}
	if again, _ := st.TaskGet(ctx, tk.ID); again.Status != switchboard.TaskWorking || again.Replica != "rep_b" || len(again.Steps) != 1 {
		t.Fatalf("after a stale update: %+v", again)
	}
	other := tk
	other.ID, other.Owner, other.Creator, other.CreatedAt = "task_2", "user:bob", "user:admin", at.Add(time.Minute)
	if err := st.TaskCreate(ctx, other); err != nil {
		t.Fatal(err)
	}
	all, err := st.TaskList(ctx, switchboard.TaskFilter{})
	if err != nil || len(all) != 2 || all[0].ID != "task_2" {
		t.Fatalf("list: %d tasks, %v; want both, newest first", len(all), err)
	}
	for f, want := range map[*switchboard.TaskFilter]int{
		{Owner: "user:alice"}:   1,
		{Creator: "user:admin"}: 1,
		{Status: []switchboard.TaskStatus{switchboard.TaskWorking, switchboard.TaskCompleted}}: 1,
		{Owner: "user:carol"}: 0,
		{Limit: 1}:            1,
	} {
		if got, err := st.TaskList(ctx, *f); err != nil || len(got) != want {
			t.Fatalf("list %+v: %d tasks, %v; want %d", *f, len(got), err, want)
		}
	}
}
