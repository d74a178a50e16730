package broker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// A call of a read or ui tool changes nothing, so a crash while it runs
// needs no record to resolve: the caller got no answer and may simply ask
// again. Such a call is recorded once, at its end, in one transaction
// (record, outcome and ledger entry: Store.InvocationCreateFinished)
// instead of two — unless it runs longer than Options.RecordAfter, when
// its started record is written after all, so that a slow call is visible
// (GET /invocations/{id}) and a crash during it still leaves a record.
// mutate and job calls, calls with an idempotency key (the key is claimed
// with the record, before the call runs) and browser calls (the tab's
// answer is matched against the record) are always recorded first.

// recordsLate says whether c may be recorded at its end.
func (b *Broker) recordsLate(c *call) bool {
	if b.opts.RecordAfter < 0 || c.claim != nil || c.target != nil {
		return false
	}
	return c.tool.Class == switchboard.ClassRead || c.tool.Class == switchboard.ClassUI
}

// lateRecord is the started record of a call recorded late: written by a
// timer if the call outlives RecordAfter, or never.
type lateRecord struct {
	b        *Broker
	ctx      context.Context
	inv      switchboard.Invocation
	onRecord func(switchboard.Invocation)

	mu      sync.Mutex
	ended   bool // the call returned: the timer writes nothing any more
	written bool // the started record is committed
}

// write is the timer's: it commits the started record unless the call has
// ended. Holding mu while it writes makes end wait for the outcome of a
// write under way, so the call's end knows which record exists.
func (l *lateRecord) write() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), finishTimeout)
	defer cancel()
	if err := l.b.store.InvocationCreate(wctx, l.inv); err != nil {
		// The call runs on unrecorded; its end records it in one go.
		l.b.log.WarnContext(l.ctx, "record a slow read", "invocation", l.inv.ID, "tool", l.inv.Tool, "err", err)
		return
	}
	l.written = true
	if l.onRecord != nil {
		l.onRecord(l.inv)
	}
}

// end stops the timer's write and reports whether the started record was
// written.
func (l *lateRecord) end() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	return l.written
}

// dispatchLate executes a read or ui call holding its slot, with its
// record not yet written.
func (b *Broker) dispatchLate(ctx, cctx context.Context, c *call, inv switchboard.Invocation, onRecord func(switchboard.Invocation), release func()) (switchboard.Invocation, error) {
	c.invocationID = inv.ID
	l := &lateRecord{b: b, ctx: ctx, inv: inv, onRecord: onRecord}
	timer := time.AfterFunc(b.opts.RecordAfter, l.write)
	result, err := b.execute(cctx, c, release)
	if err == nil {
		result, err = b.checkResult(c, result)
	}
	timer.Stop()
	if l.end() {
		return b.finish(ctx, cctx, c, inv, result, err)
	}
	return b.finishLate(ctx, cctx, c, inv, result, err, onRecord)
}

// finishLate records a call that ran unrecorded: the terminal record and
// its ledger entry in one transaction, retried like finish's write.
func (b *Broker) finishLate(ctx, cctx context.Context, c *call, inv switchboard.Invocation, result json.RawMessage, err error, onRecord func(switchboard.Invocation)) (switchboard.Invocation, error) {
	if err != nil && cctx.Err() != nil && switchboard.CodeOf(err) == switchboard.CodeInternal {
		err = ctxError(cctx)
	}
	inv = b.terminal(inv, result, err)
	if inv.Error != nil && inv.Error.Details != nil {
		// The caller gets the record as the store keeps it (details as
		// JSON decodes them), as from every other path.
		if raw, err := json.Marshal(inv.Error.Details); err == nil {
			var d any
			if json.Unmarshal(raw, &d) == nil {
				e := *inv.Error
				e.Details, inv.Error = d, &e
			}
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	e := b.entry(c, inv)
	var werr error
	retryStore(fctx, func() error {
		werr = b.store.InvocationCreateFinished(fctx, inv, e)
		return werr
	})
	switch {
	case werr == nil:
		b.observe(e)
	case switchboard.CodeOf(werr) == switchboard.CodeConflict:
		// The id is fresh and random: the record exists only because an
		// earlier attempt landed although its answer was lost. It holds
		// this outcome and its entry, written together.
		stored, gerr := b.store.InvocationGet(fctx, inv.ID)
		if gerr != nil {
			werr = gerr
			break
		}
		inv, werr = stored, nil
	}
	if werr != nil {
		b.log.ErrorContext(ctx, "record invocation", "invocation", inv.ID, "tool", inv.Tool, "status", inv.Status, "err", werr)
		return inv, switchboard.Errorf(switchboard.CodeOutcomeUnknown,
			"the call of %s ended %s, but it could not be recorded (%s); there is no record of it, so its outcome is known only from this answer",
			inv.Tool, inv.Status, switchboard.AsError(werr).Message).
			WithDetails(map[string]any{"invocationId": inv.ID, "status": inv.Status, "recorded": false})
	}
	if onRecord != nil {
		onRecord(inv)
	}
	return inv, invocationError(inv)
}
