package openapi

import (
	"context"
	"errors"

	"github.com/switchboardhq/switchboard"
)

// checkEvery is how many schema nodes pass between deadline checks.
const checkEvery = 4096

// expansion is the import's budget of emitted schema nodes and time.
// Inlining $refs (and allOf parts, items, …) turns a graph into a tree;
// a graph whose nodes each name the next level several times becomes
// exponentially large, and neither the depth cut nor the recursion cut
// stops it. take refuses once the budget is spent, and from then on every
// converter of the import unwinds at once; err says why.
type expansion struct {
	ctx   context.Context
	max   int
	n     int
	where string // the operation being converted, for the message
	err   error
}

// init (re)arms the budget for the next operation; the count carries on.
func (e *expansion) init(ctx context.Context, max int, where string) {
	e.ctx, e.max, e.where = ctx, max, where
}

// take counts one node; false when the budget is spent.
func (e *expansion) take() bool {
	if e.err != nil {
		return false
	}
	e.n++
	if e.n > e.max {
		e.err = switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"the document's schemas expand to more than %d nodes once their $refs are inlined (reached at %s): schemas that refer to the next level several times multiply; flatten the shared parts or import a smaller document", e.max, e.where)
		return false
	}
	if e.n%checkEvery == 0 {
		if err := e.ctx.Err(); err != nil {
			e.err = timeUp(err)
			return false
		}
	}
	return true
}

func timeUp(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "the import took longer than its time budget; the document is too large or too intricate to import")
	}
	return switchboard.Errorf(switchboard.CodeCancelled, "the import was cancelled")
}
