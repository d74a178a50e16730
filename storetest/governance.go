package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

// exerciseGovernance runs the switchboard.GovernanceStore part of the suite
// (tokens, approvals, jobs, idempotency keys, the ledger head) on stores
// from open; each case gets its own store, like the core cases.
func exerciseGovernance(t *testing.T, open func(t *testing.T) switchboard.Store) {
	for _, c := range governanceCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			g, ok := s.(switchboard.GovernanceStore)
			if !ok {
				t.Fatalf("%T does not implement switchboard.GovernanceStore", s)
			}
			c.fn(t, s, g)
		})
	}
}

var governanceCases = []struct {
	name string
	fn   func(*testing.T, switchboard.Store, switchboard.GovernanceStore)
}{
	{"Tokens", testTokens},
	{"ApprovalLifecycle", testApprovalLifecycle},
	{"ApprovalDecideRace", testApprovalDecideRace},
	{"Jobs", testJobs},
	{"IdempotencyClaim", testIdempotencyClaim},
	{"IdempotencyClaimRace", testIdempotencyClaimRace},
	{"ActivityHead", testActivityHead},
}

func testTokens(t *testing.T, _ switchboard.Store, g switchboard.GovernanceStore) {
	ctx := context.Background()
	tok := switchboard.AgentToken{ID: "tok-1", Agent: "planner", Allow: []string{"tasks.*"}, Deny: []string{"*.delete"}, Hash: "h1", CreatedAt: base}
	must(t, g.TokenCreate(ctx, tok))
	wantCode(t, g.TokenCreate(ctx, tok), switchboard.CodeConflict)
	must(t, g.TokenCreate(ctx, switchboard.AgentToken{ID: "tok-2", Agent: "other", Hash: "h2", CreatedAt: base.Add(time.Second)}))
	got, err := g.TokenGet(ctx, "tok-1")
	must(t, err)
	want := tok
	want.CreatedAt = micro(base)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("token round trip (-want +got):\n%s", diff)
	}
	if b, _ := json.Marshal(got); strings.Contains(string(b), "h1") {
		t.Fatalf("a token's hash must never be serialized: %s", b)
	}
	list, err := g.TokenList(ctx)
	must(t, err)
	if len(list) != 2 || list[0].ID != "tok-1" || list[1].ID != "tok-2" || list[1].Allow != nil && len(list[1].Allow) != 0 {
		t.Fatalf("list: %+v", list)
	}
	rev, err := g.TokenRevoke(ctx, "tok-1", base.Add(time.Minute))
	must(t, err)
	if !rev.RevokedAt.Equal(micro(base.Add(time.Minute))) {
		t.Fatalf("revoked at %v", rev.RevokedAt)
	}
	rev, err = g.TokenRevoke(ctx, "tok-1", base.Add(time.Hour))
	must(t, err)
	if !rev.RevokedAt.Equal(micro(base.Add(time.Minute))) {
		t.Fatalf("a second revoke moved revokedAt to %v", rev.RevokedAt)
	}
	_, err = g.TokenRevoke(ctx, "nope", base)
	wantCode(t, err, switchboard.CodeNotFound)
	_, err = g.TokenGet(ctx, "nope")
	wantCode(t, err, switchboard.CodeNotFound)
}

func approvalReq(id, inv string) switchboard.ApprovalRequest {
	return switchboard.ApprovalRequest{
		ID: id, InvocationID: inv, RunID: "run-1", Tool: "tasks.delete", ToolVersion: 3, ArgsHash: "abc",
		Input: json.RawMessage(`{"id": 7}`), Summary: "delete task 7", Class: switchboard.ClassMutate,
		Agent: "agent:planner", Status: switchboard.ApprovalPending, CreatedAt: base, ExpiresAt: base.Add(10 * time.Minute),
	}
}

