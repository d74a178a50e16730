package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Conn is one attached event stream of a tab. The transport writes what
// Next returns, waits on Ready between batches, stops when Done closes, and
// calls Close when it returns. Not for concurrent use by several writers.
type Conn struct {
	st     *state
	ctx    context.Context
	cancel context.CancelCauseFunc
	ready  chan struct{}

	// Guarded by st.mu.
	queue  []*event
	ending bool
}

// Attach connects a tab's stream to session id, replacing any stream it
// already had (the old one ends). lastEventID is the SSE Last-Event-ID the
// tab resumes after ("" for a fresh stream). The Conn ends when ctx ends.
func (m *Manager) Attach(ctx context.Context, id, lastEventID string) (*Conn, error) {
	st, err := m.state(ctx, id)
	if err != nil {
		return nil, err
	}
	c := &Conn{st: st, ready: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancelCause(ctx)

	m.mu.Lock()
	if st.ended || m.closed {
		m.mu.Unlock()
		c.cancel(nil)
		return nil, switchboard.Errorf(switchboard.CodeSessionGone, "session %s ended while connecting; connect again", id)
	}
	st.isLive, st.up, st.waiting = true, true, true
	m.watch.notify()
	st.mu.Lock()
	old := st.conn
	st.conn = c
	st.gen++
	st.seen, st.expires = m.opts.Now(), time.Time{}
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	c.queue = st.replayLocked(lastEventID)
	if len(c.queue) > 0 {
		c.ready <- struct{}{}
	}
	st.mu.Unlock()
	m.mu.Unlock()
	if old != nil {
		old.end(switchboard.Errorf(switchboard.CodeConflict, "another stream attached to session %s", id))
	}
	// Record where the stream is before the tab hears it is open, so a
	// call it prompts on another replica finds it (presence.go); and tell
	// a replica that kept the tab's previous stream to let it go.
	if err := m.store.SessionStream(ctx, id, m.replica, true, m.opts.Now()); err != nil {
		m.log.Warn("record that the tab's stream is on this replica", "session", id, "err", err)
	}
	if err := m.bus.Publish(ctx, topicDispatch(id), encodeDispatch(msgMoved, m.replica, nil)); err != nil {
		m.log.Warn("tell other replicas the tab's stream is here", "session", id, "err", err)
	}
	return c, nil
}

// Hello is the first frame of a stream: the session's settings, so the SDK
// can size its own watchdog. It carries no id (not resumable).
func (c *Conn) Hello() Event {
	b, _ := json.Marshal(map[string]any{
		"protocolVersion": switchboard.ProtocolVersion,
		"sessionId":       c.st.id,
		"heartbeatMs":     c.st.m.opts.Heartbeat.Milliseconds(),
		"graceMs":         c.st.m.opts.Grace.Milliseconds(),
		"reconnectMs":     c.st.m.opts.Reconnect.Milliseconds(),
	})
	return Event{Kind: KindReady, Data: b}
}

// Next pops the next event to write, if any.
func (c *Conn) Next() (Event, bool) {
	st := c.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(c.queue) == 0 {
		return Event{}, false
	}
	ev := c.queue[0]
	c.queue[0] = nil
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil // let the backing array go
	}
	ev.delivered = true
	return Event{ID: st.eventID(ev.seq), Kind: ev.kind, Data: ev.data}, true
}

// Ready receives a value when events may be waiting for Next.
func (c *Conn) Ready() <-chan struct{} { return c.ready }

// Done closes when the stream must end: the client went away, another
// stream replaced it, it fell too far behind, the session ended or the
// daemon is shutting down.
func (c *Conn) Done() <-chan struct{} { return c.ctx.Done() }

// Context is cancelled together with Done.
func (c *Conn) Context() context.Context { return c.ctx }

// Err says why the stream ended (nil while it runs).
func (c *Conn) Err() error {
	if c.ctx.Err() == nil {
		return nil
	}
	return context.Cause(c.ctx)
}

func (c *Conn) end(reason error) { c.cancel(reason) }

// Close detaches the stream. If it was the session's current stream the
// tab stops being offered for calls and its windows start: calls named to
// it wait at most the reconnect window for another stream, and unless one
// attaches within the keep window the tab is gone.
func (c *Conn) Close() {
	st, m := c.st, c.st.m
	m.mu.Lock()
	st.mu.Lock()
	dropped := st.conn == c
	if dropped {
		st.conn = nil
		st.up = false
		st.seen = m.opts.Now()
		if !st.ended && !m.closed {
			st.armExpiry(true)
		}
	}
	c.queue = nil
	st.mu.Unlock()
	m.mu.Unlock()
	c.cancel(nil)
	if dropped {
		m.watch.notify() // its tools are no longer offered
		m.detach(st.id)
	}
}
