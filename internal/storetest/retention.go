package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// testInvocationExpire: only terminal records that are old enough and that
// nothing still needs are deleted, oldest first and at most limit at a
// time; the decided approval of a deleted record goes with it; the ledger
// is untouched.
func testInvocationExpire(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	old, cut := base, base.Add(time.Hour)
	at := func(i int) time.Time { return old.Add(time.Duration(i) * time.Second) }
	finished := func(id string, i int, st switchboard.Status) switchboard.Invocation {
		inv := invocation(id, st)
		inv.CreatedAt, inv.UpdatedAt = at(i), at(i)
		if st.Terminal() {
			inv.FinishedAt = at(i + 1)
		}
		return inv
	}
	// Five plain old calls, created in the order of their numbers.
	for i := range 5 {
		must(t, s.InvocationCreate(ctx, finished(fmt.Sprintf("old-%d", i), 10+i, switchboard.StatusSucceeded)))
	}
	// What must stay although it is old:
	must(t, s.InvocationCreate(ctx, finished("in-flight", 1, switchboard.StatusDispatched)))
	must(t, s.InvocationCreate(ctx, finished("awaiting", 2, switchboard.StatusAwaitingApproval)))
	must(t, s.ApprovalCreate(ctx, approvalReq("apr-pending", "awaiting")))
	keyed := finished("keyed", 3, switchboard.StatusSucceeded)
	keyed.Status, keyed.FinishedAt = switchboard.StatusDispatched, time.Time{}
	r := switchboard.IdempotencyRecord{Scope: "s", Key: "k", Digest: "d", InvocationID: "keyed", CreatedAt: at(3)}
	if _, ok, err := s.IdempotencyClaim(ctx, r, at(0), keyed); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	keyed.Status, keyed.FinishedAt = switchboard.StatusSucceeded, at(4)
	_, err := s.InvocationUpdate(ctx, keyed, switchboard.StatusDispatched)
	must(t, err)
	must(t, s.InvocationCreate(ctx, finished("job-call", 4, switchboard.StatusSucceeded)))
	must(t, s.JobCreate(ctx, switchboard.Job{ID: "job-1", InvocationID: "job-call", Tool: "deck.export", Status: switchboard.JobRunning, CreatedAt: at(4)}))
	// Created before the bound but finished after it: not yet.
	late := finished("late", 5, switchboard.StatusSucceeded)
	late.FinishedAt = cut.Add(time.Minute)
	must(t, s.InvocationCreate(ctx, late))
	// New: not yet.
	must(t, s.InvocationCreate(ctx, finished("new", 7200, switchboard.StatusFailed)))
	// An old denied call with its decided approval: both go.
	must(t, s.InvocationCreate(ctx, finished("denied", 6, switchboard.StatusAwaitingApproval)))
	must(t, s.ApprovalCreate(ctx, approvalReq("apr-denied", "denied")))
	d := approvalReq("apr-denied", "denied")
	d.Status, d.DecidedAt = switchboard.ApprovalDenied, at(7)
	_, err = s.ApprovalDecide(ctx, d)
	must(t, err)
	den := finished("denied", 6, switchboard.StatusDenied)
	_, err = s.InvocationUpdate(ctx, den, switchboard.StatusAwaitingApproval)
	must(t, err)
	e := entry(0)
	must(t, s.ActivityAppend(ctx, e))

	wantCode(t, func() error { _, err := s.InvocationExpire(ctx, time.Time{}, 10); return err }(), switchboard.CodeInvalidInput)
	wantCode(t, func() error { _, err := s.InvocationExpire(ctx, cut, 0); return err }(), switchboard.CodeInvalidInput)

	// A batch of 2 takes the two oldest deletable records: the denied call
	// (created at 6) and old-0 (10).
	n, err := s.InvocationExpire(ctx, cut, 2)
	must(t, err)
	if n != 2 {
		t.Fatalf("first batch deleted %d, want 2", n)
	}
	wantGone(t, s, "denied", "old-0")
	if _, err := s.ApprovalGet(ctx, "apr-denied"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("the deleted call's decided approval: %v, want NOT_FOUND", err)
	}
	total := n
	for {
		n, err := s.InvocationExpire(ctx, cut, 2)
		must(t, err)
		if n == 0 {
			break
		}
		total += n
	}
	if total != 6 {
		t.Fatalf("deleted %d records in all, want 6", total)
	}
	wantGone(t, s, "old-1", "old-2", "old-3", "old-4")
	left, err := s.InvocationList(ctx, switchboard.InvocationFilter{Limit: 100})
	must(t, err)
	var ids []string
	for _, inv := range left {
		ids = append(ids, inv.ID)
	}
	slices.Sort(ids)
	if want := []string{"awaiting", "in-flight", "job-call", "keyed", "late", "new"}; !slices.Equal(ids, want) {
		t.Fatalf("kept %v, want %v", ids, want)
	}
	if _, err := s.ApprovalGet(ctx, "apr-pending"); err != nil {
		t.Fatalf("the pending approval: %v", err)
	}
	// Once the key expires and the job ends, their calls may go too.
	k, err := s.IdempotencyExpire(ctx, cut, 10)
	must(t, err)
	if k != 1 {
		t.Fatalf("expired %d keys, want 1", k)
	}
	_, err = s.JobUpdate(ctx, switchboard.Job{ID: "job-1", Status: switchboard.JobSucceeded, UpdatedAt: at(8), FinishedAt: at(8)}, switchboard.JobRunning)
	must(t, err)
	n, err = s.InvocationExpire(ctx, cut, 10)
	must(t, err)
	if n != 2 {
		t.Fatalf("after the key and the job: deleted %d, want 2", n)
	}
	wantGone(t, s, "keyed", "job-call")
	if head, err := s.ActivityHead(ctx); err != nil || head != e.ID {
		t.Fatalf("ledger head %d %v, want %d: expiry never touches the ledger", head, err, e.ID)
	}
}

