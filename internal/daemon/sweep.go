package daemon

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// The start-up sweep: before the daemon takes a call, everything a
// previous run left in flight gets a definite state and its ledger entry,
// and nothing is run again. See docs/architecture.md ("Crashes, keys and
// unknown outcomes").

// sweep settles the approvals, calls and jobs of the replicas in owners
// (switchboard.Replica: an earlier start of this daemon, or replicas that
// died; "" is the owner of work recorded before replicas were) and
// returns the calls whose approval it kept (invocation id → approval id).
// Work of every other replica is left alone.
//
//   - A pending approval of a durable call (recorded awaiting_approval, not
//     a browser call, whose tab died with the daemon's streams) stays
//     pending, and resume waits for its decision. One decided while the
//     call's replica was down is carried out by resume too (stillOwed).
//     Every other pending approval of those owners is cancelled with an
//     approval.decide entry.
//   - A call awaiting an approval that was not kept ends cancelled
//     (CANCELLED: it never ran); a call dispatched or pending ends failed
//     OUTCOME_UNKNOWN (it may have run; it is never re-run). Each gets its
//     tool.call entry in the transaction that ends it.
//   - A running job ends failed (its work died with its process).
//   - A live agent session ends cancelled (workspace.Agents.EndOwned), so
//     no replica lists a session whose work is gone.
//   - A running agent run ends failed OUTCOME_UNKNOWN with a RUN_ERROR
//     event in its stored log (endRuns); a run that ended waiting for an
//     approval stays waiting.
//   - At start (owners holds ""), idempotency keys without a recorded
//     call are released (releaseOrphanKeys).
func (d *Daemon) sweep(ctx context.Context, st switchboard.Store, owners map[string]bool) (map[string]string, error) {
	kept, n, err := d.gov.approvals.Recover(ctx, func(a switchboard.ApprovalRequest) approval.Fate {
		inv, err := st.InvocationGet(ctx, a.InvocationID)
		switch {
		case err != nil && owners[""]:
			return approval.Cancel // no call to wait for
		case err != nil || !owners[inv.Replica]:
			return approval.Leave // another replica's, and it is alive
		case inv.Status == switchboard.StatusAwaitingApproval && inv.Surface != switchboard.SurfaceBrowser:
			return approval.Keep
		}
		return approval.Cancel
	})
	if err != nil {
		return nil, fmt.Errorf("settle approvals left pending: %w", err)
	}
	if n > 0 {
		d.log.Warn("cancelled approvals left pending by a stopped daemon", "count", n)
	}
	keep := map[string]string{}
	for _, a := range kept {
		keep[a.InvocationID] = a.ID
	}
	var lookupErr error
	var entries []*switchboard.ActivityEntry // filled in by the store when the end commits
	ended, err := st.InvocationFailInFlight(ctx, time.Now(), func(inv switchboard.Invocation) (*switchboard.Error, *switchboard.ActivityEntry) {
		if !owners[inv.Replica] {
			return nil, nil // another replica's call, in flight there
		}
		cause := outcomeUnknown(inv.Replica)
		if inv.Status == switchboard.StatusAwaitingApproval {
			if _, ok := keep[inv.ID]; ok {
				return nil, nil
			}
			apr, ok, err := d.stillOwed(ctx, inv)
			if err != nil {
				lookupErr = cmp.Or(lookupErr, err)
				return nil, nil // left as it is; the sweep fails and is retried
			}
			if ok {
				keep[inv.ID] = apr
				return nil, nil
			}
			cause = errNotRun
		}
		done := inv
		done.Status, done.Error = switchboard.StatusFor(cause.Code), cause
		done.FinishedAt = time.Now()
		if !inv.CreatedAt.IsZero() { // as the record says; the entry said 0
			done.DurationMs = float64(done.FinishedAt.Sub(inv.CreatedAt).Microseconds()) / 1000
		}
		e := broker.SweptEntry(done)
		entries = append(entries, e)
		return cause, e
	})
	// These entries are this process's appends: the metrics count the
	// calls (the replica that ran them cannot), the anchor names them and
	// live tails here see them at once.
	for _, e := range entries {
		if e.ID != 0 && d.Ledger != nil {
			d.Ledger.Observe(*e)
		}
	}
	if err == nil && lookupErr != nil {
		err = fmt.Errorf("settle calls decided while their replica was down: %w", lookupErr)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve calls left in flight: %w", err)
	}
	if ended > 0 {
		d.log.Warn("ended calls left in flight by a stopped daemon", "count", ended)
	}
	ids := make([]string, 0, len(owners))
	for id := range owners {
		ids = append(ids, id)
	}
	if n, err := d.gov.jobs.Recover(ctx, ids...); err != nil {
		return nil, fmt.Errorf("fail jobs left running: %w", err)
	} else if n > 0 {
		d.log.Warn("failed jobs left running by a stopped daemon", "count", n)
	}
	if n, err := d.Agents.EndOwned(ctx, ids, "the replica running it stopped, and its work with it"); err != nil {
		return nil, fmt.Errorf("end agent sessions left running: %w", err)
	} else if n > 0 {
		d.log.Warn("ended agent sessions left running by a stopped daemon", "count", n)
	}
	if err := d.endRuns(ctx, st, owners); err != nil {
		return nil, err
	}
	if len(kept) > 0 {
		d.log.Info("calls awaiting approval outlived their daemon; they run here once approved", "count", len(kept))
	}
	if !owners[""] {
		return keep, nil
	}
	return keep, d.releaseOrphanKeys(ctx, st)
}

