package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/approval"
	"github.com/switchboardhq/switchboard/broker"
)

// The start-up sweep: before the daemon takes a call, everything a
// previous run left in flight gets a definite state and its ledger entry,
// and nothing is run again. See docs/architecture.md ("Crashes, keys and
// unknown outcomes").

// resumed are the calls whose approval outlived the restart: the
// approval and the invocation each, and the goroutines that wait for them.
type resumed struct {
	kept map[string]string // invocation id → approval id
	stop context.CancelCauseFunc
	wg   sync.WaitGroup
}

// sweep settles approvals, calls and idempotency keys left by the previous
// run.
//
//   - A pending approval of a durable call (recorded awaiting_approval, not
//     a browser call, whose tab died with the daemon's streams) stays
//     pending, and resumeApprovals waits for its decision. Every other
//     pending approval is cancelled with an approval.decide entry.
//   - A call awaiting an approval that was not kept ends cancelled
//     (CANCELLED: it never ran); a call dispatched or pending ends failed
//     OUTCOME_UNKNOWN (it may have run; it is never re-run). Each gets its
//     tool.call entry in the transaction that ends it.
//   - Idempotency keys without a recorded call are released
//     (releaseOrphanKeys).
func (d *Daemon) sweep(ctx context.Context, st switchboard.Store) error {
	kept, n, err := d.gov.approvals.Recover(ctx, func(a switchboard.ApprovalRequest) bool {
		inv, err := st.InvocationGet(ctx, a.InvocationID)
		return err == nil && inv.Status == switchboard.StatusAwaitingApproval && inv.Surface != switchboard.SurfaceBrowser
	})
	if err != nil {
		return fmt.Errorf("settle approvals left pending: %w", err)
	}
	if n > 0 {
		d.log.Warn("cancelled approvals left pending by the previous run", "count", n)
	}
	d.resumed.kept = map[string]string{}
	for _, a := range kept {
		d.resumed.kept[a.InvocationID] = a.ID
	}
	ended, err := st.InvocationFailInFlight(ctx, time.Now(), func(inv switchboard.Invocation) (*switchboard.Error, *switchboard.ActivityEntry) {
		cause := errOutcomeUnknown
		if inv.Status == switchboard.StatusAwaitingApproval {
			if _, ok := d.resumed.kept[inv.ID]; ok {
				return nil, nil
			}
			cause = errNotRun
		}
		done := inv
		done.Status, done.Error = switchboard.StatusFor(cause.Code), cause
		done.FinishedAt = time.Now()
		return cause, broker.SweptEntry(done)
	})
	if err != nil {
		return fmt.Errorf("resolve calls left in flight: %w", err)
	}
	if ended > 0 {
		d.log.Warn("ended calls left in flight by the previous run", "count", ended)
	}
	if len(kept) > 0 {
		d.log.Info("calls awaiting approval outlived the restart; they run once approved", "count", len(kept))
	}
	return d.releaseOrphanKeys(ctx, st)
}

var (
	errOutcomeUnknown = switchboard.Errorf(switchboard.CodeOutcomeUnknown,
		"outcome unknown: the daemon stopped while this call was in flight, so it may or may not have run; it will not be run again — check the backend before retrying (a retry with the same Idempotency-Key gets this answer)")
	errNotRun = switchboard.Errorf(switchboard.CodeCancelled,
		"the daemon restarted while this call waited for approval, and it cannot wait across a restart; it was not run")
)

// resumeApprovals waits, in the background, for the decision of each call
// the sweep kept, and runs it once approved (broker.Resume).
func (d *Daemon) resumeApprovals() {
	ctx, stop := context.WithCancelCause(context.Background())
	d.resumed.stop = stop
	for inv, apr := range d.resumed.kept {
		d.resumed.wg.Go(func() {
			got, err := d.Broker.Resume(ctx, inv, apr)
			if ctx.Err() == nil {
				d.log.Info("resumed call ended", "invocation", inv, "approval", apr, "status", got.Status, "err", err)
			}
		})
	}
}

// stopResumed ends the waits of resumed calls without deciding them, and
// waits for calls already running to record their outcome.
func (d *Daemon) stopResumed() {
	if d.resumed.stop != nil {
		d.resumed.stop(approval.ErrStopped)
	}
	d.resumed.wg.Wait()
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
