package broker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// openLedger opens a SQLite store and the activity ledger over it, which
// approvals record their decisions in.
func openLedger(t *testing.T) (*sqlite.Store, *activity.Ledger) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := activity.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, l
}

// A reversal runs the declared inverse as a fresh call, through approval
// like any agent's mutation, links the two entries, and happens once.
func TestReversalGoesThroughApproval(t *testing.T) {
	ctx := context.Background()
	st, l := openLedger(t)
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 8)
	svc, err := approval.New(approval.Options{Store: st, Ledger: l, Notify: func(_ context.Context, kind string, data []byte) {
		if kind == approval.EventRequest {
			var ev approval.RequestEvent
			_ = json.Unmarshal(data, &ev)
			asked <- ev.ApprovalID
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{Store: st, Registry: reg, Policy: svc, OnActivity: l.Observe})
	defer b.Close()
	no := false
	for _, tool := range []switchboard.Tool{
		{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
			Inverse: &switchboard.Inverse{Tool: "tasks.delete", Input: map[string]string{"id": "/result/id", "project": "/input/project"}}},
		{Name: "tasks.delete", Description: "Delete a task.", Class: switchboard.ClassMutate},
		{Name: "mail.send", Description: "Send an email.", Class: switchboard.ClassMutate, Reversible: &no},
	} {
		tool.Binding = &switchboard.Binding{Go: true}
		if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
			t.Fatal(err)
		}
	}
	var deleted atomic.Value
	var deletes atomic.Int32
	b.Handle("tasks.create", func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "t1"}, nil })
	b.Handle("tasks.delete", func(_ context.Context, in json.RawMessage) (any, error) {
		deletes.Add(1)
		deleted.Store(string(in))
		return map[string]bool{"ok": true}, nil
	})
	b.Handle("mail.send", func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	agent := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	user := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
	approve := func() {
		t.Helper()
		if _, err := svc.Decide(ctx, <-asked, approval.Decision{By: user, Approve: true, Channel: approval.ChannelCLI}); err != nil {
			t.Fatal(err)
		}
	}
	call := func(tool, input string) switchboard.Invocation {
		t.Helper()
		out := make(chan switchboard.Invocation, 1)
		go func() {
			inv, _ := b.Call(ctx, broker.CallRequest{Tool: tool, Input: json.RawMessage(input), Caller: &agent})
			out <- inv
		}()
		approve()
		return <-out
	}
	created := call("tasks.create", `{"project":"p1","title":"x"}`)
	sent := call("mail.send", `{}`)
	entryOf := func(inv switchboard.Invocation) int64 {
		t.Helper()
		es, _ := st.ActivityList(ctx, switchboard.ActivityFilter{Verb: activity.VerbToolCall})
		for _, e := range es {
			if strings.Contains(string(e.Details), inv.ID) {
				return e.ID
			}
		}
		t.Fatalf("no entry for %s", inv.ID)
		return 0
	}

	// The agent's reversal waits for the user like any of its mutations.
	out := make(chan switchboard.Invocation, 1)
	go func() {
		inv, err := b.Reverse(ctx, agent, entryOf(created), nil)
		if err != nil {
			t.Error(err)
		}
		out <- inv
	}()
	id := <-asked
	if deletes.Load() != 0 {
		t.Fatal("the inverse ran before its approval")
	}
	if _, err := svc.Decide(ctx, id, approval.Decision{By: user, Approve: true}); err != nil {
		t.Fatal(err)
	}
	undo := <-out
	if undo.Status != switchboard.StatusSucceeded || undo.Tool != "tasks.delete" || deleted.Load() != `{"id":"t1","project":"p1"}` {
		t.Fatalf("inverse: %+v input %v", undo, deleted.Load())
	}
	es, _ := st.ActivityList(ctx, switchboard.ActivityFilter{AfterID: entryOf(undo) - 1, Limit: 1})
	var link broker.Reversal
	if err := json.Unmarshal(es[0].Reversal, &link); err != nil || link.Of != entryOf(created) || link.InvocationID != created.ID {
		t.Fatalf("the inverse's entry does not link back: %s", es[0].Reversal)
	}
	// Reversing again replays the first reversal; nothing runs twice.
	again, err := b.Reverse(ctx, agent, entryOf(created), nil)
	if err != nil || again.ID != undo.ID || deletes.Load() != 1 {
		t.Fatalf("second reversal: %+v %v (deletes %d)", again, err, deletes.Load())
	}
	// Irreversible and non-call entries say so. The decision's entry and the
	// call's may land in either order, so find a non-call entry by verb.
	var decision int64
	all, _ := st.ActivityList(ctx, switchboard.ActivityFilter{})
	for _, e := range all {
		if e.Verb != activity.VerbToolCall {
			decision = e.ID
		}
	}
	for _, c := range []struct {
		id   int64
		want string
	}{
		{entryOf(sent), "irreversible"},
		{entryOf(undo), "declares no inverse"},
		{decision, "not a tool call"},
	} {
		_, err := b.Reverse(ctx, agent, c.id, nil)
		if switchboard.CodeOf(err) != switchboard.CodeConflict || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reverse entry %d: %v, want CONFLICT %q", c.id, err, c.want)
		}
	}
}

