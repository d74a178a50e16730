package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

var (
	user    = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
	planner = switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	other   = switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "other"}
)

// env is the governed call path over a real SQLite file.
type env struct {
	store  *sqlite.Store
	reg    *registry.Registry
	ledger *activity.Ledger
	svc    *approval.Service
	b      *broker.Broker
	now    atomic.Pointer[time.Time]
	events chan event // approval.request / approval.resolved, in order
	runs   atomic.Int32
}

type event struct {
	kind string
	data map[string]any
}

func newEnv(t *testing.T, mod func(*approval.Options)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{store: st, events: make(chan event, 64)}
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	e.now.Store(&start)
	now := func() time.Time { return *e.now.Load() }
	if e.reg, err = registry.New(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	if e.ledger, err = activity.New(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	o := approval.Options{Store: st, Ledger: e.ledger, Now: now, TTL: time.Minute,
		Notify: func(_ context.Context, kind string, data []byte) {
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			e.events <- event{kind, m}
		}}
	if mod != nil {
		mod(&o)
	}
	if e.svc, err = approval.New(o); err != nil {
		t.Fatal(err)
	}
	e.b = broker.New(broker.Options{Store: st, Registry: e.reg, Policy: e.svc, OnActivity: e.ledger.Observe})
	t.Cleanup(e.b.Close)
	for _, tool := range []switchboard.Tool{
		{Name: "tasks.delete", Description: "Delete a task.", Class: switchboard.ClassMutate,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)},
		{Name: "tasks.list", Description: "List tasks.", Class: switchboard.ClassRead},
		{Name: "tasks.purge", Description: "Purge everything.", Class: switchboard.ClassMutate, Approval: switchboard.ApprovalUserOnly},
		{Name: "tasks.touch", Description: "Touch a task.", Class: switchboard.ClassMutate, MaxConcurrency: 1},
	} {
		tool.Binding = &switchboard.Binding{Go: true}
		if _, err := e.reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
			t.Fatal(err)
		}
		e.b.Handle(tool.Name, func(context.Context, json.RawMessage) (any, error) {
			e.runs.Add(1)
			return map[string]bool{"ok": true}, nil
		})
	}
	return e
}

func (e *env) advance(d time.Duration) {
	n := e.now.Load().Add(d)
	e.now.Store(&n)
}

type outcome struct {
	inv switchboard.Invocation
	err error
}

// callAsync starts a call as p and returns its outcome channel once the
// approval request was announced (or the call ended).
func (e *env) callAsync(t *testing.T, p switchboard.Principal, tool, input string) (string, <-chan outcome) {
	t.Helper()
	out := make(chan outcome, 1)
	go func() {
		inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: tool, Input: json.RawMessage(input), Caller: &p})
		out <- outcome{inv, err}
	}()
	select {
	case ev := <-e.events:
		if ev.kind != approval.EventRequest {
			t.Fatalf("first event %s, want %s", ev.kind, approval.EventRequest)
		}
		return ev.data["approvalId"].(string), out
	case o := <-out:
		t.Fatalf("the call ended without asking for approval: %+v %v", o.inv, o.err)
	}
	return "", nil
}

