package session

import (
	"context"
	"strings"
	"sync"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// maxRetainedEvents bounds the application events (Send) kept in one
// session's log for resume; older ones are dropped first. Requests are never
// dropped and cancels have their own bound.
const maxRetainedEvents = 128

// maxEventBytes bounds one application event's data.
const maxEventBytes = 4 << 20

// Send queues an application event on session id's stream: an SSE frame
// whose event name is kind and whose data is the JSON data (panel.open,
// approval.request, ...). The event gets a resumable id, so a stream that
// reconnects with Last-Event-ID within the keep window gets it once; the
// newest 128 are retained. It is best effort toward a tab that is not there:
// a session no replica keeps (never connected, gone or closed) is
// SESSION_GONE and nothing is queued. Kinds of the dispatch protocol itself
// (browser.action.*, session.*) are refused.
//
// A tab whose stream another replica holds (its announcement, or the store
// if that has not arrived yet) gets the event through that replica: it
// crosses on the session's dispatch topic and the holder queues it exactly
// as it queues its own (one log, one sequence of event ids, so
// Last-Event-ID resumes as on one replica). Delivery across replicas is at
// most once, like everything on the bus; an event too large for the bus
// is refused with PAYLOAD_TOO_LARGE rather than dropped silently.
func (m *Manager) Send(ctx context.Context, id, kind string, data []byte) error {
	return m.send(ctx, id, kind, data, true)
}

// SendHere is Send to a tab this replica keeps, and SESSION_GONE for any
// other: for a caller that runs on every replica and tells each the tabs
// it holds (the daemon's approval and agent status notices, a panel's
// working copy, which is the holder's), so a tab that moved meanwhile is
// told once, by its new holder.
func (m *Manager) SendHere(ctx context.Context, id, kind string, data []byte) error {
	return m.send(ctx, id, kind, data, false)
}

func (m *Manager) send(ctx context.Context, id, kind string, data []byte, relay bool) error {
	if err := checkEventKind(kind); err != nil {
		return err
	}
	if len(data) == 0 {
		data = []byte("{}")
	}
	if len(data) > maxEventBytes {
		return switchboard.Errorf(switchboard.CodePayloadTooLarge, "event %s is %d bytes; the limit is %d", kind, len(data), maxEventBytes)
	}
	if err := ctx.Err(); err != nil {
		return switchboard.Errorf(switchboard.CodeCancelled, "send %s: %v", kind, err)
	}
	m.mu.Lock()
	st := m.sessions[id]
	live := st != nil && st.kept() && !m.closed
	closed := m.closed
	elsewhere := !live && !closed && m.fresh(m.remote[id]) // announced only while kept there
	m.mu.Unlock()
	switch {
	case live:
		if !st.queueEvent(kind, append([]byte(nil), data...)) {
			return switchboard.Errorf(switchboard.CodeSessionGone, "session %s ended", id)
		}
		return nil
	case closed || !relay:
		return switchboard.Errorf(switchboard.CodeSessionGone, "session %s has no tab connected to this daemon", id)
	case !elsewhere && !m.streamElsewhere(ctx, id):
		return switchboard.Errorf(switchboard.CodeSessionGone, "session %s has no tab connected to this daemon", id)
	}
	if !fitsBus(kind, data) {
		return switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"event %s is %d bytes, and the tab of session %s is connected to another replica: an event crossing replicas may be at most %d bytes (send a small event naming what the app should fetch)",
			kind, len(data), id, bus.MaxPayload-2-len(kind))
	}
	if err := m.route(ctx, id, encodeDispatch(msgEvent, kind, data)); err != nil {
		return err
	}
	return nil
}

// streamElsewhere reports whether the store records session id's stream on
// another live replica whose announcement has not reached this one yet
// (only with Options.Presence: a lone Manager holds every tab it serves).
func (m *Manager) streamElsewhere(ctx context.Context, id string) bool {
	if !m.opts.Presence {
		return false
	}
	s, err := m.store.SessionGet(ctx, id)
	if err != nil || !s.ClosedAt.IsZero() || s.Stream == "" || s.Stream == m.replica {
		return false
	}
	return m.replicaLive(ctx, s.Stream)
}

