package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// waiter is a call blocked in Await on this process; the return path uses
// it to check ownership and the output schema without reading the store.
type waiter struct {
	inv  switchboard.Invocation
	outp *schema.Schema
	t    broker.Target // its Entry and Observe record the ledger entry
}

// Await sends the dispatched invocation inv to the tab of t.SessionID and
// blocks until its record is terminal: the tab's result (posted on the
// return path), TIMEOUT (t.Tool.TimeoutMs, else the default), SESSION_GONE
// as soon as the tab is gone, CANCELLED when ctx ends (the tab is told to
// abort), or UNAVAILABLE when the daemon shuts down. A tab whose stream is
// down gets the request when it reconnects; unless it does within the
// reconnect window the call fails with SESSION_GONE. It returns the terminal
// record as stored (the first terminal write wins); an error only when no
// terminal state could be recorded. It implements broker.Browser.
func (m *Manager) Await(ctx context.Context, inv switchboard.Invocation, t broker.Target) (switchboard.Invocation, error) {
	if inv.ID == "" || t.SessionID == "" {
		return inv, switchboard.Errorf(switchboard.CodeInvalidInput, "await: invocation id and target session are required")
	}
	inv.SessionID = t.SessionID
	timeout := m.opts.DefaultTimeout
	if t.Tool.TimeoutMs > 0 {
		timeout = time.Duration(t.Tool.TimeoutMs) * time.Millisecond
	}

	// Subscribe before dispatching, so neither the answer nor the tab going
	// away can slip past us.
	done := make(chan []byte, 1)
	unsubDone, err := m.bus.Subscribe(topicDone(inv.ID), func(p []byte) {
		select {
		case done <- slices.Clone(p):
		default:
		}
	})
	if err != nil {
		return m.finish(ctx, t, inv, switchboard.AsError(err), false)
	}
	defer unsubDone()
	gone := make(chan string, 1)
	unsubState, err := m.bus.Subscribe(topicState(t.SessionID), func(p []byte) {
		select {
		case gone <- string(p):
		default:
		}
	})
	if err != nil {
		return m.finish(ctx, t, inv, switchboard.AsError(err), false)
	}
	defer unsubState()

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return m.finish(ctx, t, inv, errShutdown(), false)
	}
	st := m.sessions[t.SessionID]
	live := st != nil && st.reachable()
	down := st != nil && st.kept()
	if rt := m.remoteLocked(t.SessionID); !live && rt != nil {
		// Held by another replica: the request crosses on the bus.
		live, down = rt.waiting, down || !rt.waiting
	}
	m.waiters[inv.ID] = &waiter{inv: inv, outp: t.Output, t: t}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waiters, inv.ID)
		m.mu.Unlock()
	}()
	if !live {
		e := switchboard.AsError(m.errOffline(t.SessionID))
		if !down {
			e = switchboard.Errorf(switchboard.CodeSessionGone,
				"session %s has no connected tab (it closed or lost its connection)", t.SessionID)
		}
		// Withdraw it all the same: a stream attaching meanwhile replays
		// the calls still dispatched to the tab from the store (state), and
		// must not run one whose caller is told it failed.
		return m.finish(ctx, t, inv, e, true)
	}

	data, err := requestJSON(inv, int(timeout.Milliseconds()))
	if err != nil {
		return m.finish(ctx, t, inv, switchboard.Errorf(switchboard.CodeInternal, "encode browser action request: %w", err), false)
	}
	if !fitsBus(inv.ID, data) {
		data = nil // the holder of the stream reads the record instead
	}
	if err := m.bus.Publish(ctx, topicDispatch(t.SessionID), encodeDispatch(msgRequest, inv.ID, data)); err != nil {
		if ctx.Err() != nil {
			return m.finish(ctx, t, inv, ctxError(ctx), false)
		}
		return m.finish(ctx, t, inv, switchboard.AsError(err), false)
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case p := <-done:
		return m.terminal(ctx, inv.ID, p)
	case msg := <-gone:
		why := fmt.Sprintf("the tab of session %s went away before answering", t.SessionID)
		if kind, reason, _ := strings.Cut(msg, " "); kind == stateOffline && reason != "" {
			why = reason
		}
		// The cancel withdraws the request, so a tab that comes back within
		// the keep window does not run a call whose caller was told it failed.
		return m.finish(ctx, t, inv, switchboard.Errorf(switchboard.CodeSessionGone, "%s", why), true)
	case <-timer.C:
		return m.finish(ctx, t, inv, switchboard.Errorf(switchboard.CodeTimeout,
			"the tab did not answer %s within %s", inv.Tool, timeout), true)
	case <-ctx.Done():
		return m.finish(ctx, t, inv, ctxError(ctx), true)
	case <-m.shutdown:
		return m.finish(ctx, t, inv, errShutdown(), false)
	}
}