func testApprovalLifecycle(t *testing.T, _ switchboard.Store, g switchboard.GovernanceStore) {
	ctx := context.Background()
	a := approvalReq("apr-1", "inv-1")
	must(t, g.ApprovalCreate(ctx, a))
	wantCode(t, g.ApprovalCreate(ctx, approvalReq("apr-2", "inv-1")), switchboard.CodeConflict) // one per invocation
	b := approvalReq("apr-3", "inv-3")
	b.Agent, b.CreatedAt = "agent:other", base.Add(time.Second)
	must(t, g.ApprovalCreate(ctx, b))

	got, err := g.ApprovalGet(ctx, "apr-1")
	must(t, err)
	want := a
	want.CreatedAt, want.ExpiresAt = micro(a.CreatedAt), micro(a.ExpiresAt)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("approval round trip (-want +got):\n%s", diff)
	}
	list, err := g.ApprovalList(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending})
	must(t, err)
	if len(list) != 2 || list[0].ID != "apr-1" {
		t.Fatalf("pending list: %+v", list)
	}
	list, err = g.ApprovalList(ctx, switchboard.ApprovalFilter{Agent: "agent:other"})
	must(t, err)
	if len(list) != 1 || list[0].ID != "apr-3" {
		t.Fatalf("by agent: %+v", list)
	}
	list, err = g.ApprovalList(ctx, switchboard.ApprovalFilter{InvocationID: "inv-1"})
	must(t, err)
	if len(list) != 1 || list[0].ID != "apr-1" {
		t.Fatalf("by invocation: %+v", list)
	}

	// Consuming before a decision fails; deciding is a CAS from pending.
	_, err = g.ApprovalConsume(ctx, "apr-1", base)
	wantCode(t, err, switchboard.CodeConflict)
	d := got
	d.Status, d.DecidedBy, d.Channel, d.Reason, d.DecidedAt = switchboard.ApprovalApproved, "user:admin", "cli", "ok", base.Add(time.Minute)
	dec, err := g.ApprovalDecide(ctx, d)
	must(t, err)
	if dec.Status != switchboard.ApprovalApproved || dec.DecidedBy != "user:admin" || dec.Channel != "cli" || !dec.DecidedAt.Equal(micro(d.DecidedAt)) {
		t.Fatalf("decided: %+v", dec)
	}
	d.Status = switchboard.ApprovalDenied
	cur, err := g.ApprovalDecide(ctx, d)
	wantCode(t, err, switchboard.CodeConflict)
	if cur.Status != switchboard.ApprovalApproved {
		t.Fatalf("a failed decide returned %+v, want the approved record", cur)
	}
	// Single use.
	used, err := g.ApprovalConsume(ctx, "apr-1", base.Add(2*time.Minute))
	must(t, err)
	if !used.ConsumedAt.Equal(micro(base.Add(2 * time.Minute))) {
		t.Fatalf("consumed: %+v", used)
	}
	_, err = g.ApprovalConsume(ctx, "apr-1", base.Add(3*time.Minute))
	wantCode(t, err, switchboard.CodeConflict)
	d.Status = switchboard.ApprovalPending
	_, err = g.ApprovalDecide(ctx, d)
	wantCode(t, err, switchboard.CodeInvalidInput)
	_, err = g.ApprovalGet(ctx, "nope")
	wantCode(t, err, switchboard.CodeNotFound)
	nope := approvalReq("nope", "x")
	nope.Status = switchboard.ApprovalDenied
	_, err = g.ApprovalDecide(ctx, nope)
	wantCode(t, err, switchboard.CodeNotFound)

	n, err := g.ApprovalCancelPending(ctx, base.Add(time.Hour), "restart")
	must(t, err)
	if n != 1 {
		t.Fatalf("cancelled %d pending, want 1", n)
	}
	c, err := g.ApprovalGet(ctx, "apr-3")
	must(t, err)
	if c.Status != switchboard.ApprovalCancelled || c.Reason != "restart" {
		t.Fatalf("after cancel: %+v", c)
	}
}

