package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// Deliver sends the dispatched invocation inv to the tab of inv.SessionID
// (on whichever replica holds its stream) and returns at once; timeout is
// what the request tells the tab it has. gone then receives, at most once,
// SESSION_GONE as soon as the tab is gone (or its stream stays down past
// the reconnect window) and UNAVAILABLE when this daemon shuts down. A
// tab whose stream is down gets the request when it reconnects. Deliver
// fails, delivering nothing, when the tab is offline or the bus fails.
// It implements broker.Browser; the broker waits, times out and records.
func (m *Manager) Deliver(ctx context.Context, inv switchboard.Invocation, timeout time.Duration) (<-chan error, func(), error) {
	if inv.ID == "" || inv.SessionID == "" {
		return nil, nil, switchboard.Errorf(switchboard.CodeInvalidInput, "deliver: invocation id and session are required")
	}
	sid := inv.SessionID
	gone := make(chan error, 1)
	signal := func(err error) {
		select {
		case gone <- err:
		default:
		}
	}
	// Subscribe before delivering, so the tab going away cannot slip past.
	unsub, err := m.bus.Subscribe(topicState(sid), func(p []byte) {
		why := fmt.Sprintf("the tab of session %s went away before answering", sid)
		if kind, reason, _ := strings.Cut(string(p), " "); kind == stateOffline && reason != "" {
			why = reason
		}
		signal(switchboard.Errorf(switchboard.CodeSessionGone, "%s", why))
	})
	if err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		unsub()
		return nil, nil, errShutdown()
	}
	st := m.sessions[sid]
	live := st != nil && st.reachable()
	down := st != nil && st.kept()
	if rt := m.remoteLocked(sid); !live && rt != nil {
		// Held by another replica: the request crosses on the bus.
		live, down = rt.waiting, down || !rt.waiting
	}
	m.delivered[inv.ID] = signal // Shutdown signals it
	m.mu.Unlock()
	stop := func() {
		unsub()
		m.mu.Lock()
		delete(m.delivered, inv.ID)
		m.mu.Unlock()
	}
	if !live {
		stop()
		if down {
			return nil, nil, m.errOffline(sid)
		}
		return nil, nil, switchboard.Errorf(switchboard.CodeSessionGone,
			"session %s has no connected tab (it closed or lost its connection)", sid)
	}
	data, err := requestJSON(inv, int(timeout.Milliseconds()))
	if err != nil {
		stop()
		return nil, nil, switchboard.Errorf(switchboard.CodeInternal, "encode browser action request: %w", err)
	}
	if !fitsBus(inv.ID, data) {
		data = nil // the holder of the stream reads the record instead
	}
	if err := m.route(ctx, sid, encodeDispatch(msgRequest, inv.ID, data)); err != nil {
		stop()
		return nil, nil, err
	}
	return gone, stop, nil
}

func errShutdown() *switchboard.Error {
	return switchboard.Errorf(switchboard.CodeUnavailable, "the daemon shut down while this call was in flight")
}

// Withdraw sends browser.action.cancel for inv, which also drops the
// request from the session's log: the call ended without the tab's answer
// (why), so a handler still running aborts and a resumed tab does not run
// it. It implements broker.Browser.
func (m *Manager) Withdraw(ctx context.Context, inv switchboard.Invocation, why *switchboard.Error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return // the streams ended with this daemon, and nothing resumes from its logs
	}
	msg := encodeDispatch(msgCancel, inv.ID, cancelJSON(inv.ID, why))
	if err := m.route(ctx, inv.SessionID, msg); err != nil {
		m.log.Warn("publish cancel", "invocation", inv.ID, "err", err)
	}
}

// Ack drops invocation invID's request from the log of session
// sessionID, wherever its stream is: the tab's answer ended the call.
func (m *Manager) Ack(ctx context.Context, sessionID, invID string) {
	if err := m.route(context.WithoutCancel(ctx), sessionID, encodeDispatch(msgAck, invID, nil)); err != nil {
		m.log.Warn("publish ack", "invocation", invID, "err", err)
	}
}

// Output is the output schema of tool as session id advertised it: its
// tools here, as another replica announced them, or as stored. It
// implements broker.Browser.
func (m *Manager) Output(ctx context.Context, id, tool string) *schema.Schema {
	var lt *liveTool
	m.mu.Lock()
	if st := m.sessions[id]; st != nil {
		lt = st.tools[tool]
	}
	if rt := m.remote[id]; lt == nil && rt != nil {
		lt = rt.tools[tool]
	}
	m.mu.Unlock()
	if lt == nil {
		lt = m.storedTool(ctx, id, tool) // the tab is held by a replica not heard from
	}
	if lt == nil {
		return nil
	}
	return lt.outp
}

// storedTool is tool as session id's stored advertisement declares it, or
// nil.
func (m *Manager) storedTool(ctx context.Context, id, tool string) *liveTool {
	s, err := m.store.SessionGet(ctx, id)
	if err != nil {
		return nil
	}
	for _, t := range s.Tools {
		if t.Name == tool {
			if lt, err := m.compile(t); err == nil {
				return lt
			}
		}
	}
	return nil
}
