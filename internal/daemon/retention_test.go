package daemon_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestRetentionSweep: a sweep deletes the records and keys older than
// their retention, a record only after the key that names it, stored runs
// that ended (never a waiting one), and keeps the ledger whole.
func TestRetentionSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ret := daemon.RetentionOptions{Invocations: time.Hour, IdempotencyKeys: 2 * time.Hour, Interval: time.Hour}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: daemon.NewSecret(), Retention: ret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	tool := switchboard.Tool{Name: "notes.read", Description: "Read a note.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
	if err := d.RegisterFunc(ctx, tool, func(context.Context, json.RawMessage) (any, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	admin := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
	plain, err := d.Broker.Call(ctx, broker.CallRequest{Tool: "notes.read", Input: json.RawMessage(`{}`), Caller: &admin})
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := d.Broker.Call(ctx, broker.CallRequest{Tool: "notes.read", Input: json.RawMessage(`{}`), IdempotencyKey: "k1", Caller: &admin})
	if err != nil {
		t.Fatal(err)
	}
	head, err := st.ActivityHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, status := range map[string]switchboard.RunStatus{"run-done": switchboard.RunSucceeded, "run-waiting": switchboard.RunWaiting} {
		r := switchboard.RunRecord{RunInfo: switchboard.RunInfo{RunID: id, ThreadID: "chat", Status: switchboard.RunRunning, CreatedAt: time.Now()}, Replica: d.ReplicaID()}
		if err := st.RunCreate(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Status, r.FinishedAt = status, time.Now()
		if err := st.RunAppend(ctx, r, []switchboard.RunEvent{{Seq: 0, JSON: []byte(`{"type":"RUN_STARTED"}`)}}); err != nil {
			t.Fatal(err)
		}
	}

	// Now: nothing is old enough.
	if keys, recs := d.SweepRetention(ctx, st, ret); keys+recs != 0 {
		t.Fatalf("fresh sweep deleted %d keys, %d records", keys, recs)
	}
	// 90 minutes on: both records are past their hour, but the key (two
	// hours) still names the keyed call, so only the plain one goes.
	ret.Now = func() time.Time { return time.Now().Add(90 * time.Minute) }
	if keys, recs := d.SweepRetention(ctx, st, ret); keys != 0 || recs != 1 {
		t.Fatalf("after 90m: %d keys, %d records; want 0, 1", keys, recs)
	}
	if _, err := st.InvocationGet(ctx, plain.ID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("plain call after 90m: %v", err)
	}
	if _, err := st.InvocationGet(ctx, keyed.ID); err != nil {
		t.Fatalf("keyed call after 90m: %v", err)
	}
	if _, err := st.RunGet(ctx, "run-done"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("finished run after 90m (runs are kept 1h): %v", err)
	}
	if _, err := st.RunGet(ctx, "run-waiting"); err != nil {
		t.Fatalf("waiting run after 90m: %v", err)
	}
	// Three hours on: the key expired, then its call.
	ret.Now = func() time.Time { return time.Now().Add(3 * time.Hour) }
	if keys, recs := d.SweepRetention(ctx, st, ret); keys != 1 || recs != 1 {
		t.Fatalf("after 3h: %d keys, %d records; want 1, 1", keys, recs)
	}
	if h, err := st.ActivityHead(ctx); err != nil || h != head {
		t.Fatalf("ledger head %d %v, want %d", h, err, head)
	}
	r, err := d.Ledger.Verify(ctx)
	if err != nil || !r.OK {
		t.Fatalf("ledger after retention: %+v %v", r, err)
	}
	entries, err := st.ActivityList(ctx, switchboard.ActivityFilter{Verb: "tool.call"})
	if err != nil || len(entries) != 2 {
		t.Fatalf("tool.call entries: %d %v", len(entries), err)
	}
}

// RELIABILITY row 30: retention never takes the key of a
// call that is not terminal. With keys kept one second, an agent's keyed
// call waits for approval; a sweep an hour later keeps its key; the retry
// finds that same call (CONFLICT, in flight, naming it) rather than
// starting a second; once approved, the backend runs once and the retry
// replays it.
func TestRetentionKeepsKeyOfCallInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ret := daemon.RetentionOptions{IdempotencyKeys: time.Second, Interval: time.Hour}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: daemon.NewSecret(), Retention: ret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	tool := switchboard.Tool{Name: "mail.send", Description: "Send a mail.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
	var runs atomic.Int32
	if err := d.RegisterFunc(ctx, tool, func(context.Context, json.RawMessage) (any, error) { runs.Add(1); return "sent", nil }); err != nil {
		t.Fatal(err)
	}
	bot := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}
	req := broker.CallRequest{Tool: "mail.send", Input: json.RawMessage(`{}`), IdempotencyKey: "k1", Caller: &bot}
	recorded := make(chan switchboard.Invocation, 1)
	first := req
	first.OnRecord = func(inv switchboard.Invocation) { recorded <- inv }
	done := make(chan error, 1)
	go func() { _, err := d.Broker.Call(ctx, first); done <- err }()
	var inv switchboard.Invocation
	select {
	case inv = <-recorded:
	case err := <-done:
		t.Fatalf("the call ended before it was recorded: %v", err)
	}
	if inv.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("the call: %+v; want awaiting_approval", inv)
	}

	ret.Now = func() time.Time { return time.Now().Add(time.Hour) }
	if keys, recs := d.SweepRetention(ctx, st, ret); keys != 0 || recs != 0 {
		t.Fatalf("the sweep deleted %d keys, %d records; want none (the call waits)", keys, recs)
	}
	_, err = d.Broker.Call(ctx, req)
	if e := switchboard.AsError(err); e == nil || e.Code != switchboard.CodeConflict {
		t.Fatalf("the retry while the approval waits: %v; want CONFLICT (in flight)", err)
	} else if det, _ := e.Details.(map[string]any); det["invocationId"] != inv.ID {
		t.Fatalf("the retry names %v; want the first call %s", det["invocationId"], inv.ID)
	}
	pending, err := st.ApprovalList(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending})
	if err != nil || len(pending) != 1 || pending[0].InvocationID != inv.ID {
		t.Fatalf("pending approvals: %+v %v; want the first call's only", pending, err)
	}
	if _, err := d.Approvals.Decide(ctx, pending[0].ID, approval.Decision{By: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}, Approve: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the approved call: %v", err)
	}
	again, err := d.Broker.Call(ctx, req)
	if err != nil || again.ID != inv.ID || again.Status != switchboard.StatusSucceeded || runs.Load() != 1 {
		t.Fatalf("the retry after approval: %+v %v (ran %d times); want the first call's outcome, run once", again, err, runs.Load())
	}
}
