package activity

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/broker"
)

// Reversal is the Reversal field of the tool.call entry of an inverse call:
// it links the entry back to the one it undoes.
type Reversal struct {
	Of           int64  `json:"of"`
	InvocationID string `json:"invocationId"`
	Tool         string `json:"tool"`
}

// Caller runs a call through the one call path (*broker.Broker).
type Caller interface {
	Call(ctx context.Context, req broker.CallRequest) (switchboard.Invocation, error)
}

// ToolGetter finds a tool's current descriptor (*registry.Registry).
type ToolGetter interface {
	Get(ctx context.Context, name string) (switchboard.Tool, error)
}

// InvocationGetter reads an invocation record (the Store).
type InvocationGetter interface {
	InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error)
}

// Reverser undoes calls through their tools' declared inverses.
type Reverser struct {
	ledger *Ledger
	invs   InvocationGetter
	tools  ToolGetter
	call   Caller
}

// NewReverser returns a Reverser.
func NewReverser(l *Ledger, invs InvocationGetter, tools ToolGetter, call Caller) *Reverser {
	return &Reverser{ledger: l, invs: invs, tools: tools, call: call}
}

// callDetails is what a reversal reads from a tool.call entry.
type callDetails struct {
	InvocationID string             `json:"invocationId"`
	Status       switchboard.Status `json:"status"`
}

// Plan checks that entry id can be reversed and returns the inverse call,
// or CONFLICT saying plainly why not (not a tool call, did not succeed, the
// tool is irreversible, or is itself a reversal).
func (r *Reverser) Plan(ctx context.Context, id int64) (broker.CallRequest, error) {
	e, err := r.ledger.Get(ctx, id)
	if err != nil {
		return broker.CallRequest{}, err
	}
	if e.Verb != VerbToolCall {
		return broker.CallRequest{}, irreversible(id, "entry %d is a %s entry, not a tool call; only tool calls can be reversed", id, e.Verb)
	}
	var d callDetails
	if err := json.Unmarshal(e.Details, &d); err != nil || d.InvocationID == "" {
		return broker.CallRequest{}, irreversible(id, "entry %d does not name the invocation it records, so it cannot be reversed", id)
	}
	if d.Status != switchboard.StatusSucceeded {
		return broker.CallRequest{}, irreversible(id, "entry %d records a call that ended %s; it changed nothing to undo", id, d.Status)
	}
	t, err := r.tools.Get(ctx, e.Target)
	if err != nil {
		return broker.CallRequest{}, irreversible(id, "entry %d is a call of %s, which is no longer in the catalog, so its inverse is unknown", id, e.Target)
	}
	switch {
	case t.Reversible != nil && !*t.Reversible:
		return broker.CallRequest{}, irreversible(id, "%s is irreversible (it declares reversible: false); entry %d cannot be undone", t.Name, id)
	case t.Inverse == nil || t.Inverse.Tool == "":
		return broker.CallRequest{}, irreversible(id, "%s declares no inverse, so entry %d cannot be undone automatically", t.Name, id)
	}
	inv, err := r.invs.InvocationGet(ctx, d.InvocationID)
	if err != nil {
		return broker.CallRequest{}, err
	}
	input, err := t.Inverse.Build(inv.Input, inv.Result)
	if err != nil {
		return broker.CallRequest{}, err
	}
	return broker.CallRequest{
		Tool: t.Inverse.Tool, Input: input, SessionID: inv.SessionID,
		// One reversal per entry, whoever asks: a second request replays
		// the first reversal's outcome instead of undoing twice.
		IdempotencyKey:   "reverse:" + strconv.FormatInt(id, 10),
		IdempotencyScope: "reversal",
		Reversal:         mustJSON(Reversal{Of: id, InvocationID: inv.ID, Tool: inv.Tool}),
	}, nil
}

// Reverse runs entry id's inverse as a fresh call under the caller in ctx:
// scope, approval and the ledger apply as to any call. It returns the
// inverse call's record; its tool.call entry links back to entry id.
func (r *Reverser) Reverse(ctx context.Context, id int64, onRecord func(switchboard.Invocation)) (switchboard.Invocation, error) {
	req, err := r.Plan(ctx, id)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	req.OnRecord = onRecord
	return r.call.Call(ctx, req)
}

func irreversible(id int64, format string, args ...any) error {
	return switchboard.Errorf(switchboard.CodeConflict, format, args...).
		WithDetails(map[string]any{"entryId": id, "reversible": false})
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v) // plain structs: cannot fail
	return b
}
