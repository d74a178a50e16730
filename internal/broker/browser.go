package broker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// A browser call, from dispatch to its end: the broker records it
// dispatched, hands it to the tab (Browser.Deliver) and waits here. The
// tab's answer ends it in Complete (complete.go), on whichever replica
// the answer reaches; the broker ends it itself when the tool's timeout
// passes, the caller goes away or the tab is gone. Either way one
// compare-and-swap from dispatched decides, and the loser reads the
// winner's record.

// Target is the live tab chosen for a browser tool call, with the tool as
// that tab advertised it and its compiled schemas.
type Target struct {
	SessionID string
	Tool      switchboard.Tool
	Input     *schema.Schema
	Output    *schema.Schema // nil when none is declared
}

// Browser is the seam to live browser tabs; the session package
// implements it. It delivers requests and says when a tab is gone; the
// broker decides everything else (validation, the timeout, the record and
// its ledger entry).
type Browser interface {
	// Resolve picks the session that will run a call of tool: sessionID when
	// given, else the run's bound session, else the only live session that
	// advertises the tool. TOOL_UNAVAILABLE when none has it; SESSION_GONE
	// when the named session has closed. A tab's tool for which visible
	// is false is treated as not advertised, and left out of any list of
	// the tab's tools an error names: the caller may not learn it exists.
	Resolve(ctx context.Context, tool, sessionID, runID string, visible func(switchboard.Tool) bool) (Target, error)
	// Deliver sends the dispatched invocation inv to the tab of
	// inv.SessionID, telling it how long it has (timeout), and returns at
	// once. gone receives, at most once, why the tab can no longer answer:
	// it went away, its stream stayed down past the reconnect window, its
	// session closed, or this daemon is shutting down. stop releases gone.
	// An error means the request was not delivered (the tab is offline,
	// the bus failed).
	Deliver(ctx context.Context, inv switchboard.Invocation, timeout time.Duration) (gone <-chan error, stop func(), err error)
	// Withdraw tells the tab that the call inv ended without its answer
	// (why): a handler still running aborts, and a tab that resumes does
	// not run it.
	Withdraw(ctx context.Context, inv switchboard.Invocation, why *switchboard.Error)
	// Output is the output schema of tool as session sessionID advertised
	// it, nil when none is declared or known: what checks a tab's answer
	// to a call dispatched by another replica.
	Output(ctx context.Context, sessionID, tool string) *schema.Schema
}

// tabCall is a browser call this broker dispatched and waits for: what
// Complete needs to end it without reading the store, and where it hands
// the outcome.
type tabCall struct {
	c    *call
	inv  switchboard.Invocation
	done chan switchboard.Invocation // the record the tab's answer ended, once
	// remote hears that the call ended on another replica: the record's
	// JSON, or nothing when it did not fit the message.
	remote chan []byte
}

// tabCalls are the browser calls waiting in this process, by invocation.
type tabCalls struct {
	mu sync.Mutex
	by map[string]*tabCall
}

func (t *tabCalls) add(tc *tabCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string]*tabCall{}
	}
	t.by[tc.inv.ID] = tc
}

func (t *tabCalls) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, id)
}

func (t *tabCalls) get(id string) *tabCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.by[id]
}

// inTab runs a recorded, dispatched browser call holding its slot: it
// delivers the request and waits for the first of the tab's answer
// (Complete, here or on another replica), the tool's timeout (cctx), the
// caller going away (ctx) and the tab going away.
func (b *Broker) inTab(ctx, cctx context.Context, c *call, inv switchboard.Invocation, timeout time.Duration, release func()) (switchboard.Invocation, error) {
	tc := &tabCall{c: c, inv: inv, done: make(chan switchboard.Invocation, 1), remote: make(chan []byte, 1)}
	b.tabs.add(tc)
	defer b.tabs.remove(inv.ID)
	// An answer that reaches another replica is sent to this one, the
	// owner (ends.go), and handed to tc.remote; tc is in place before the
	// request is delivered, so it cannot slip past.
	gone, stop, err := b.browser.Deliver(cctx, inv, timeout)
	if err == nil {
		defer stop()
	wait:
		for {
			select {
			case stored := <-tc.done:
				release()
				return stored, invocationError(stored)
			case p := <-tc.remote:
				if stored, ok := b.announced(ctx, inv.ID, p); ok {
					release()
					return stored, invocationError(stored)
				}
			case err = <-gone:
				break wait
			case <-cctx.Done():
				err = ctxError(cctx)
				break wait
			}
		}
	} else if cctx.Err() != nil {
		err = ctxError(cctx)
	}
	release()
	stored, ferr := b.finish(ctx, cctx, c, inv, nil, err)
	if !tabAnswered(stored) {
		// Ended without the tab's answer, or not recorded at all (the next
		// start ends it): withdraw the request either way, so it does not
		// linger in the tab's log.
		why := switchboard.AsError(err)
		if stored.Error != nil {
			why = stored.Error
		}
		b.browser.Withdraw(context.WithoutCancel(ctx), inv, why)
	}
	return stored, ferr
}

// announced is the terminal record a done message carries, else the one
// the store holds; ok is false while it is not terminal yet.
func (b *Broker) announced(ctx context.Context, id string, p []byte) (switchboard.Invocation, bool) {
	var inv switchboard.Invocation
	if len(p) > 0 && json.Unmarshal(p, &inv) == nil && inv.ID == id && inv.Status.Terminal() {
		return inv, true
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	inv, err := b.store.InvocationGet(rctx, id)
	return inv, err == nil && inv.Status.Terminal()
}
