package session

import (
	"bytes"
	"context"

	"github.com/switchboardhq/switchboard/internal/bus"
)

// Where a tab's per-call messages go. A request, a cancel, an ack or an
// application event is for the one replica that holds the tab's stream,
// so it travels on that replica's own topic (bus.ReplicaTopic: no other
// replica hears it): delivered in place when the stream is here, sent to
// the replica presence names when it is there. When neither knows (the
// announcement has not arrived, the tab is between replicas) it goes on
// the session's dispatch topic, which every replica keeping a state of
// the tab hears — as do the session's own rare messages (tools, moved,
// end). Two hand-overs keep a message that raced a move:
//
//   - a replica that hears one on its topic for a tab it keeps no state of
//     passes it to the session's dispatch topic;
//   - a replica told that the stream moved passes the requests still in
//     its log to the new holder before it drops them (the holder keeps a
//     request once, by invocation).
//
// As ever on the bus, at most once; the store stays the truth (a new
// holder replays the calls dispatched to the tab from it).

// dispatchName is the replica topic of tabs' per-call messages.
const dispatchName = "session.dispatch"

// route sends a per-call message for session sid (routing above).
func (m *Manager) route(ctx context.Context, sid string, msg []byte) error {
	m.mu.Lock()
	st := m.sessions[sid]
	here := st != nil && st.reachable()
	var to string
	if rt := m.remoteLocked(sid); !here && rt != nil && m.opts.Presence {
		to = rt.from
	}
	m.mu.Unlock()
	switch {
	case here:
		st.onDispatch(msg)
		return nil
	case to != "":
		return m.bus.Publish(ctx, bus.ReplicaTopic(to, dispatchName), addressed(sid, msg))
	default:
		return m.bus.Publish(ctx, topicDispatch(sid), msg)
	}
}

// addressed prefixes msg with its session, for a replica topic.
func addressed(sid string, msg []byte) []byte {
	p := make([]byte, 0, len(sid)+1+len(msg))
	p = append(p, sid...)
	p = append(p, ' ')
	return append(p, msg...)
}

// listenDispatch subscribes to this replica's topic of per-call messages.
func (m *Manager) listenDispatch() (func(), error) {
	return m.bus.Subscribe(bus.ReplicaTopic(m.replica, dispatchName), m.onAddressed)
}

// onAddressed hears a per-call message sent to this replica.
func (m *Manager) onAddressed(p []byte) {
	i := bytes.IndexByte(p, ' ')
	if i < 1 {
		return
	}
	sid, msg := string(p[:i]), p[i+1:]
	m.mu.Lock()
	st := m.sessions[sid]
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return
	}
	if st != nil {
		st.onDispatch(msg)
		return
	}
	// The tab left (or never came): whoever keeps it now hears the
	// session's topic.
	msg = bytes.Clone(msg)
	go func() {
		if err := m.bus.Publish(context.Background(), topicDispatch(sid), msg); err != nil {
			m.log.Warn("pass on a message for a tab held elsewhere", "session", sid, "err", err)
		}
	}()
}

// handOver sends the requests still in st's log to replica to, which now
// holds the tab's stream; called once st is dropped for the move.
func (m *Manager) handOver(sid, to string, pending []*event) {
	for _, ev := range pending {
		data := ev.data
		if !fitsBus(ev.inv, data) {
			data = nil // the new holder reads the record
		}
		msg := addressed(sid, encodeDispatch(msgRequest, ev.inv, data))
		if err := m.bus.Publish(context.Background(), bus.ReplicaTopic(to, dispatchName), msg); err != nil {
			m.log.Warn("hand a request over to the tab's new replica", "session", sid, "invocation", ev.inv, "err", err)
		}
	}
}