// testApprovalDecideRace: approvers and deniers race on one request;
// exactly one decision is stored and every loser sees it.
func testApprovalDecideRace(t *testing.T, _ switchboard.Store, g switchboard.GovernanceStore) {
	ctx := context.Background()
	must(t, g.ApprovalCreate(ctx, approvalReq("apr-1", "inv-1")))
	const n = 12
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		recs  [n]switchboard.ApprovalRequest
		errs  [n]error
	)
	for i := range n {
		wg.Go(func() {
			d := approvalReq("apr-1", "inv-1")
			d.Status = []switchboard.ApprovalStatus{switchboard.ApprovalApproved, switchboard.ApprovalDenied}[i%2]
			d.DecidedBy = fmt.Sprintf("user:%d", i)
			<-start
			recs[i], errs[i] = g.ApprovalDecide(ctx, d)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch switchboard.CodeOf(err) {
		case "":
			if winner >= 0 {
				t.Fatalf("two decisions won: %d and %d", winner, i)
			}
			winner = i
		case switchboard.CodeConflict:
		default:
			t.Fatalf("decider %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no decision won")
	}
	for i := range n {
		if recs[i].DecidedBy != recs[winner].DecidedBy || recs[i].Status != recs[winner].Status {
			t.Fatalf("decider %d saw %+v, the winner stored %+v", i, recs[i], recs[winner])
		}
	}
}

func testJobs(t *testing.T, _ switchboard.Store, g switchboard.GovernanceStore) {
	ctx := context.Background()
	j := switchboard.Job{ID: "job-1", InvocationID: "inv-1", Tool: "deck.export", Caller: "agent:a", Status: switchboard.JobRunning, CreatedAt: base}
	must(t, g.JobCreate(ctx, j))
	wantCode(t, g.JobCreate(ctx, j), switchboard.CodeConflict)
	must(t, g.JobCreate(ctx, switchboard.Job{ID: "job-2", Tool: "x", Status: switchboard.JobRunning, CreatedAt: base}))
	got, err := g.JobGet(ctx, "job-1")
	must(t, err)
	if got.Status != switchboard.JobRunning || !got.UpdatedAt.Equal(micro(base)) || got.Caller != "agent:a" {
		t.Fatalf("created: %+v", got)
	}
	p := got
	p.Progress, p.Message, p.UpdatedAt = 0.5, "half way", base.Add(time.Second)
	got, err = g.JobUpdate(ctx, p, switchboard.JobRunning)
	must(t, err)
	if got.Progress != 0.5 || got.Message != "half way" {
		t.Fatalf("progress: %+v", got)
	}
	done := got
	done.Status, done.Progress, done.Result, done.FinishedAt = switchboard.JobSucceeded, 1, json.RawMessage(`{"url": "x"}`), base.Add(2*time.Second)
	got, err = g.JobUpdate(ctx, done, switchboard.JobRunning)
	must(t, err)
	if got.Status != switchboard.JobSucceeded || string(got.Result) != `{"url": "x"}` || !got.FinishedAt.Equal(micro(done.FinishedAt)) {
		t.Fatalf("finished: %+v", got)
	}
	late := done
	late.Status, late.Error = switchboard.JobCancelled, switchboard.Errorf(switchboard.CodeCancelled, "late")
	got, err = g.JobUpdate(ctx, late, switchboard.JobRunning)
	wantCode(t, err, switchboard.CodeConflict)
	if got.Status != switchboard.JobSucceeded {
		t.Fatalf("a failed CAS returned %+v", got)
	}
	n, err := g.JobFailRunning(ctx, base.Add(time.Hour), switchboard.Errorf(switchboard.CodeInternal, "lost by a restart"))
	must(t, err)
	if n != 1 {
		t.Fatalf("failed %d running jobs, want 1", n)
	}
	got, err = g.JobGet(ctx, "job-2")
	must(t, err)
	if got.Status != switchboard.JobFailed || got.Error == nil || got.Error.Code != switchboard.CodeInternal || got.FinishedAt.IsZero() {
		t.Fatalf("lost job: %+v", got)
	}
	_, err = g.JobGet(ctx, "nope")
	wantCode(t, err, switchboard.CodeNotFound)
}

func testIdempotencyClaim(t *testing.T, _ switchboard.Store, g switchboard.GovernanceStore) {
	ctx := context.Background()
	r := switchboard.IdempotencyRecord{Scope: "agent:a", Key: "k1", Digest: "d1", InvocationID: "inv-1", CreatedAt: base}
	got, ok, err := g.IdempotencyClaim(ctx, r, base.Add(-time.Hour))
	must(t, err)
	if !ok || got.InvocationID != "inv-1" {
		t.Fatalf("first claim: %+v %v", got, ok)
	}
	again := r
	again.InvocationID, again.Digest, again.CreatedAt = "inv-2", "d2", base.Add(time.Minute)
	got, ok, err = g.IdempotencyClaim(ctx, again, base.Add(-time.Hour))
	must(t, err)
	if ok || got.InvocationID != "inv-1" || got.Digest != "d1" || !got.CreatedAt.Equal(micro(base)) {
		t.Fatalf("second claim: %+v %v; want the first record", got, ok)
	}
	other := again
	other.Scope = "agent:b"
	if _, ok, err = g.IdempotencyClaim(ctx, other, base.Add(-time.Hour)); err != nil || !ok {
		t.Fatalf("the same key in another scope: %v %v", ok, err)
	}
	// Past the horizon the old record is replaced.
	got, ok, err = g.IdempotencyClaim(ctx, again, base.Add(time.Second))
	must(t, err)
	if !ok || got.InvocationID != "inv-2" {
		t.Fatalf("claim over an expired record: %+v %v", got, ok)
	}
	// Release deletes only the claim that still names the invocation.
	must(t, g.IdempotencyRelease(ctx, "agent:a", "k1", "inv-1"))
	if got, ok, _ = g.IdempotencyClaim(ctx, r, base.Add(-time.Hour)); ok {
		t.Fatalf("release of a stale claim deleted the live one: %+v", got)
	}
	must(t, g.IdempotencyRelease(ctx, "agent:a", "k1", "inv-2"))
	if _, ok, err = g.IdempotencyClaim(ctx, r, base.Add(-time.Hour)); err != nil || !ok {
		t.Fatalf("claim after release: %v %v", ok, err)
	}
}

// testIdempotencyClaimRace: many claims of one key at once; exactly one
// stores its record and every other sees it.
func testIdempotencyClaimRace(t *testing.T, _ switchboard.Store, g switchboard.GovernanceStore) {
	ctx := context.Background()
	const n = 16
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		recs  [n]switchboard.IdempotencyRecord
		oks   [n]bool
		errs  [n]error
	)
	for i := range n {
		wg.Go(func() {
			r := switchboard.IdempotencyRecord{Scope: "s", Key: "k", Digest: "d", InvocationID: fmt.Sprintf("inv-%d", i), CreatedAt: base}
			<-start
			recs[i], oks[i], errs[i] = g.IdempotencyClaim(ctx, r, base.Add(-time.Hour))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		must(t, errs[i])
		if oks[i] {
			if winner >= 0 {
				t.Fatalf("claims %d and %d both won", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no claim won")
	}
	for i := range n {
		if recs[i].InvocationID != recs[winner].InvocationID {
			t.Fatalf("claim %d saw %s, the winner is %s", i, recs[i].InvocationID, recs[winner].InvocationID)
		}
	}
}

func testActivityHead(t *testing.T, s switchboard.Store, g switchboard.GovernanceStore) {
	ctx := context.Background()
	id, err := g.ActivityHead(ctx)
	must(t, err)
	if id != 0 {
		t.Fatalf("empty ledger head %d", id)
	}
	for i := range 3 {
		must(t, s.ActivityAppend(ctx, entry(i)))
	}
	if id, err = g.ActivityHead(ctx); err != nil || id != 3 {
		t.Fatalf("head %d, %v; want 3", id, err)
	}
}
