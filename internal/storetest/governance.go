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

// The governance part of the suite: tokens, approvals, jobs, idempotency
// keys and the ledger head.

func testTokens(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	tok := switchboard.AgentToken{ID: "tok-1", Agent: "planner", User: "user:alice", Allow: []string{"tasks.*"}, Deny: []string{"*.delete"},
		PanelScope: switchboard.PanelScope{Panels: []string{"project.*"}, Slots: []string{"sidebar", "main"}}, Hash: "h1", CreatedAt: base}
	must(t, s.TokenCreate(ctx, tok))
	wantCode(t, s.TokenCreate(ctx, tok), switchboard.CodeConflict)
	must(t, s.TokenCreate(ctx, switchboard.AgentToken{ID: "tok-2", Agent: "other", Hash: "h2", CreatedAt: base.Add(time.Second)}))
	got, err := s.TokenGet(ctx, "tok-1")
	must(t, err)
	want := tok
	want.CreatedAt = micro(base)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("token round trip (-want +got):\n%s", diff)
	}
	if b, _ := json.Marshal(got); strings.Contains(string(b), "h1") {
		t.Fatalf("a token's hash must never be serialized: %s", b)
	}
	list, err := s.TokenList(ctx)
	must(t, err)
	if len(list) != 2 || list[0].ID != "tok-1" || list[1].ID != "tok-2" || list[1].Allow != nil && len(list[1].Allow) != 0 ||
		list[1].PanelScope.Limited() || len(list[0].Slots) != 2 || list[0].User != "user:alice" || list[1].User != "" {
		t.Fatalf("list: %+v", list)
	}
	rev, err := s.TokenRevoke(ctx, "tok-1", base.Add(time.Minute))
	must(t, err)
	if !rev.RevokedAt.Equal(micro(base.Add(time.Minute))) || rev.User != "user:alice" {
		t.Fatalf("revoked at %v (user %q)", rev.RevokedAt, rev.User)
	}
	rev, err = s.TokenRevoke(ctx, "tok-1", base.Add(time.Hour))
	must(t, err)
	if !rev.RevokedAt.Equal(micro(base.Add(time.Minute))) {
		t.Fatalf("a second revoke moved revokedAt to %v", rev.RevokedAt)
	}
	_, err = s.TokenRevoke(ctx, "nope", base)
	wantCode(t, err, switchboard.CodeNotFound)
	_, err = s.TokenGet(ctx, "nope")
	wantCode(t, err, switchboard.CodeNotFound)
}

func approvalReq(id, inv string) switchboard.ApprovalRequest {
	return switchboard.ApprovalRequest{
		ID: id, InvocationID: inv, RunID: "run-1", Tool: "tasks.delete", ToolVersion: 3, ArgsHash: "abc",
		Input: json.RawMessage(`{"id": 7}`), Summary: "delete task 7", Class: switchboard.ClassMutate,
		Agent: "agent:planner", AgentID: "agt_planner", Status: switchboard.ApprovalPending, CreatedAt: base, ExpiresAt: base.Add(10 * time.Minute),
	}
}