func wantGone(t *testing.T, s switchboard.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.InvocationGet(context.Background(), id); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("invocation %s: %v, want NOT_FOUND", id, err)
		}
	}
}

// testIdempotencyExpire: keys older than the bound go, oldest first and at
// most limit at a time; newer keys stay, and so does an old key whose call
// is not terminal, until it is.
func testIdempotencyExpire(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	finish := func(id string) {
		t.Helper()
		inv := invocation(id, switchboard.StatusSucceeded)
		inv.FinishedAt = base
		_, err := s.InvocationUpdate(ctx, inv, switchboard.StatusDispatched, switchboard.StatusAwaitingApproval)
		must(t, err)
	}
	for i := range 5 {
		id := fmt.Sprintf("inv-%d", i)
		r := switchboard.IdempotencyRecord{Scope: "s", Key: fmt.Sprintf("k%d", i), Digest: "d", InvocationID: id,
			CreatedAt: base.Add(time.Duration(i) * time.Minute)}
		if _, ok, err := s.IdempotencyClaim(ctx, r, base.Add(-time.Hour), invocation(id, switchboard.StatusDispatched)); err != nil || !ok {
			t.Fatalf("claim %d: %v %v", i, ok, err)
		}
		finish(id)
	}
	// The oldest key of all names a call still awaiting its approval.
	waiting := switchboard.IdempotencyRecord{Scope: "s", Key: "k-waiting", Digest: "d", InvocationID: "inv-waiting", CreatedAt: base.Add(-time.Minute)}
	if _, ok, err := s.IdempotencyClaim(ctx, waiting, base.Add(-time.Hour), invocation("inv-waiting", switchboard.StatusAwaitingApproval)); err != nil || !ok {
		t.Fatalf("claim waiting: %v %v", ok, err)
	}
	wantCode(t, func() error { _, err := s.IdempotencyExpire(ctx, base, -1); return err }(), switchboard.CodeInvalidInput)
	cut := base.Add(3 * time.Minute) // k0, k1, k2 are older
	n, err := s.IdempotencyExpire(ctx, cut, 2)
	must(t, err)
	if n != 2 {
		t.Fatalf("first batch %d, want 2", n)
	}
	for _, k := range []string{"k0", "k1"} {
		if _, err := s.IdempotencyGet(ctx, "s", k); switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Fatalf("%s: %v, want NOT_FOUND", k, err)
		}
	}
	n, err = s.IdempotencyExpire(ctx, cut, 2)
	must(t, err)
	if n != 1 {
		t.Fatalf("second batch %d, want 1", n)
	}
	for _, k := range []string{"k3", "k4", "k-waiting"} {
		if _, err := s.IdempotencyGet(ctx, "s", k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	// Once its call is terminal, the waiting key goes too.
	finish("inv-waiting")
	if n, err = s.IdempotencyExpire(ctx, cut, 2); err != nil || n != 1 {
		t.Fatalf("after the waiting call ended: %d %v, want 1", n, err)
	}
	if _, err := s.IdempotencyGet(ctx, "s", "k-waiting"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("k-waiting after its call ended: %v, want NOT_FOUND", err)
	}
	// The keys' invocations are untouched: retention of records is
	// InvocationExpire's.
	if _, err := s.InvocationGet(ctx, "inv-0"); err != nil {
		t.Fatal(err)
	}
}