func (e *env) entries(t *testing.T, verb string) []switchboard.ActivityEntry {
	t.Helper()
	es, err := e.store.ActivityList(context.Background(), switchboard.ActivityFilter{Verb: verb, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func wantCode(t *testing.T, err error, code switchboard.Code) *switchboard.Error {
	t.Helper()
	if got := switchboard.CodeOf(err); got != code {
		t.Fatalf("code %s (%v), want %s", got, err, code)
	}
	return switchboard.AsError(err)
}

func TestAgentMutationWaitsForApproval(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 7}`)

	a, err := e.svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := e.b.Get(ctx, a.InvocationID)
	if err != nil || inv.Status != switchboard.StatusAwaitingApproval || e.runs.Load() != 0 {
		t.Fatalf("while waiting: %+v %v, runs %d", inv, err, e.runs.Load())
	}
	if a.Agent != "agent:planner" || a.Tool != "tasks.delete" || a.ArgsHash == "" || string(a.Input) != `{"id": 7}` {
		t.Fatalf("request %+v", a)
	}
	pending, _ := e.svc.List(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending})
	if len(pending) != 1 || pending[0].ID != id {
		t.Fatalf("pending %+v", pending)
	}
	got, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: true, Channel: approval.ChannelCLI})
	if err != nil || got.Status != switchboard.ApprovalApproved {
		t.Fatalf("decide: %+v %v", got, err)
	}
	o := <-out
	if o.err != nil || o.inv.Status != switchboard.StatusSucceeded || e.runs.Load() != 1 {
		t.Fatalf("approved call: %+v %v", o.inv, o.err)
	}
	if ev := <-e.events; ev.kind != approval.EventResolved || ev.data["status"] != "approved" {
		t.Fatalf("resolved event %+v", ev)
	}
	dec := e.entries(t, activity.VerbApprovalDecide)
	if len(dec) != 1 || dec[0].Actor != "user:admin" || dec[0].Target != "tasks.delete" || string(dec[0].Provenance) != `{"channel":"cli"}` {
		t.Fatalf("decision entries %+v", dec)
	}
	if calls := e.entries(t, activity.VerbToolCall); len(calls) != 1 || calls[0].Actor != "agent:planner" {
		t.Fatalf("tool.call entries %+v", calls)
	}
	used, _ := e.svc.Get(ctx, id)
	if used.ConsumedAt.IsZero() {
		t.Fatal("the approval was not consumed")
	}
}

// A denied mutation runs nothing and ends denied with USER_DENIED.
func TestDeniedMutationHasNoSideEffect(t *testing.T) {
	e := newEnv(t, nil)
	id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 7}`)
	if _, err := e.svc.Decide(context.Background(), id, approval.Decision{By: user, Reason: "not that one"}); err != nil {
		t.Fatal(err)
	}
	o := <-out
	ue := wantCode(t, o.err, switchboard.CodeUserDenied)
	if d, _ := ue.Details.(map[string]any); d["reason"] != "denied" || o.inv.Status != switchboard.StatusDenied {
		t.Fatalf("denied call: %+v %+v", o.inv, ue)
	}
	if e.runs.Load() != 0 {
		t.Fatal("a denied call ran")
	}
	stored, _ := e.b.Get(context.Background(), o.inv.ID)
	if stored.Status != switchboard.StatusDenied || stored.Error.Code != switchboard.CodeUserDenied {
		t.Fatalf("stored %+v", stored)
	}
}

// RELIABILITY row 8 and rule 2: agents never decide, "approved": true in
// the arguments means nothing.
func TestForgedApprovals(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 7, "approved": true}`)
	if e.runs.Load() != 0 {
		t.Fatal(`"approved": true in the arguments ran the call`)
	}
	for _, p := range []switchboard.Principal{planner, other, {Kind: switchboard.PrincipalSession, ID: "ses_x"}} {
		_, err := e.svc.Decide(ctx, id, approval.Decision{By: p, Approve: true})
		wantCode(t, err, switchboard.CodeForbidden)
	}
	// A second call with other arguments gets its own request; approving
	// the first does not let the second run.
	id2, out2 := e.callAsync(t, planner, "tasks.delete", `{"id": 8}`)
	if id2 == id {
		t.Fatal("two calls share one approval")
	}
	if _, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: true}); err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.err != nil {
		t.Fatal(o.err)
	}
	// Replayed: a decided approval cannot be decided again, or used again.
	_, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: true})
	wantCode(t, err, switchboard.CodeConflict)
	a, _ := e.svc.Get(ctx, id)
	inv, _ := e.b.Get(ctx, a.InvocationID)
	wantCode(t, e.svc.AwaitApproval(ctx, id, inv), switchboard.CodeForbidden) // already consumed
	a2, _ := e.svc.Get(ctx, id2)
	inv2, _ := e.b.Get(ctx, a2.InvocationID)
	wantCode(t, e.svc.AwaitApproval(ctx, id, inv2), switchboard.CodeForbidden) // another call's approval
	if n := e.runs.Load(); n != 1 {
		t.Fatalf("ran %d calls, want 1", n)
	}
	if _, err := e.svc.Decide(ctx, id2, approval.Decision{By: user}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, (<-out2).err, switchboard.CodeUserDenied)
}

// RELIABILITY row 9: approve and deny at once; exactly one terminal state
// and one ledger entry.
func TestApproveDenyRace(t *testing.T) {
	for round := range 5 {
		e := newEnv(t, nil)
		id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 1}`)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				<-start
				_, errs[i] = e.svc.Decide(context.Background(), id, approval.Decision{By: user, Approve: i%2 == 0})
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch switchboard.CodeOf(err) {
			case "":
				wins++
			case switchboard.CodeConflict:
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		o := <-out
		a, _ := e.svc.Get(context.Background(), id)
		dec := e.entries(t, activity.VerbApprovalDecide)
		if wins != 1 || len(dec) != 1 {
			t.Fatalf("round %d: %d decisions won, %d ledger entries; want 1 and 1", round, wins, len(dec))
		}
		want := map[switchboard.ApprovalStatus]switchboard.Status{switchboard.ApprovalApproved: switchboard.StatusSucceeded, switchboard.ApprovalDenied: switchboard.StatusDenied}[a.Status]
		if o.inv.Status != want || len(e.entries(t, activity.VerbToolCall)) != 1 {
			t.Fatalf("round %d: approval %s but invocation %s", round, a.Status, o.inv.Status)
		}
	}
}