// ctxError says why ctx ended: a coded cause as it is (the broker's
// deadline carries TIMEOUT), a bare deadline as TIMEOUT, else CANCELLED.
func ctxError(ctx context.Context) *switchboard.Error {
	cause := context.Cause(ctx)
	var e *switchboard.Error
	switch {
	case errors.As(cause, &e):
		return e
	case errors.Is(cause, context.DeadlineExceeded):
		return switchboard.Errorf(switchboard.CodeTimeout, "the caller's deadline passed before the tab answered")
	}
	return switchboard.Errorf(switchboard.CodeCancelled, "the call was cancelled")
}

func errShutdown() *switchboard.Error {
	return switchboard.Errorf(switchboard.CodeUnavailable, "the daemon shut down while this call was in flight")
}

// finish records a failure the waiter observed (compare-and-swap from
// dispatched). If another outcome was recorded first, that one is returned.
// tellTab sends browser.action.cancel so the tab's handler aborts.
func (m *Manager) finish(ctx context.Context, t broker.Target, inv switchboard.Invocation, e *switchboard.Error, tellTab bool) (switchboard.Invocation, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
	defer cancel()
	rec := terminalRecord(inv, m.opts.Now())
	rec.Status, rec.Error = switchboard.StatusFor(e.Code), e
	stored, err := m.endCall(wctx, t, rec)
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeConflict && stored.Status.Terminal() {
			return stored, nil // the tab won, and its result acknowledged the request
		}
		// The outcome could not be recorded (the next start will fail the
		// record); still withdraw the request so it does not linger in the
		// tab's log.
		m.tellTab(wctx, inv, e)
		return rec, err
	}
	if tellTab {
		m.tellTab(wctx, inv, e)
	}
	return stored, nil
}

// endCall writes rec, the terminal record of a dispatched call, and its
// ledger entry in one transaction (compare-and-swap from dispatched), and
// hands the appended entry to t.Observe. t.Entry builds the entry; without
// one (the call waits on another replica) the entry is built from the
// record alone (broker.SweptEntry).
func (m *Manager) endCall(ctx context.Context, t broker.Target, rec switchboard.Invocation) (switchboard.Invocation, error) {
	var e *switchboard.ActivityEntry
	if t.Entry != nil {
		e = t.Entry(rec)
	} else {
		e = broker.SweptEntry(rec)
	}
	stored, err := m.store.InvocationFinish(ctx, rec, e, switchboard.StatusDispatched)
	if err == nil && t.Observe != nil {
		t.Observe(*e)
	}
	return stored, err
}

// tellTab sends browser.action.cancel for inv, which also drops the request
// from the session's log.
func (m *Manager) tellTab(ctx context.Context, inv switchboard.Invocation, why *switchboard.Error) {
	msg := encodeDispatch(msgCancel, inv.ID, cancelJSON(inv.ID, why))
	if err := m.bus.Publish(ctx, topicDispatch(inv.SessionID), msg); err != nil {
		m.log.Warn("publish cancel", "invocation", inv.ID, "err", err)
	}
}

// terminal returns the record a done message announced: carried in the
// message when it fit, else read from the store.
func (m *Manager) terminal(ctx context.Context, id string, p []byte) (switchboard.Invocation, error) {
	if len(p) > 0 {
		var inv switchboard.Invocation
		if err := json.Unmarshal(p, &inv); err == nil && inv.ID == id && inv.Status.Terminal() {
			return inv, nil
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
	defer cancel()
	return m.store.InvocationGet(wctx, id)
}

// terminalRecord stamps inv as finishing at now; the caller sets status,
// result and error.
func terminalRecord(inv switchboard.Invocation, now time.Time) switchboard.Invocation {
	inv.UpdatedAt, inv.FinishedAt = now, now
	if !inv.CreatedAt.IsZero() {
		inv.DurationMs = float64(now.Sub(inv.CreatedAt).Microseconds()) / 1000
	}
	return inv
}
