package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// NewID returns a random 128-bit identifier, hex encoded. Invocation and
// run ids are unguessable because a tab's result POST names them.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// newInvocation builds the record stored before execution. A call that
// needs no approval is stored directly as dispatched: nothing happens
// between pending and dispatched then, and one fewer write keeps the call
// path fast. A crash after this write leaves an in-flight record that the
// next start fails with a clear code (Store.InvocationFailInFlight).
func (b *Broker) newInvocation(c *call, req CallRequest, status switchboard.Status) switchboard.Invocation {
	now := b.now()
	inv := switchboard.Invocation{
		ID:          NewID(),
		RunID:       req.RunID,
		Tool:        c.tool.Name,
		ToolVersion: c.tool.Version,
		Surface:     c.tool.Surface,
		SessionID:   req.SessionID,
		Status:      status,
		Input:       c.input,
		InputBytes:  len(c.input),
		CreatedAt:   now,
		UpdatedAt:   now,
		Replica:     b.opts.Replica,
	}
	if inv.RunID == "" { // a direct call is a run of its own
		inv.RunID = NewID()
	}
	if c.target != nil {
		inv.SessionID = c.target.SessionID
	}
	if c.hasCaller {
		inv.Caller, inv.User = c.caller.String(), c.caller.ActsFor()
	}
	inv.AgentID = c.agentID
	return inv
}

// finish records the terminal state with a compare-and-swap from any
// in-flight state and writes the ledger entry. If another writer got there
// first (a late browser result, an approval timeout), its record wins and
// is what the caller gets. The writes use
// a context detached from the caller's, so a cancelled call is still
// recorded as cancelled.
func (b *Broker) finish(ctx, cctx context.Context, c *call, inv switchboard.Invocation, result json.RawMessage, err error) (switchboard.Invocation, error) {
	stored, err := b.finishRecord(ctx, cctx, c, inv, result, err)
	if stored.Status.Terminal() {
		b.ended(ctx, stored, c.announce || c.claim != nil)
	}
	return stored, err
}

// finishRecord is finish's write: the outcome and its ledger entry.
func (b *Broker) finishRecord(ctx, cctx context.Context, c *call, inv switchboard.Invocation, result json.RawMessage, err error) (switchboard.Invocation, error) {
	if err != nil && cctx.Err() != nil && switchboard.CodeOf(err) == switchboard.CodeInternal {
		err = ctxError(cctx) // e.g. an approval wait or a browser await ended by the deadline
	}
	inv = b.terminal(inv, result, err)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	// One transaction writes the outcome and its ledger entry, so a crash
	// cannot leave a terminal record without its entry.
	e := b.entry(c, inv)
	var (
		stored switchboard.Invocation
		uerr   error
	)
	// The tool has run: a store fault here (a lock, a lost connection) is
	// retried until the outcome lands or finishTimeout passes, never handed
	// to the caller as "nothing was written".
	retryStore(fctx, func() error {
		from := switchboard.InFlight
		if c.from != nil {
			from = c.from
		}
		stored, uerr = b.store.InvocationFinish(fctx, inv, e, from...)
		return uerr
	})
	switch {
	case uerr == nil:
		b.observe(e)
		return stored, invocationError(stored)
	case switchboard.CodeOf(uerr) == switchboard.CodeConflict && ownFinish(stored, inv):
		// An earlier attempt landed although its answer was lost (a
		// deadline hit during COMMIT): the record and its ledger entry are
		// already written, in one transaction. Writing the entry again
		// would put the call in the ledger twice.
		b.log.DebugContext(ctx, "an earlier finish attempt landed", "invocation", inv.ID, "status", stored.Status)
		return stored, invocationError(stored)
	case switchboard.CodeOf(uerr) == switchboard.CodeConflict && stored.Status.Terminal():
		// Another writer ended the call first: a tab's answer (Complete),
		// or a survivor's sweep of this replica's calls after it was found
		// dead while it still ran. Every writer that ends a call writes
		// its ledger entry in the same transaction, so the entry is there
		// already; writing one here would put the call in the ledger twice.
		b.log.DebugContext(ctx, "invocation already terminal; first write wins", "invocation", inv.ID, "status", stored.Status)
		return stored, invocationError(stored)
	case switchboard.CodeOf(uerr) == switchboard.CodeConflict && c.from != nil && !stored.Status.Terminal():
		// Not in a state this finish may end (approvalFailed: the call was
		// taken over and runs): the record as it stands, no entry.
		return stored, uerr
	default:
		// The record stays in flight; the next start ends it OUTCOME_UNKNOWN.
		// The caller learns the outcome now, under that same code: known
		// to this daemon, not recorded — never UNAVAILABLE, which says
		// nothing happened and invites a retry that runs the call again.
		b.log.ErrorContext(ctx, "record invocation outcome", "invocation", inv.ID, "tool", inv.Tool, "status", inv.Status, "err", uerr)
		return inv, switchboard.Errorf(switchboard.CodeOutcomeUnknown,
			"the call of %s ended %s, but its record could not be written (%s); the outcome is not recorded, so do not retry without checking: the invocation stays %s until the daemon restarts, then reads OUTCOME_UNKNOWN",
			inv.Tool, inv.Status, switchboard.AsError(uerr).Message, switchboard.StatusDispatched).
			WithDetails(map[string]any{"invocationId": inv.ID, "status": inv.Status, "recorded": false})
	}
}