// Expiry is a denial with its own reason; approving afterwards fails.
func TestExpiry(t *testing.T) {
	// The waiter re-reads the store every PollInterval and would expire the
	// request itself if a tick fell between advance and ExpireDue; this test
	// is about the sweep, so the waiter's poll is kept out of the way.
	e := newEnv(t, func(o *approval.Options) { o.PollInterval = time.Hour })
	ctx := context.Background()
	id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 1}`)
	if n, err := e.svc.ExpireDue(ctx); err != nil || n != 0 {
		t.Fatalf("expired %d early (%v)", n, err)
	}
	e.advance(time.Minute)
	// A waiter that had not yet read the store when the clock moved (a
	// loaded machine) finds the request overdue and expires it itself;
	// either way exactly one expiry happens, checked below.
	if n, err := e.svc.ExpireDue(ctx); err != nil || n > 1 {
		t.Fatalf("expired %d, %v; want at most 1", n, err)
	}
	o := <-out
	ue := wantCode(t, o.err, switchboard.CodeUserDenied)
	if d, _ := ue.Details.(map[string]any); d["reason"] != "expired" || o.inv.Status != switchboard.StatusDenied {
		t.Fatalf("expired call: %+v %+v", o.inv, ue)
	}
	_, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: true})
	wantCode(t, err, switchboard.CodeConflict)
	if e.runs.Load() != 0 {
		t.Fatal("an expired call ran")
	}
	dec := e.entries(t, activity.VerbApprovalDecide)
	if len(dec) != 1 || dec[0].Actor != "system" {
		t.Fatalf("expiry entries %+v", dec)
	}
}

// Approving after the deadline, before any sweep, is refused too.
func TestApproveAfterExpiry(t *testing.T) {
	e := newEnv(t, nil)
	id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 1}`)
	e.advance(2 * time.Minute)
	_, err := e.svc.Decide(context.Background(), id, approval.Decision{By: user, Approve: true})
	wantCode(t, err, switchboard.CodeConflict)
	ue := wantCode(t, (<-out).err, switchboard.CodeUserDenied)
	if d, _ := ue.Details.(map[string]any); d["reason"] != "expired" {
		t.Fatalf("details %+v", ue.Details)
	}
}

// An agent's call of a user-only tool or of one outside its scope never
// reaches the policy: the registry hides both from agents, so the broker
// answers TOOL_NOT_FOUND, as for a name that does not exist.
func TestUserOnlyAndScope(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.purge", Caller: &planner})
	wantCode(t, err, switchboard.CodeToolNotFound)
	if inv.ID != "" {
		t.Fatal("a refused call was recorded")
	}
	scoped := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "s", Allow: []string{"tasks.*"}, Deny: []string{"*.delete"}}
	_, err = e.b.Call(ctx, broker.CallRequest{Tool: "tasks.delete", Input: json.RawMessage(`{"id":1}`), Caller: &scoped})
	wantCode(t, err, switchboard.CodeToolNotFound)
	if _, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.list", Caller: &scoped}); err != nil {
		t.Fatal(err)
	}
	// The user runs user-only and hitl tools directly: the user is the human.
	if _, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.purge", Caller: &user}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.delete", Input: json.RawMessage(`{"id":1}`), Caller: &user}); err != nil {
		t.Fatal(err)
	}
	if n := e.runs.Load(); n != 3 {
		t.Fatalf("ran %d, want 3", n)
	}
}