func testApprovalLifecycle(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	a := approvalReq("apr-1", "inv-1")
	a.User = "user:alice"
	must(t, s.ApprovalCreate(ctx, a))
	wantCode(t, s.ApprovalCreate(ctx, approvalReq("apr-2", "inv-1")), switchboard.CodeConflict) // one per invocation
	b := approvalReq("apr-3", "inv-3")
	b.Agent, b.CreatedAt = "agent:other", base.Add(time.Second)
	must(t, s.ApprovalCreate(ctx, b)) // names no user: the operator's

	got, err := s.ApprovalGet(ctx, "apr-1")
	must(t, err)
	want := a
	want.CreatedAt, want.ExpiresAt = micro(a.CreatedAt), micro(a.ExpiresAt)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("approval round trip (-want +got):\n%s", diff)
	}
	list, err := s.ApprovalList(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending})
	must(t, err)
	if len(list) != 2 || list[0].ID != "apr-1" {
		t.Fatalf("pending list: %+v", list)
	}
	list, err = s.ApprovalList(ctx, switchboard.ApprovalFilter{Agent: "agent:other"})
	must(t, err)
	if len(list) != 1 || list[0].ID != "apr-3" {
		t.Fatalf("by agent: %+v", list)
	}
	list, err = s.ApprovalList(ctx, switchboard.ApprovalFilter{InvocationID: "inv-1"})
	must(t, err)
	if len(list) != 1 || list[0].ID != "apr-1" {
		t.Fatalf("by invocation: %+v", list)
	}
	for user, want := range map[string]string{"user:alice": "apr-1", switchboard.Operator: "apr-3"} {
		list, err = s.ApprovalList(ctx, switchboard.ApprovalFilter{User: user})
		must(t, err)
		if len(list) != 1 || list[0].ID != want {
			t.Fatalf("for %s: %+v", user, list)
		}
	}
	list, err = s.ApprovalList(ctx, switchboard.ApprovalFilter{User: "user:bob"})
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("for bob: %+v", list)
	}

	// Consuming before a decision fails; deciding is a CAS from pending.
	_, err = s.ApprovalConsume(ctx, "apr-1", base)
	wantCode(t, err, switchboard.CodeConflict)
	d := got
	d.Status, d.DecidedBy, d.Channel, d.Reason, d.DecidedAt = switchboard.ApprovalApproved, "user:admin", "cli", "ok", base.Add(time.Minute)
	dec, err := s.ApprovalDecide(ctx, d)
	must(t, err)
	if dec.Status != switchboard.ApprovalApproved || dec.DecidedBy != "user:admin" || dec.Channel != "cli" || !dec.DecidedAt.Equal(micro(d.DecidedAt)) {
		t.Fatalf("decided: %+v", dec)
	}
	d.Status = switchboard.ApprovalDenied
	cur, err := s.ApprovalDecide(ctx, d)
	wantCode(t, err, switchboard.CodeConflict)
	if cur.Status != switchboard.ApprovalApproved {
		t.Fatalf("a failed decide returned %+v, want the approved record", cur)
	}
	// Single use.
	used, err := s.ApprovalConsume(ctx, "apr-1", base.Add(2*time.Minute))
	must(t, err)
	if !used.ConsumedAt.Equal(micro(base.Add(2 * time.Minute))) {
		t.Fatalf("consumed: %+v", used)
	}
	_, err = s.ApprovalConsume(ctx, "apr-1", base.Add(3*time.Minute))
	wantCode(t, err, switchboard.CodeConflict)
	d.Status = switchboard.ApprovalPending
	_, err = s.ApprovalDecide(ctx, d)
	wantCode(t, err, switchboard.CodeInvalidInput)
	_, err = s.ApprovalGet(ctx, "nope")
	wantCode(t, err, switchboard.CodeNotFound)
	nope := approvalReq("nope", "x")
	nope.Status = switchboard.ApprovalDenied
	_, err = s.ApprovalDecide(ctx, nope)
	wantCode(t, err, switchboard.CodeNotFound)

	n, err := s.ApprovalCancelPending(ctx, base.Add(time.Hour), "restart")
	must(t, err)
	if n != 1 {
		t.Fatalf("cancelled %d pending, want 1", n)
	}
	c, err := s.ApprovalGet(ctx, "apr-3")
	must(t, err)
	if c.Status != switchboard.ApprovalCancelled || c.Reason != "restart" {
		t.Fatalf("after cancel: %+v", c)
	}
}

// testApprovalDecideRace: approvers and deniers race on one request;
// exactly one decision is stored and every loser sees it.
func testApprovalDecideRace(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.ApprovalCreate(ctx, approvalReq("apr-1", "inv-1")))
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
			recs[i], errs[i] = s.ApprovalDecide(ctx, d)
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

