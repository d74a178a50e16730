package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// VerbToolCall is the ledger verb of a tool execution.
const VerbToolCall = "tool.call"

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
func (b *Broker) newInvocation(c *call, req CallRequest, approve bool) switchboard.Invocation {
	now := b.now()
	inv := switchboard.Invocation{
		ID:          NewID(),
		RunID:       req.RunID,
		Tool:        c.tool.Name,
		ToolVersion: c.tool.Version,
		Surface:     c.tool.Surface,
		SessionID:   req.SessionID,
		Status:      switchboard.StatusDispatched,
		Input:       c.input,
		InputBytes:  len(c.input),
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	if inv.RunID == "" { // a direct call is a run of its own
		inv.RunID = NewID()
	}
	if c.target != nil {
		inv.SessionID = c.target.SessionID
	}
	if c.hasCaller {
		inv.Caller = c.caller.String()
	}
	if approve {
		inv.Status = switchboard.StatusPending
	}
	return inv
}

// approve hands a pending record to the policy and moves it to dispatched
// when approved.
func (b *Broker) approve(ctx context.Context, inv switchboard.Invocation, t switchboard.Tool) (switchboard.Invocation, error) {
	if err := b.policy.AwaitApproval(ctx, inv, t); err != nil {
		if ctx.Err() != nil {
			return inv, ctxError(ctx)
		}
		return inv, err
	}
	inv.Status, inv.UpdatedAt = switchboard.StatusDispatched, b.now()
	return b.store.InvocationUpdate(ctx, inv, switchboard.StatusPending, switchboard.StatusAwaitingApproval)
}

// Finisher is an optional Store extension the broker uses when the store
// has it: InvocationFinish is InvocationUpdate's compare-and-swap and, only
// when the swap succeeds, ActivityAppend of e, in one transaction. It saves
// a write transaction on every call and closes the window in which a crash
// could leave a terminal record without its ledger entry. On a failed
// compare it appends nothing and returns the current record with CONFLICT,
// exactly like InvocationUpdate.
type Finisher interface {
	InvocationFinish(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error)
}

// finish records the terminal state with a compare-and-swap from any
// in-flight state and writes the ledger entry. If another writer got there
// first (a late browser result, an approval timeout), its record wins and
// is what the caller gets. The writes use
// a context detached from the caller's, so a cancelled call is still
// recorded as cancelled.
func (b *Broker) finish(ctx, cctx context.Context, c *call, inv switchboard.Invocation, result json.RawMessage, err error) (switchboard.Invocation, error) {
	if err != nil && cctx.Err() != nil && switchboard.CodeOf(err) == switchboard.CodeInternal {
		err = ctxError(cctx) // e.g. an approval wait or a browser await ended by the deadline
	}
	now := b.now()
	inv.UpdatedAt, inv.FinishedAt = now, now
	inv.DurationMs = float64(now.Sub(inv.CreatedAt).Microseconds()) / 1000
	if err != nil {
		e := switchboard.AsError(err)
		inv.Status, inv.Error, inv.Result, inv.ResultBytes = switchboard.StatusFor(e.Code), e, nil, 0
	} else {
		inv.Status, inv.Result, inv.ResultBytes = switchboard.StatusSucceeded, result, len(result)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	var (
		stored switchboard.Invocation
		uerr   error
		logged bool
	)
	if f, ok := b.store.(Finisher); ok {
		stored, uerr = f.InvocationFinish(fctx, inv, b.entry(c, inv), switchboard.InFlight...)
		logged = uerr == nil
	} else {
		stored, uerr = b.store.InvocationUpdate(fctx, inv, switchboard.InFlight...)
	}
	switch {
	case uerr == nil:
	case switchboard.CodeOf(uerr) == switchboard.CodeConflict && stored.Status.Terminal():
		// The broker still writes the one tool.call entry of the call it
		// started, describing the outcome that won.
		b.log.DebugContext(ctx, "invocation already terminal; first write wins", "invocation", inv.ID, "status", stored.Status)
	default:
		// The record stays in flight; the next start fails it with a clear
		// code. Tell the caller the outcome could not be recorded.
		b.log.ErrorContext(ctx, "record invocation outcome", "invocation", inv.ID, "tool", inv.Tool, "status", inv.Status, "err", uerr)
		return inv, switchboard.Errorf(switchboard.CodeOf(uerr), "the call of %s ended %s but its record could not be written: %s", inv.Tool, inv.Status, switchboard.AsError(uerr).Message)
	}
	if logged {
		return stored, invocationError(stored)
	}
	return b.ledger(fctx, c, stored)
}

// ledgerDetails is the Details of a tool.call entry. It never carries input
// or result values (they may hold secrets; the invocation record has them).
type ledgerDetails struct {
	InvocationID string              `json:"invocationId"`
	RunID        string              `json:"runId,omitempty"`
	SessionID    string              `json:"sessionId,omitempty"`
	Status       switchboard.Status  `json:"status"`
	Code         switchboard.Code    `json:"code,omitempty"`
	Surface      switchboard.Surface `json:"surface,omitempty"`
	ToolVersion  int64               `json:"toolVersion,omitempty"`
	DurationMs   float64             `json:"durationMs"`
	InputBytes   int                 `json:"inputBytes"`
	ResultBytes  int                 `json:"resultBytes"`
}

// entry builds the ledger entry of a terminal record.
func (b *Broker) entry(c *call, inv switchboard.Invocation) *switchboard.ActivityEntry {
	d := ledgerDetails{
		InvocationID: inv.ID, RunID: inv.RunID, SessionID: inv.SessionID, Status: inv.Status,
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
	return &switchboard.ActivityEntry{Ts: ts, Actor: actor, Verb: VerbToolCall, Target: inv.Tool, Details: details}
}

// ledger appends the entry for a terminal record and returns the record
// with its error. A failed append is logged and does not change the call's
// outcome: the tool has run, and failing the call would invite a retry
// that runs it twice.
func (b *Broker) ledger(ctx context.Context, c *call, inv switchboard.Invocation) (switchboard.Invocation, error) {
	if err := b.store.ActivityAppend(context.WithoutCancel(ctx), b.entry(c, inv)); err != nil {
		b.log.ErrorContext(ctx, "append ledger entry", "invocation", inv.ID, "tool", inv.Tool, "err", err)
	}
	return inv, invocationError(inv)
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
