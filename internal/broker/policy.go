package broker

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// Policy is where approvals slot into the call path (the approval package
// implements it). Scope is not the policy's: a tool the caller may not see
// is TOOL_NOT_FOUND when the broker resolves it through the registry
// (registry.Visible), before the policy is asked. The broker calls Admit
// before anything is recorded, then NeedsApproval. When that is true the
// invocation is stored as awaiting_approval, RequestApproval records the
// human decision it waits for, and AwaitApproval blocks until that decision;
// only then does the call take a concurrency slot and its timeout start, so
// a pending approval never holds a slot others could use. A nil Policy
// admits every call and asks for no approval.
type Policy interface {
	// Admit refuses a call the caller may not make (FORBIDDEN, or
	// RATE_LIMITED when the caller's approval queue is full). Nothing is
	// recorded for a refused call. caller is the zero Principal for an
	// in-process call without one.
	Admit(ctx context.Context, caller switchboard.Principal, t switchboard.Tool) error
	// NeedsApproval reports whether this call must wait for a human.
	// Arguments never decide it ("approved": true means nothing).
	NeedsApproval(caller switchboard.Principal, t switchboard.Tool, input json.RawMessage) bool
	// RequestApproval records the request for inv, already stored with
	// status awaiting_approval and naming the request's id in
	// inv.ApprovalID, under that id, and tells whoever can decide. It
	// returns the request's id.
	RequestApproval(ctx context.Context, inv switchboard.Invocation, t switchboard.Tool) (string, error)
	// AwaitApproval blocks until request id is approved — and consumes it,
	// once, checking it still binds to inv — (nil) or not (USER_DENIED,
	// with details.reason "denied" or "expired"; CANCELLED or TIMEOUT when
	// ctx ends first). It never writes the invocation record.
	AwaitApproval(ctx context.Context, id string, inv switchboard.Invocation) error
}