// A floor that makes a class user-only is the approval rule itself: even
// through a registry that was not told the floor (registry.Options.Approval,
// which would hide the tools), an agent's call is refused, never run.
func TestUserOnlyFloor(t *testing.T) {
	e := newEnv(t, func(o *approval.Options) {
		o.Floor = map[switchboard.Class]switchboard.Approval{switchboard.ClassMutate: switchboard.ApprovalUserOnly}
	})
	ctx := context.Background()
	_, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.touch", Caller: &planner})
	if ue := wantCode(t, err, switchboard.CodeForbidden); !strings.Contains(ue.Message, "user-only") {
		t.Fatalf("refusal %v", ue)
	}
	if _, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.touch", Caller: &user}); err != nil {
		t.Fatal(err)
	}
	if n := e.runs.Load(); n != 1 {
		t.Fatalf("ran %d, want 1 (the user's)", n)
	}
}

// One agent's pending approval blocks neither another agent nor the
// tool's concurrency slot; each agent's queue is bounded on its own.
func TestQueuesAreIndependent(t *testing.T) {
	e := newEnv(t, func(o *approval.Options) { o.MaxPendingPerAgent = 1 })
	ctx := context.Background()
	id, out := e.callAsync(t, planner, "tasks.touch", `{}`) // maxConcurrency 1
	// The slot is free: the user's call of the same tool runs now.
	if _, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.touch", Caller: &user}); err != nil {
		t.Fatalf("a pending approval held the tool's slot: %v", err)
	}
	// The planner's queue is full; the other agent's is not.
	_, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.touch", Caller: &planner})
	wantCode(t, err, switchboard.CodeRateLimited)
	id2, out2 := e.callAsync(t, other, "tasks.touch", `{}`)
	if _, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.list", Caller: &other}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Decide(ctx, id2, approval.Decision{By: user, Approve: true}); err != nil {
		t.Fatal(err)
	}
	if o := <-out2; o.err != nil {
		t.Fatalf("the other agent's approved call: %v", o.err)
	}
	if _, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: true}); err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.err != nil {
		t.Fatal(o.err)
	}
}

// A caller that stops waiting cancels its request.
func TestCallerGoneCancelsRequest(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan error, 1)
	go func() {
		_, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.delete", Input: json.RawMessage(`{"id":1}`), Caller: &planner})
		out <- err
	}()
	var ev event
	select {
	case ev = <-e.events:
	case err := <-out:
		t.Fatalf("the call ended before asking for approval: %v", err)
	}
	cancel()
	wantCode(t, <-out, switchboard.CodeCancelled)
	a, _ := e.svc.Get(context.Background(), ev.data["approvalId"].(string))
	if a.Status != switchboard.ApprovalCancelled {
		t.Fatalf("request after the caller left: %+v", a)
	}
	inv, _ := e.b.Get(context.Background(), a.InvocationID)
	if inv.Status != switchboard.StatusCancelled {
		t.Fatalf("invocation %+v", inv)
	}
}

// faultyDecide fails the first ApprovalDecide as busy storage would.
type faultyDecide struct {
	approval.Store
	failed atomic.Bool
}

func (f *faultyDecide) ApprovalDecide(ctx context.Context, a switchboard.ApprovalRequest) (switchboard.ApprovalRequest, error) {
	if !f.failed.Swap(true) {
		return switchboard.ApprovalRequest{}, switchboard.Errorf(switchboard.CodeUnavailable, "approval decide: database is locked")
	}
	return f.Store.ApprovalDecide(ctx, a)
}