func testJobs(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	j := switchboard.Job{ID: "job-1", InvocationID: "inv-1", Tool: "deck.export", Caller: "agent:a", User: "user:alice", Status: switchboard.JobRunning, CreatedAt: base}
	must(t, s.JobCreate(ctx, j))
	wantCode(t, s.JobCreate(ctx, j), switchboard.CodeConflict)
	must(t, s.JobCreate(ctx, switchboard.Job{ID: "job-2", Tool: "x", Status: switchboard.JobRunning, CreatedAt: base}))
	got, err := s.JobGet(ctx, "job-1")
	must(t, err)
	if got.Status != switchboard.JobRunning || !got.UpdatedAt.Equal(micro(base)) || got.Caller != "agent:a" || got.User != "user:alice" {
		t.Fatalf("created: %+v", got)
	}
	p := got
	p.Progress, p.Message, p.UpdatedAt = 0.5, "half way", base.Add(time.Second)
	got, err = s.JobUpdate(ctx, p, switchboard.JobRunning)
	must(t, err)
	if got.Progress != 0.5 || got.Message != "half way" {
		t.Fatalf("progress: %+v", got)
	}
	done := got
	done.Status, done.Progress, done.Result, done.FinishedAt = switchboard.JobSucceeded, 1, json.RawMessage(`{"url": "x"}`), base.Add(2*time.Second)
	got, err = s.JobUpdate(ctx, done, switchboard.JobRunning)
	must(t, err)
	if got.Status != switchboard.JobSucceeded || string(got.Result) != `{"url": "x"}` || !got.FinishedAt.Equal(micro(done.FinishedAt)) {
		t.Fatalf("finished: %+v", got)
	}
	late := done
	late.Status, late.Error = switchboard.JobCancelled, switchboard.Errorf(switchboard.CodeCancelled, "late")
	got, err = s.JobUpdate(ctx, late, switchboard.JobRunning)
	wantCode(t, err, switchboard.CodeConflict)
	if got.Status != switchboard.JobSucceeded {
		t.Fatalf("a failed CAS returned %+v", got)
	}
	n, err := s.JobFailRunning(ctx, base.Add(time.Hour), switchboard.Errorf(switchboard.CodeInternal, "lost by a restart"))
	must(t, err)
	if n != 1 {
		t.Fatalf("failed %d running jobs, want 1", n)
	}
	got, err = s.JobGet(ctx, "job-2")
	must(t, err)
	if got.Status != switchboard.JobFailed || got.Error == nil || got.Error.Code != switchboard.CodeInternal || got.FinishedAt.IsZero() {
		t.Fatalf("lost job: %+v", got)
	}
	_, err = s.JobGet(ctx, "nope")
	wantCode(t, err, switchboard.CodeNotFound)
}

func testIdempotencyClaim(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	claim := func(r switchboard.IdempotencyRecord, notBefore time.Time) (switchboard.IdempotencyRecord, bool, error) {
		return s.IdempotencyClaim(ctx, r, notBefore, invocation(r.InvocationID, switchboard.StatusDispatched))
	}
	_, err := s.IdempotencyGet(ctx, "agent:a", "k1")
	wantCode(t, err, switchboard.CodeNotFound)
	r := switchboard.IdempotencyRecord{Scope: "agent:a", Key: "k1", Digest: "d1", InvocationID: "inv-1", CreatedAt: base}
	got, ok, err := claim(r, base.Add(-time.Hour))
	must(t, err)
	if !ok || got.InvocationID != "inv-1" {
		t.Fatalf("first claim: %+v %v", got, ok)
	}
	// The claim and its invocation are one write.
	inv, err := s.InvocationGet(ctx, "inv-1")
	must(t, err)
	wantInvocation(t, stored(invocation("inv-1", switchboard.StatusDispatched)), inv)
	if got, err := s.IdempotencyGet(ctx, "agent:a", "k1"); err != nil || got.InvocationID != "inv-1" || got.Digest != "d1" || !got.CreatedAt.Equal(micro(base)) {
		t.Fatalf("get: %+v %v", got, err)
	}
	again := r
	again.InvocationID, again.Digest, again.CreatedAt = "inv-2", "d2", base.Add(time.Minute)
	got, ok, err = claim(again, base.Add(-time.Hour))
	must(t, err)
	if ok || got.InvocationID != "inv-1" || got.Digest != "d1" || !got.CreatedAt.Equal(micro(base)) {
		t.Fatalf("second claim: %+v %v; want the first record", got, ok)
	}
	if _, err := s.InvocationGet(ctx, "inv-2"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("a lost claim recorded its invocation: %v", err)
	}
	other := again
	other.Scope, other.InvocationID = "agent:b", "inv-2b"
	if _, ok, err = claim(other, base.Add(-time.Hour)); err != nil || !ok {
		t.Fatalf("the same key in another scope: %v %v", ok, err)
	}
	// Past the horizon the old record holds while its call is in flight
	//, and is replaced once the call is terminal.
	got, ok, err = claim(again, base.Add(time.Second))
	must(t, err)
	if ok || got.InvocationID != "inv-1" {
		t.Fatalf("claim over an expired record of a call in flight: %+v %v; want the first record kept", got, ok)
	}
	if _, err := s.InvocationGet(ctx, "inv-2"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("a refused claim recorded its invocation: %v", err)
	}
	done := invocation("inv-1", switchboard.StatusSucceeded)
	done.FinishedAt = base.Add(time.Second)
	_, err = s.InvocationUpdate(ctx, done, switchboard.StatusDispatched)
	must(t, err)
	got, ok, err = claim(again, base.Add(time.Second))
	must(t, err)
	if !ok || got.InvocationID != "inv-2" {
		t.Fatalf("claim over an expired record: %+v %v", got, ok)
	}
	// A claim whose invocation cannot be inserted stores no key either.
	dup := switchboard.IdempotencyRecord{Scope: "agent:a", Key: "k-dup", Digest: "d", InvocationID: "inv-1", CreatedAt: base}
	_, _, err = claim(dup, base.Add(-time.Hour))
	wantCode(t, err, switchboard.CodeConflict)
	_, err = s.IdempotencyGet(ctx, "agent:a", "k-dup")
	wantCode(t, err, switchboard.CodeNotFound)
	// Release deletes only the claim that still names the invocation.
	must(t, s.IdempotencyRelease(ctx, "agent:a", "k1", "inv-1"))
	r.InvocationID = "inv-3"
	if got, ok, _ = claim(r, base.Add(-time.Hour)); ok {
		t.Fatalf("release of a stale claim deleted the live one: %+v", got)
	}
	must(t, s.IdempotencyRelease(ctx, "agent:a", "k1", "inv-2"))
	if _, ok, err = claim(r, base.Add(-time.Hour)); err != nil || !ok {
		t.Fatalf("claim after release: %v %v", ok, err)
	}
	// Every key here has its invocation: the orphan sweep keeps them all
	// (the drivers' own tests seed real orphans with SQL).
	n, err := s.IdempotencyReleaseOrphans(ctx)
	if err != nil || n != 0 {
		t.Fatalf("orphan sweep of a store without orphans: %d %v", n, err)
	}
	if _, err := s.IdempotencyGet(ctx, "agent:a", "k1"); err != nil {
		t.Fatal(err)
	}
}