// terminal is inv ended now with result or err.
func (b *Broker) terminal(inv switchboard.Invocation, result json.RawMessage, err error) switchboard.Invocation {
	now := b.now()
	inv.UpdatedAt, inv.FinishedAt = now, now
	inv.DurationMs = float64(now.Sub(inv.CreatedAt).Microseconds()) / 1000
	if err != nil {
		e := switchboard.AsError(err)
		inv.Status, inv.Error, inv.Result, inv.ResultBytes = switchboard.StatusFor(e.Code), e, nil, 0
	} else {
		inv.Status, inv.Result, inv.ResultBytes = switchboard.StatusSucceeded, result, len(result)
	}
	return inv
}

// ownFinish says whether the terminal record stored is the one this
// broker's finish wrote: the same status at the same finish and update
// times, which the store keeps to the microsecond. Another writer (a late
// browser result, an approval timeout) stamps its own time.
func ownFinish(stored, mine switchboard.Invocation) bool {
	return stored.Status == mine.Status &&
		stored.FinishedAt.Equal(mine.FinishedAt.Truncate(time.Microsecond)) &&
		stored.UpdatedAt.Equal(mine.UpdatedAt.Truncate(time.Microsecond))
}

// retryStore runs write until it succeeds, fails with CONFLICT (a decided
// outcome, not a fault) or ctx ends, backing off from 10 ms to 1 s.
func retryStore(ctx context.Context, write func() error) {
	wait := 10 * time.Millisecond
	for {
		err := write()
		if err == nil || switchboard.CodeOf(err) == switchboard.CodeConflict || ctx.Err() != nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// ledgerDetails is the Details of a tool.call entry. It never carries input
// or result values (they may hold secrets; the invocation record has them).
type ledgerDetails struct {
	InvocationID string `json:"invocationId"`
	RunID        string `json:"runId,omitempty"`
	SessionID    string `json:"sessionId,omitempty"`
	AgentID      string `json:"agentId,omitempty"`
	// User is whom the call was made for (Invocation.User).
	User        string              `json:"user,omitempty"`
	Status      switchboard.Status  `json:"status"`
	Code        switchboard.Code    `json:"code,omitempty"`
	Surface     switchboard.Surface `json:"surface,omitempty"`
	ToolVersion int64               `json:"toolVersion,omitempty"`
	DurationMs  float64             `json:"durationMs"`
	InputBytes  int                 `json:"inputBytes"`
	ResultBytes int                 `json:"resultBytes"`
}

// entry builds the ledger entry of a terminal record.
func (b *Broker) entry(c *call, inv switchboard.Invocation) *switchboard.ActivityEntry {
	d := ledgerDetails{
		InvocationID: inv.ID, RunID: inv.RunID, SessionID: inv.SessionID, AgentID: inv.AgentID, User: inv.User, Status: inv.Status,
		Surface: inv.Surface, ToolVersion: inv.ToolVersion, DurationMs: inv.DurationMs,
		InputBytes: inv.InputBytes, ResultBytes: inv.ResultBytes,
	}
	if inv.Error != nil {
		d.Code = inv.Error.Code
	}
	details, _ := json.Marshal(d) // plain struct: cannot fail
	actor := "anonymous"
	if c.hasCaller {
		actor = c.caller.String()
	}
	ts := inv.FinishedAt
	if ts.IsZero() {
		ts = b.now()
	}
	e := &switchboard.ActivityEntry{Ts: ts, Actor: actor, Verb: activity.VerbToolCall, Target: inv.Tool, Details: details, Reversal: c.reversal}
	if inv.Surface == switchboard.SurfaceBrowser {
		e.Provenance = provenanceSite
	}
	return e
}

// provenanceSite marks an entry whose result came from a page in the
// user's tab: data from the site, never instructions.
var provenanceSite = json.RawMessage(`{"derivedFrom":"site-html"}`)

// observe hands an appended entry to Options.OnActivity.
func (b *Broker) observe(e *switchboard.ActivityEntry) {
	if b.opts.OnActivity != nil && e.ID != 0 {
		b.opts.OnActivity(*e)
	}
}

// invocationError is the error a terminal record stands for.
func invocationError(inv switchboard.Invocation) error {
	if inv.Status == switchboard.StatusSucceeded {
		return nil
	}
	if inv.Error != nil {
		return inv.Error
	}
	return switchboard.Errorf(switchboard.CodeInternal, "invocation %s ended %s without an error", inv.ID, inv.Status)
}

// Get returns one invocation record.
func (b *Broker) Get(ctx context.Context, id string) (switchboard.Invocation, error) {
	return b.store.InvocationGet(ctx, id)
}

// List returns the invocation records matching f, newest first.
func (b *Broker) List(ctx context.Context, f switchboard.InvocationFilter) ([]switchboard.Invocation, error) {
	return b.store.InvocationList(ctx, f)
}