// RELIABILITY row 17: a store fault on a decision is UNAVAILABLE, leaves
// the request pending with no ledger entry, and a retry succeeds.
func TestStoreFaultOnDecide(t *testing.T) {
	e := newEnv(t, func(o *approval.Options) { o.Store = &faultyDecide{Store: o.Store} })
	id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 7}`)
	_, err := e.svc.Decide(context.Background(), id, approval.Decision{By: user, Approve: true})
	wantCode(t, err, switchboard.CodeUnavailable)
	if a, _ := e.svc.Get(context.Background(), id); a.Status != switchboard.ApprovalPending || len(e.entries(t, activity.VerbApprovalDecide)) != 0 {
		t.Fatalf("after a failed decision: %+v", a)
	}
	if _, err := e.svc.Decide(context.Background(), id, approval.Decision{By: user, Approve: true}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if o := <-out; o.err != nil || e.runs.Load() != 1 {
		t.Fatalf("the call after the retry: %v", o.err)
	}
}

// A delegating tool (one that forwards to another tool through the broker)
// is exempt from the class floor, so one act asks the user once; its own
// declared approval still holds, and other tools keep the floor.
func TestDelegatesSkipTheFloor(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := approval.New(approval.Options{Store: st, Delegates: map[string]bool{"panel.run_action": true}})
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(name string, a switchboard.Approval) switchboard.Tool {
		return switchboard.Tool{Name: name, Class: switchboard.ClassMutate, Approval: a}
	}
	for _, tc := range []struct {
		tool switchboard.Tool
		want switchboard.Approval
	}{
		{mutate("panel.run_action", switchboard.ApprovalNone), switchboard.ApprovalNone},
		{mutate("panel.run_action", switchboard.ApprovalHITL), switchboard.ApprovalHITL},
		{mutate("tasks.create", switchboard.ApprovalNone), switchboard.ApprovalHITL},
	} {
		if got := svc.Effective(tc.tool); got != tc.want {
			t.Errorf("%s (declared %s): %s, want %s", tc.tool.Name, tc.tool.Approval, got, tc.want)
		}
	}
}

// Issue 14 item 3 and issue 17 item 3: at start, Recover keeps the
// requests its predicate accepts (durable calls the daemon resumes) and
// cancels every other one with its approval.decide entry. A wait ended
// with ErrStopped (the daemon stopping) leaves the request pending.
func TestRecoverKeepsOrCancelsWithEntries(t *testing.T) {
	e := newEnv(t, nil)
	ctx, stop := context.WithCancelCause(context.Background())
	keepID, cancelID := "", ""
	outs := make([]chan error, 2)
	for i := range outs {
		outs[i] = make(chan error, 1)
		go func() {
			_, err := e.b.Call(ctx, broker.CallRequest{Tool: "tasks.delete", Input: json.RawMessage(fmt.Sprintf(`{"id":%d}`, i)), Caller: &planner})
			outs[i] <- err
		}()
		ev := <-e.events
		if i == 0 {
			keepID = ev.data["approvalId"].(string)
		} else {
			cancelID = ev.data["approvalId"].(string)
		}
	}
	stop(approval.ErrStopped)
	for _, out := range outs {
		if err := <-out; !errors.Is(err, approval.ErrStopped) && switchboard.CodeOf(err) != switchboard.CodeCancelled {
			t.Fatalf("a stopped wait: %v", err)
		}
	}
	for _, id := range []string{keepID, cancelID} {
		if a, _ := e.svc.Get(context.Background(), id); a.Status != switchboard.ApprovalPending {
			t.Fatalf("after ErrStopped, request %s is %s; want pending", id, a.Status)
		}
	}
	before := len(e.entries(t, "approval.decide"))
	kept, n, err := e.svc.Recover(context.Background(), func(a switchboard.ApprovalRequest) approval.Fate {
		if a.ID == keepID {
			return approval.Keep
		}
		return approval.Cancel
	})
	if err != nil || n != 1 || len(kept) != 1 || kept[0].ID != keepID {
		t.Fatalf("recover: kept %+v, cancelled %d, %v", kept, n, err)
	}
	if a, _ := e.svc.Get(context.Background(), cancelID); a.Status != switchboard.ApprovalCancelled || a.Channel != "restart" {
		t.Fatalf("the request recover cancelled: %+v", a)
	}
	if got := e.entries(t, "approval.decide"); len(got) != before+1 || !strings.Contains(string(got[len(got)-1].Details), cancelID) {
		t.Fatalf("approval.decide entries %d (want %d), last %+v", len(got), before+1, got[len(got)-1])
	}
}

// Wait returns once another channel decides, without consuming or
// expiring anything, and returns at once for a decided request.
func TestWaitSeesTheDecision(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id, out := e.callAsync(t, planner, "tasks.delete", `{"id": 7}`)
	waited := make(chan switchboard.ApprovalRequest, 1)
	go func() {
		a, err := e.svc.Wait(ctx, id)
		if err != nil {
			t.Error(err)
		}
		waited <- a
	}()
	if _, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: false, Reason: "no", Channel: approval.ChannelHTTP}); err != nil {
		t.Fatal(err)
	}
	if a := <-waited; a.Status != switchboard.ApprovalDenied || a.Channel != approval.ChannelHTTP {
		t.Fatalf("waited for %+v", a)
	}
	wantCode(t, (<-out).err, switchboard.CodeUserDenied)
	<-e.events // its approval.resolved
	if a, err := e.svc.Wait(ctx, id); err != nil || a.Status != switchboard.ApprovalDenied {
		t.Fatalf("wait on a decided request: %+v %v", a, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	id2, out2 := e.callAsync(t, planner, "tasks.delete", `{"id": 8}`)
	if _, err := e.svc.Wait(cctx, id2); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with an ended context: %v", err)
	}
	if a, _ := e.svc.Get(ctx, id2); a.Status != switchboard.ApprovalPending {
		t.Fatalf("wait changed the request: %+v", a)
	}
	_, _ = e.svc.Decide(ctx, id2, approval.Decision{By: user, Approve: false})
	<-out2
}

// An approval of a call by an agent acting for alice is asked of alice:
// bob cannot see or decide it (it reads as not found), alice can, and the
// operator's decision on it is recorded as an override.
func TestApprovalReachesTheUserActedFor(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	forAlice := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: "user:alice"}
	alice := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "alice"}
	bob := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "bob"}

	id, out := e.callAsync(t, forAlice, "tasks.delete", `{"id": 7}`)
	a, err := e.svc.Get(ctx, id)
	if err != nil || a.User != "user:alice" || a.Agent != "agent:planner" {
		t.Fatalf("request %+v %v", a, err)
	}
	mine, _ := e.svc.List(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending, User: "user:alice"})
	theirs, _ := e.svc.List(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending, User: "user:bob"})
	if len(mine) != 1 || len(theirs) != 0 {
		t.Fatalf("alice lists %d, bob %d", len(mine), len(theirs))
	}
	_, err = e.svc.Decide(ctx, id, approval.Decision{By: bob, Approve: true})
	wantCode(t, err, switchboard.CodeNotFound)
	if got, err := e.svc.Decide(ctx, id, approval.Decision{By: alice, Approve: true}); err != nil || got.DecidedBy != "user:alice" {
		t.Fatalf("alice decides: %+v %v", got, err)
	}
	if o := <-out; o.err != nil || o.inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("alice's approved call: %+v %v", o.inv, o.err)
	}
	<-e.events // resolved

	id, out = e.callAsync(t, forAlice, "tasks.delete", `{"id": 8}`)
	if _, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: false, Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	if o := <-out; switchboard.CodeOf(o.err) != switchboard.CodeUserDenied {
		t.Fatalf("overridden call: %+v %v", o.inv, o.err)
	}
	<-e.events // resolved
	dec := e.entries(t, activity.VerbApprovalDecide)
	if len(dec) != 2 {
		t.Fatalf("decision entries %+v", dec)
	}
	var first, second map[string]any
	_ = json.Unmarshal(dec[0].Details, &first)
	_ = json.Unmarshal(dec[1].Details, &second)
	if dec[0].Actor != "user:alice" || first["override"] != nil || first["user"] != "user:alice" {
		t.Errorf("alice's own decision: %s %s", dec[0].Actor, dec[0].Details)
	}
	if dec[1].Actor != switchboard.Operator || second["override"] != true || second["user"] != "user:alice" {
		t.Errorf("the operator's decision is not an override: %s %s", dec[1].Actor, dec[1].Details)
	}

	// The operator deciding an operator's agent's call overrides nobody.
	id, out = e.callAsync(t, planner, "tasks.delete", `{"id": 9}`)
	if _, err := e.svc.Decide(ctx, id, approval.Decision{By: user, Approve: true}); err != nil {
		t.Fatal(err)
	}
	<-out
	dec = e.entries(t, activity.VerbApprovalDecide)
	var third map[string]any
	_ = json.Unmarshal(dec[2].Details, &third)
	if third["override"] != nil || third["user"] != switchboard.Operator {
		t.Errorf("the operator's own approval: %s", dec[2].Details)
	}
}
