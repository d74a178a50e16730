package broker

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// Policy is the seam where scope checks and approvals slot into the call
// path (issue 7 builds them). The broker calls Admit before anything is
// recorded, then NeedsApproval; when that is true the invocation is stored
// as pending and AwaitApproval owns it until a human decides, after which
// the broker moves it to dispatched. A nil Policy admits every call and asks
// for no approval.
type Policy interface {
	// Admit refuses a call the caller may not make (FORBIDDEN). Nothing is
	// recorded for a refused call.
	Admit(ctx context.Context, caller switchboard.Principal, t switchboard.Tool) error
	// NeedsApproval reports whether this call must wait for a human.
	NeedsApproval(caller switchboard.Principal, t switchboard.Tool, input json.RawMessage) bool
	// AwaitApproval blocks until the pending invocation inv is approved
	// (nil) or not (USER_DENIED, TIMEOUT, CANCELLED). It may move the record
	// to awaiting_approval; it must not move it to dispatched or terminal.
	AwaitApproval(ctx context.Context, inv switchboard.Invocation, t switchboard.Tool) error
}