// stillOwed reports whether inv, a durable call of a stopped owner still
// recorded awaiting approval, has an approval whose outcome is still owed
// to it, and which: one still pending (Recover keeps those, but reads
// them a page at a time, and stops at a page it kept whole), or one
// decided (approved and not yet used, denied or expired) after its
// replica stopped and before this sweep. Nobody waits for those decisions
// any more, so resume carries them out — the approved call runs once (the
// approval is consumed and the record moves to dispatched by
// compare-and-swap, so a second survivor cannot run it too), a denied one
// ends denied — and the approval and the invocation tell the same story.
// It is asked of every such call the sweep meets, however many calls wait
// on other replicas.
func (d *Daemon) stillOwed(ctx context.Context, inv switchboard.Invocation) (string, bool, error) {
	if inv.Surface == switchboard.SurfaceBrowser {
		return "", false, nil // its tab's streams died with the replica
	}
	list, err := d.approvalsOf(ctx, inv)
	if err != nil {
		return "", false, err
	}
	for _, a := range list {
		switch {
		case a.Status == switchboard.ApprovalPending,
			a.Status == switchboard.ApprovalApproved && a.ConsumedAt.IsZero(),
			a.Status == switchboard.ApprovalDenied, a.Status == switchboard.ApprovalExpired:
			return a.ID, true, nil
		}
	}
	return "", false, nil
}

// approvalsOf is the approval request inv names; a record written before
// records named their approval is looked up by its invocation.
func (d *Daemon) approvalsOf(ctx context.Context, inv switchboard.Invocation) ([]switchboard.ApprovalRequest, error) {
	if inv.ApprovalID == "" {
		return d.gov.approvals.List(ctx, switchboard.ApprovalFilter{InvocationID: inv.ID})
	}
	a, err := d.gov.approvals.Get(ctx, inv.ApprovalID)
	switch {
	case switchboard.CodeOf(err) == switchboard.CodeNotFound:
		return nil, nil // stopped between the record and its request: nothing was asked
	case err != nil:
		return nil, err
	}
	return []switchboard.ApprovalRequest{a}, nil
}

var errNotRun = switchboard.Errorf(switchboard.CodeCancelled,
	"the daemon restarted while this call waited for approval, and it cannot wait across a restart; it was not run")

// outcomeUnknown is the end of a call in flight on replica when it
// stopped. It names the replica: with several, the operator looks for
// the one that died, not the one that noticed.
func outcomeUnknown(replica string) *switchboard.Error {
	who := "the daemon"
	if replica != "" {
		who = fmt.Sprintf("the daemon running it (replica %s)", replica)
	}
	return switchboard.Errorf(switchboard.CodeOutcomeUnknown,
		"outcome unknown: %s stopped while this call was in flight, so it may or may not have run; it will not be run again — check the backend before retrying (a retry with the same Idempotency-Key gets this answer)", who)
}

// resume hands the broker each call a sweep kept: it waits for the
// decision and runs the call once approved (broker.Adopt); the broker's
// Stop leaves it awaiting approval for the next start.
func (d *Daemon) resume(kept map[string]string) {
	for inv, apr := range kept {
		if err := d.Broker.Adopt(inv, apr); err != nil {
			d.log.Warn("a call awaiting approval was left for the next start", "invocation", inv, "approval", apr, "err", err)
		}
	}
}

// releaseOrphanKeys deletes idempotency keys that name no invocation. The
// broker claims a key in its invocation's own transaction, so only a
// daemon from before that change (which claimed first and recorded later)
// can have left one — by stopping between the two writes, before the call
// was recorded and so before it ran. Released, the caller's retry with the
// key runs the call once; resolved (a stored failure) it would replay an
// error for a call that never happened; kept, every retry is CONFLICT
// until the key expires.
func (d *Daemon) releaseOrphanKeys(ctx context.Context, st switchboard.Store) error {
	n, err := st.IdempotencyReleaseOrphans(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency keys without a call: %w", err)
	}
	if n > 0 {
		d.log.Warn("released idempotency keys left without a recorded call by the previous run", "count", n)
	}
	return nil
}