// queueEvent appends an application event to st's log and queues it on
// the stream; false when st ended meanwhile.
func (st *state) queueEvent(kind string, data []byte) bool {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return false
	}
	st.seq++
	ev := &event{seq: st.seq, kind: kind, data: data}
	st.log = append(st.log, ev)
	st.trimEventsLocked()
	slow := st.enqueueLocked(ev)
	st.mu.Unlock()
	if slow != nil {
		slow.end(switchboard.Errorf(switchboard.CodeUnavailable,
			"the tab fell more than %d events behind its stream; reconnect to resume", st.m.opts.MaxQueued))
	}
	return true
}

// relayed queues an event another replica sent for this tab (Send), when
// this replica keeps the tab; a replica with a state of it that never
// held its stream ignores it.
func (st *state) relayed(kind string, data []byte) {
	m := st.m
	m.mu.Lock()
	kept := st.kept() && !m.closed && m.sessions[st.id] == st
	m.mu.Unlock()
	if kept && checkEventKind(kind) == nil {
		st.queueEvent(kind, data)
	}
}

// trimEventsLocked drops the oldest application events past the retention
// bound. Caller holds st.mu.
func (st *state) trimEventsLocked() {
	n := 0
	for _, ev := range st.log {
		if isAppEvent(ev.kind) {
			n++
		}
	}
	if n <= maxRetainedEvents {
		return
	}
	drop := n - maxRetainedEvents
	out := st.log[:0]
	for _, ev := range st.log {
		if drop > 0 && isAppEvent(ev.kind) {
			drop--
			continue
		}
		out = append(out, ev)
	}
	for i := len(out); i < len(st.log); i++ {
		st.log[i] = nil
	}
	st.log = out
}

func isAppEvent(kind string) bool { return kind != KindRequest && kind != KindCancel }

// checkEventKind accepts a dot-separated lowercase name outside the
// dispatch protocol's own namespaces; it becomes an SSE event line, so no
// whitespace or control character may slip in.
func checkEventKind(kind string) error {
	if kind == "" || len(kind) > 64 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "event kind must be 1-64 characters")
	}
	for _, r := range kind {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "event kind %q: only a-z, 0-9, '.', '_' and '-'", kind)
		}
	}
	if strings.HasPrefix(kind, "browser.action.") || strings.HasPrefix(kind, "session.") {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "event kind %q belongs to the dispatch protocol", kind)
	}
	return nil
}

// Connected reports whether session id has a tab attached to this process
// that can take what is addressed to it: a connected stream, or one that
// dropped less than the reconnect window ago.
func (m *Manager) Connected(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.sessions[id]
	return st != nil && st.reachable() && !m.closed
}

// WatchGone calls fn (once, on the bus's delivery goroutine; it must not
// block) when session id's tab is gone or the session is closed, until
// cancel is called. Delivery is at most once, like everything on the bus:
// a watcher that must not keep state for a dead session also checks
// Connected now and then.
func (m *Manager) WatchGone(id string, fn func()) (cancel func(), err error) {
	var once sync.Once
	return m.bus.Subscribe(topicState(id), func(p []byte) {
		if strings.HasPrefix(string(p), stateGone+" ") { // not offline: the tab is still kept
			once.Do(fn)
		}
	})
}

// User returns the principal the app's backend opened session id for (the
// signed-in user; may be empty).
func (m *Manager) User(ctx context.Context, id string) (string, error) {
	s, err := m.store.SessionGet(ctx, id)
	if err != nil {
		return "", err
	}
	return s.Principal, nil
}

// Scope returns the scope the app's backend gave session id's user (the
// zero scope for an unscoped session).
func (m *Manager) Scope(ctx context.Context, id string) (switchboard.SessionScope, error) {
	s, err := m.store.SessionGet(ctx, id)
	if err != nil {
		return switchboard.SessionScope{}, err
	}
	return s.Scope, nil
}
