package broker

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// Reversal is the Reversal field of the tool.call entry of an inverse call:
// it links the entry back to the one it undoes.
type Reversal struct {
	Of           int64  `json:"of"`
	InvocationID string `json:"invocationId"`
	Tool         string `json:"tool"`
}

// callDetails is what a reversal reads from a tool.call entry.
type callDetails struct {
	InvocationID string             `json:"invocationId"`
	Status       switchboard.Status `json:"status"`
}

// PlanReversal checks that ledger entry id can be reversed and returns the
// inverse call, or CONFLICT saying plainly why not (not a tool call, did
// not succeed, the tool is irreversible, or is itself a reversal). The
// request names no Caller: whoever asks for the reversal sets it.
func (b *Broker) PlanReversal(ctx context.Context, id int64) (CallRequest, error) {
	e, err := b.ledgerEntry(ctx, id)
	if err != nil {
		return CallRequest{}, err
	}
	if e.Verb != activity.VerbToolCall {
		return CallRequest{}, irreversible(id, "entry %d is a %s entry, not a tool call; only tool calls can be reversed", id, e.Verb)
	}
	var d callDetails
	if err := json.Unmarshal(e.Details, &d); err != nil || d.InvocationID == "" {
		return CallRequest{}, irreversible(id, "entry %d does not name the invocation it records, so it cannot be reversed", id)
	}
	if d.Status != switchboard.StatusSucceeded {
		return CallRequest{}, irreversible(id, "entry %d records a call that ended %s; it changed nothing to undo", id, d.Status)
	}
	t, err := b.reg.Get(ctx, e.Target)
	if err != nil {
		return CallRequest{}, irreversible(id, "entry %d is a call of %s, which is no longer in the catalog, so its inverse is unknown", id, e.Target)
	}
	switch {
	case t.Reversible != nil && !*t.Reversible:
		return CallRequest{}, irreversible(id, "%s is irreversible (it declares reversible: false); entry %d cannot be undone", t.Name, id)
	case t.Inverse == nil || t.Inverse.Tool == "":
		return CallRequest{}, irreversible(id, "%s declares no inverse, so entry %d cannot be undone automatically", t.Name, id)
	}
	inv, err := b.store.InvocationGet(ctx, d.InvocationID)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		// Retention deleted the record (the ledger entry outlives it), and
		// with it the input and result the inverse is built from.
		return CallRequest{}, irreversible(id, "entry %d can no longer be undone: the record of its call (invocation %s) has expired (store.retention.invocations), and the inverse is built from it", id, d.InvocationID)
	}
	if err != nil {
		return CallRequest{}, err
	}
	input, err := t.Inverse.Build(inv.Input, inv.Result)
	if err != nil {
		return CallRequest{}, err
	}
	link, _ := json.Marshal(Reversal{Of: id, InvocationID: inv.ID, Tool: inv.Tool}) // a plain struct: cannot fail
	return CallRequest{
		Tool: t.Inverse.Tool, Input: input, SessionID: inv.SessionID,
		// One reversal per entry, whoever asks: a second request replays
		// the first reversal's outcome instead of undoing twice.
		IdempotencyKey:   "reverse:" + strconv.FormatInt(id, 10),
		IdempotencyScope: "reversal",
		Reversal:         link,
	}, nil
}

// Reverse runs ledger entry id's inverse as a fresh call by caller:
// scope, approval and the ledger apply as to any call. It returns the
// inverse call's record; its tool.call entry links back to entry id.
// onRecord, if set, hears the record as soon as it exists (CallRequest's
// OnRecord).
func (b *Broker) Reverse(ctx context.Context, caller switchboard.Principal, id int64, onRecord func(switchboard.Invocation)) (switchboard.Invocation, error) {
	req, err := b.PlanReversal(ctx, id)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	req.Caller = &caller
	req.OnRecord = onRecord
	return b.Call(ctx, req)
}

// ledgerEntry reads one ledger entry from the store, where every append lands
// before it returns.
func (b *Broker) ledgerEntry(ctx context.Context, id int64) (switchboard.ActivityEntry, error) {
	page, err := b.store.ActivityList(ctx, switchboard.ActivityFilter{AfterID: id - 1, Limit: 1})
	if err != nil {
		return switchboard.ActivityEntry{}, err
	}
	if len(page) == 0 || page[0].ID != id {
		return switchboard.ActivityEntry{}, switchboard.Errorf(switchboard.CodeNotFound, "no activity entry %d", id)
	}
	return page[0], nil
}

func irreversible(id int64, format string, args ...any) error {
	return switchboard.Errorf(switchboard.CodeConflict, format, args...).
		WithDetails(map[string]any{"entryId": id, "reversible": false})
}