// testIdempotencyClaimRace: many claims of one key at once; exactly one
// stores its record and every other sees it.
func testIdempotencyClaimRace(t *testing.T, s switchboard.Store) {
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
			recs[i], oks[i], errs[i] = s.IdempotencyClaim(ctx, r, base.Add(-time.Hour), invocation(r.InvocationID, switchboard.StatusDispatched))
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
		if _, err := s.InvocationGet(ctx, fmt.Sprintf("inv-%d", i)); i != winner && switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("losing claim %d recorded its invocation: %v", i, err)
		}
	}
}

func testActivityHead(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	id, err := s.ActivityHead(ctx)
	must(t, err)
	if id != 0 {
		t.Fatalf("empty ledger head %d", id)
	}
	for i := range 3 {
		must(t, s.ActivityAppend(ctx, entry(i)))
	}
	if id, err = s.ActivityHead(ctx); err != nil || id != 3 {
		t.Fatalf("head %d, %v; want 3", id, err)
	}
}

// Signing keys: kept with their private bytes, listed newest first from a
// time on, removed before a time; an ID is unique.
func testSigningKeys(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	for i, id := range []string{"k1", "k2", "k3"} {
		must(t, s.SigningKeyCreate(ctx, switchboard.SigningKey{ID: id, Algorithm: "ES256",
			Private: []byte{0, byte(i), 0xff}, CreatedAt: base.Add(time.Duration(i) * time.Hour)}))
	}
	wantCode(t, s.SigningKeyCreate(ctx, switchboard.SigningKey{ID: "k1", Algorithm: "ES256", Private: []byte{1}, CreatedAt: base}), switchboard.CodeConflict)
	wantCode(t, s.SigningKeyCreate(ctx, switchboard.SigningKey{ID: "k9", Algorithm: "ES256", CreatedAt: base}), switchboard.CodeInvalidInput)
	list, err := s.SigningKeyList(ctx, base.Add(time.Hour))
	must(t, err)
	want := []switchboard.SigningKey{
		{ID: "k3", Algorithm: "ES256", Private: []byte{0, 2, 0xff}, CreatedAt: micro(base.Add(2 * time.Hour))},
		{ID: "k2", Algorithm: "ES256", Private: []byte{0, 1, 0xff}, CreatedAt: micro(base.Add(time.Hour))},
	}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Fatalf("list (-want +got):\n%s", diff)
	}
	if b, _ := json.Marshal(list[0]); strings.Contains(string(b), "/w") || strings.Contains(string(b), "private") {
		t.Fatalf("a private key must never be serialized: %s", b)
	}
	n, err := s.SigningKeyDelete(ctx, base.Add(90*time.Minute))
	must(t, err)
	list, err = s.SigningKeyList(ctx, time.Time{})
	must(t, err)
	if n != 2 || len(list) != 1 || list[0].ID != "k3" {
		t.Fatalf("after delete: %d removed, %+v", n, list)
	}
}
