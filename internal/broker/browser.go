package broker

import (
	"context"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// Target is the live tab chosen for a browser tool call, with the tool as
// that tab advertised it and its compiled schemas.
type Target struct {
	SessionID string
	Tool      switchboard.Tool
	Input     *schema.Schema
	Output    *schema.Schema // nil when none is declared
	// Entry builds the ledger entry of the call's terminal record, and
	// Observe hears it once appended; the broker sets both before Await.
	// Whoever ends the call on the session side (the tab's result, a
	// timeout, the tab going away) writes the record and its entry in one
	// transaction (Store.InvocationFinish), so the broker appends nothing
	// for a browser call. A side that has no Entry (the result reached
	// another replica) uses SweptEntry.
	Entry   func(switchboard.Invocation) *switchboard.ActivityEntry
	Observe func(switchboard.ActivityEntry)
}

// Browser is the seam to live browser sessions; the session package
// implements it. The broker decides (validation, approval, records, ledger);
// the session side only delivers and awaits.
type Browser interface {
	// Resolve picks the session that will run a call of tool: sessionID when
	// given, else the run's bound session, else the only live session that
	// advertises the tool. TOOL_UNAVAILABLE when none has it; SESSION_GONE
	// when the named session has closed. A tab's tool for which visible
	// is false is treated as not advertised, and left out of any list of
	// the tab's tools an error names: the caller may not learn it exists.
	Resolve(ctx context.Context, tool, sessionID, runID string, visible func(switchboard.Tool) bool) (Target, error)
	// Await sends the dispatched invocation to its session and blocks until
	// the record reaches a terminal state: a result posted on the return
	// path, TIMEOUT, SESSION_GONE (tab gone within the heartbeat window) or
	// CANCELLED when ctx ends (the tab is told to abort). It returns the
	// terminal record as stored; the first terminal write wins.
	Await(ctx context.Context, inv switchboard.Invocation, t Target) (switchboard.Invocation, error)
}