// An agent's reversal that the user denied does not block the user's own
// undo of the same entry: a shared reversal key replays only a success.
func TestDeniedReversalDoesNotBlockTheUser(t *testing.T) {
	ctx := context.Background()
	st, l := openLedger(t)
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 8)
	svc, err := approval.New(approval.Options{Store: st, Ledger: l, Notify: func(_ context.Context, kind string, data []byte) {
		if kind == approval.EventRequest {
			var ev approval.RequestEvent
			_ = json.Unmarshal(data, &ev)
			asked <- ev.ApprovalID
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{Store: st, Registry: reg, Policy: svc, OnActivity: l.Observe})
	defer b.Close()
	for _, tool := range []switchboard.Tool{
		{Name: "notes.create", Description: "Create a note.", Class: switchboard.ClassMutate,
			Inverse: &switchboard.Inverse{Tool: "notes.delete", Input: map[string]string{"id": "/result/id"}}},
		{Name: "notes.delete", Description: "Delete a note.", Class: switchboard.ClassMutate},
	} {
		tool.Binding = &switchboard.Binding{Go: true}
		if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
			t.Fatal(err)
		}
	}
	var deletes atomic.Int32
	b.Handle("notes.create", func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "n1"}, nil })
	b.Handle("notes.delete", func(context.Context, json.RawMessage) (any, error) {
		deletes.Add(1)
		return map[string]bool{"ok": true}, nil
	})
	user := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
	agent := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "notebot"}
	created, err := b.Call(ctx, broker.CallRequest{Tool: "notes.create", Input: json.RawMessage(`{}`), Caller: &user})
	if err != nil {
		t.Fatal(err)
	}
	es, _ := st.ActivityList(ctx, switchboard.ActivityFilter{Verb: activity.VerbToolCall})
	var entry int64
	for _, e := range es {
		if strings.Contains(string(e.Details), created.ID) {
			entry = e.ID
		}
	}
	done := make(chan error, 1)
	go func() { _, err := b.Reverse(ctx, agent, entry, nil); done <- err }()
	if _, err := svc.Decide(ctx, <-asked, approval.Decision{By: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; switchboard.CodeOf(err) != switchboard.CodeUserDenied {
		t.Fatalf("the agent's reversal: %v, want USER_DENIED", err)
	}
	undo, err := b.Reverse(ctx, user, entry, nil)
	if err != nil || undo.Status != switchboard.StatusSucceeded || deletes.Load() != 1 {
		t.Fatalf("the user's own undo: %+v %v (deletes %d)", undo, err, deletes.Load())
	}
	again, err := b.Reverse(ctx, user, entry, nil)
	if err != nil || again.ID != undo.ID || deletes.Load() != 1 {
		t.Fatalf("a second undo: %+v %v (deletes %d)", again, err, deletes.Load())
	}
}
