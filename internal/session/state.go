package session

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// state is this process's view of one session: its advertised tools, its
// event log and its current stream. It exists while the tab is connected,
// within its keep window (Options.Grace) after the stream drops, or
// briefly after an advertisement that came before the stream; a gone tab's
// state is dropped.
//
// A kept tab is in one of three conditions: up (a stream is attached: it
// is offered for calls), reconnecting (down for less than the reconnect
// window: only calls that name it, directly or through their run, go to
// it, and they wait for the stream), or down past that window (calls to it
// fail with SESSION_GONE; the state waits out the keep window for a
// reload).
type state struct {
	m         *Manager
	id        string
	tokenHash string
	epoch     string
	unsub     func()
	user      string    // the principal the session was opened for
	createdAt time.Time // when the session was opened

	// Guarded by m.mu.
	tools   map[string]*liveTool // shared entries (see shared.go)
	runs    []string
	isLive  bool // a stream attached once: the tab is kept (see kept)
	up      bool // a stream is attached now
	waiting bool // up, or down for less than the reconnect window
	ended   bool
	panels  bool // a panel renderer attached (MarkPanels)

	// reload serializes writing or reading the stored advertisement with
	// applying it, so an older advertisement never replaces a newer one.
	reload sync.Mutex

	mu      sync.Mutex // guards the rest; taken after m.mu when both are held
	seq     uint64
	log     []*event // unacknowledged requests and recent cancels, by seq
	conn    *Conn
	timer   *time.Timer
	gen     uint64    // bumps on every attach, so a stale expiry does nothing
	seen    time.Time // last attach, advertisement or stream drop
	expires time.Time // when the armed keep window ends (zero while up)
}

// event is one entry of a session's log.
type event struct {
	seq       uint64
	kind      string
	inv       string
	data      []byte
	delivered bool
}

// Event kinds on a tab's stream.
const (
	KindRequest = "browser.action.request"
	KindCancel  = "browser.action.cancel"
	KindReady   = "session.ready"
)

// Event is one SSE frame for a tab: ID is the SSE id (empty for frames
// that are not resumable, like session.ready), Kind the SSE event name and
// Data its JSON.
type Event struct {
	ID   string
	Kind string
	Data []byte
}

// kept: the tab attached once and its state has not been dropped; events
// for it are queued for its resume. Caller holds m.mu.
func (st *state) kept() bool { return st.isLive && !st.ended }

// connected: a stream is attached, so the tab is offered for calls.
// Caller holds m.mu.
func (st *state) connected() bool { return st.up && !st.ended }

// reachable: connected, or reconnecting within the reconnect window, so a
// call that names the tab goes to it. Caller holds m.mu.
func (st *state) reachable() bool { return (st.up || st.waiting) && !st.ended }

func (st *state) eventID(seq uint64) string { return st.epoch + "-" + strconv.FormatUint(seq, 10) }

// state returns the local state of session id, creating it on first use
// from the store: the tab's stored advertisement (wherever it was PUT) and
// the calls still dispatched to it (made while its stream was on another
// replica, or before it attached).
func (m *Manager) state(ctx context.Context, id string) (*state, error) {
	m.mu.Lock()
	st := m.sessions[id]
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "the daemon is shutting down")
	}
	if st != nil {
		return st, nil
	}
	st = &state{m: m, id: id, epoch: randomHex(4), tools: map[string]*liveTool{}, seen: m.opts.Now()}
	// Subscribe before reading the store, and hold reload until the state
	// is in place: an advertisement stored after the read is announced
	// after it, and its reload waits for this one.
	st.reload.Lock()
	defer st.reload.Unlock()
	unsub, err := m.bus.Subscribe(topicDispatch(id), st.onDispatch)
	if err != nil {
		return nil, err
	}
	s, err := m.store.SessionGet(ctx, id)
	if err == nil && !s.ClosedAt.IsZero() {
		err = switchboard.Errorf(switchboard.CodeSessionGone, "session %s was closed", id)
	}
	if err != nil {
		unsub()
		return nil, err
	}
	st.tokenHash, st.user, st.createdAt = s.TokenHash, s.Principal, s.CreatedAt
	tools := m.compileStored(id, s.Tools)
	open, err := m.store.InvocationList(ctx, switchboard.InvocationFilter{SessionID: id, Status: switchboard.StatusDispatched, Limit: maxReplayed})
	if err != nil {
		m.log.Warn("calls dispatched to the tab before it attached here are not replayed", "session", id, "err", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if other := m.sessions[id]; other != nil { // lost a race to create it
		unsub()
		return other, nil
	}
	st.unsub = unsub
	m.sessions[id] = st
	m.setToolsLocked(st, tools)
	st.mu.Lock()
	for _, rec := range slices.Backward(open) { // oldest first
		if data, err := requestJSON(rec, 0); err == nil {
			st.appendRequestLocked(rec.ID, data)
		}
	}
	// A state nobody connects to is dropped after the keep window.
	st.armExpiry(false)
	st.mu.Unlock()
	return st, nil
}

// maxReplayed bounds the dispatched calls a new state loads from the store.
const maxReplayed = 1000

// armExpiry starts the windows of a tab with no stream: with reconnect
// (its stream just dropped), the reconnect window first, then the rest of
// the keep window; without, the keep window alone. Caller holds st.mu.
func (st *state) armExpiry(reconnect bool) {
	if st.timer != nil {
		st.timer.Stop()
	}
	m, gen := st.m, st.gen
	st.expires = m.opts.Now().Add(m.opts.Grace)
	if reconnect {
		st.timer = time.AfterFunc(m.opts.Reconnect, func() { m.lapse(st, gen) })
		return
	}
	st.timer = time.AfterFunc(m.opts.Grace, func() { m.expire(st, gen) })
}

// lapse runs when a reconnect window ends with no stream back: the calls
// waiting on the tab fail with SESSION_GONE (each withdraws its request),
// new calls to it fail at once, and the state waits out the keep window.
func (m *Manager) lapse(st *state, gen uint64) {
	m.mu.Lock()
	st.mu.Lock()
	if st.ended || m.closed || st.gen != gen || st.conn != nil {
		st.mu.Unlock()
		m.mu.Unlock()
		return
	}
	st.waiting = false
	rest := m.opts.Grace - m.opts.Reconnect
	if rest > 0 {
		st.timer = time.AfterFunc(rest, func() { m.expire(st, gen) })
	}
	st.mu.Unlock()
	m.mu.Unlock()
	if rest <= 0 {
		m.expire(st, gen) // the windows coincide: gone tells the delivered calls
		return
	}
	m.watch.notify() // calls named to it no longer wait (other replicas hear it: presence.go)
	m.publishState(st.id, stateOffline, fmt.Sprintf("the tab of session %s lost its connection and did not reconnect within %s", st.id, m.opts.Reconnect))
}

// expire runs when a keep window ends: the tab is gone unless a stream
// attached meanwhile.
func (m *Manager) expire(st *state, gen uint64) {
	m.end(st, func() bool { return st.gen == gen && st.conn == nil },
		"the tab disconnected and did not reconnect within the keep window")
}

// end drops st if cond (nil: always) holds: its stream ends, its tools are
// withdrawn, and calls delivered to it hear that it is gone (Deliver).
func (m *Manager) end(st *state, cond func() bool, reason string) {
	m.drop(st, cond, reason, false)
}

// moved drops st quietly: the tab's stream attached to another replica,
// which now holds the tab, so nobody is told it is gone. The store says
// who attached last: a notice that arrives after this replica took the
// stream back is ignored.
func (m *Manager) moved(st *state, to string) {
	ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
	defer cancel()
	if s, err := m.store.SessionGet(ctx, st.id); err == nil && s.Stream == m.replica {
		return
	}
	// Requests that reached this replica as the tab moved (route.go).
	var pending []*event
	st.mu.Lock()
	for _, ev := range st.log {
		if ev.kind == KindRequest {
			pending = append(pending, ev)
		}
	}
	st.mu.Unlock()
	m.drop(st, nil, "", true)
	if to != "" && len(pending) > 0 {
		m.handOver(st.id, to, pending)
	}
}

func (m *Manager) drop(st *state, cond func() bool, reason string, quiet bool) {
	m.mu.Lock()
	if st.ended || m.closed {
		m.mu.Unlock()
		return
	}
	st.mu.Lock()
	if cond != nil && !cond() {
		st.mu.Unlock()
		m.mu.Unlock()
		return
	}
	st.ended, st.isLive, st.up, st.waiting = true, false, false, false
	c := st.conn
	st.conn, st.log = nil, nil
	if st.timer != nil {
		st.timer.Stop()
	}
	st.mu.Unlock()
	if m.sessions[st.id] == st {
		delete(m.sessions, st.id)
	}
	m.unindexLocked(st)
	m.releaseLocked(st)
	st.tools = nil
	for _, r := range st.runs {
		if m.runs[r] != st.id {
			continue
		}
		if quiet {
			// The tab moved to another replica: this replica's runs bound
			// to it keep sending it their calls, there.
			delete(m.runs, r)
			m.bindElsewhereLocked(r, st.id)
			continue
		}
		delete(m.runs, r)
	}
	if !quiet {
		// Gone: runs bound to the tab while another replica held it
		// choose a tab as unbound runs do, like those bound here.
		m.runsElsewhere = slices.DeleteFunc(m.runsElsewhere, func(r string) bool {
			if m.runs[r] == st.id {
				delete(m.runs, r)
				return true
			}
			return false
		})
	}
	m.mu.Unlock()
	st.unsub()
	if quiet {
		if c != nil {
			c.end(switchboard.Errorf(switchboard.CodeConflict, "another stream of session %s attached to another replica", st.id))
		}
		m.watch.notify()
		m.log.Debug("session moved to another replica", "session", st.id)
		return
	}
	if c != nil {
		c.end(switchboard.Errorf(switchboard.CodeSessionGone, "%s", reason))
		m.detach(st.id)
	}
	m.watch.notify()
	m.log.Debug("session gone", "session", st.id, "reason", reason)
	m.publishGone(st.id, reason)
}

// detach records in the store that this replica no longer holds the
// tab's stream (unless another replica took it meanwhile).
func (m *Manager) detach(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
	defer cancel()
	if err := m.store.SessionStream(ctx, id, m.replica, false, m.opts.Now()); err != nil {
		m.log.Warn("record that the tab's stream left this replica", "session", id, "err", err)
	}
}

func (m *Manager) publishGone(id, reason string) { m.publishState(id, stateGone, reason) }

// State messages: a kind word, a space, then why. gone: the tab's state was
// dropped or the session closed (WatchGone hears it); offline: its stream
// has been down past the reconnect window (only waiting calls care).
const (
	stateGone    = "gone"
	stateOffline = "offline"
)

func (m *Manager) publishState(id, kind, reason string) {
	if err := m.bus.Publish(context.Background(), topicState(id), []byte(kind+" "+reason)); err != nil {
		m.log.Warn("publish session state", "session", id, "state", kind, "err", err)
	}
}

// onDispatch receives the session's bus messages (see wire.go).
func (st *state) onDispatch(p []byte) {
	kind, inv, data, ok := decodeDispatch(p)
	if !ok {
		st.m.log.Warn("malformed dispatch message", "session", st.id)
		return
	}
	switch kind {
	case msgRequest:
		if len(data) == 0 { // sent by reference: too large for the bus
			go st.pushStored(inv)
			return
		}
		st.push(inv, slices.Clone(data))
	case msgCancel:
		st.cancel(inv, slices.Clone(data))
	case msgAck:
		st.ack(inv)
	case msgTools: // inv names the replica that stored it
		if inv != st.m.replica {
			go st.m.reload(st)
		}
	case msgMoved: // inv names the replica the stream attached to
		if inv != st.m.replica {
			go st.m.moved(st, inv)
		}
	case msgEnd:
		go st.m.end(st, nil, "the session was closed")
	case msgEvent: // inv is the event's kind
		st.relayed(inv, slices.Clone(data))
	}
}

// push appends a request to the log and queues it on the stream, once:
// a request already in the log (replayed from the store) is not repeated.
func (st *state) push(inv string, data []byte) {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	ev := st.appendRequestLocked(inv, data)
	if ev == nil {
		st.mu.Unlock()
		return
	}
	slow := st.enqueueLocked(ev)
	st.mu.Unlock()
	if slow != nil {
		slow.end(switchboard.Errorf(switchboard.CodeUnavailable,
			"the tab fell more than %d events behind its stream; reconnect to resume", st.m.opts.MaxQueued))
	}
}

// appendRequestLocked adds inv's request to the log, or returns nil when
// it is there already. Caller holds st.mu.
func (st *state) appendRequestLocked(inv string, data []byte) *event {
	if slices.ContainsFunc(st.log, func(e *event) bool { return e.kind == KindRequest && e.inv == inv }) {
		return nil
	}
	st.seq++
	ev := &event{seq: st.seq, kind: KindRequest, inv: inv, data: data}
	st.log = append(st.log, ev)
	return ev
}

// enqueueLocked queues ev on the current stream and returns the stream if
// that made it too slow to keep. Caller holds st.mu.
func (st *state) enqueueLocked(ev *event) *Conn {
	c := st.conn
	if c == nil || c.ending {
		return nil
	}
	if len(c.queue) >= st.m.opts.MaxQueued {
		c.ending = true
		return c
	}
	c.queue = append(c.queue, ev)
	select {
	case c.ready <- struct{}{}:
	default:
	}
	return nil
}

// pushStored loads a request sent by reference and pushes it.
func (st *state) pushStored(inv string) {
	ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
	defer cancel()
	rec, err := st.m.store.InvocationGet(ctx, inv)
	if err != nil || rec.Status != switchboard.StatusDispatched {
		return
	}
	data, err := requestJSON(rec, 0)
	if err != nil {
		return
	}
	st.push(inv, data)
}

// cancel withdraws a request: unsent, it simply disappears; already sent,
// the tab gets a cancel event (kept for resume) so its handler aborts.
func (st *state) cancel(inv string, data []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	req := st.removeLocked(inv)
	if req == nil || st.ended || !req.delivered {
		return
	}
	st.seq++
	ev := &event{seq: st.seq, kind: KindCancel, inv: inv, data: data}
	st.log = append(st.log, ev)
	// Keep only the newest cancels; requests are never dropped.
	n := 0
	for i := len(st.log) - 1; i >= 0; i-- {
		if st.log[i].kind == KindCancel {
			if n++; n > maxRetainedCancels {
				st.log = slices.Delete(st.log, i, i+1)
			}
		}
	}
	if c := st.conn; c != nil && !c.ending {
		c.queue = append(c.queue, ev) // a cancel never makes a stream "slow"
		select {
		case c.ready <- struct{}{}:
		default:
		}
	}
}

// ack drops an answered request from the log.
func (st *state) ack(inv string) {
	st.mu.Lock()
	st.removeLocked(inv)
	st.mu.Unlock()
}

// removeLocked removes inv's request from the log and from the stream's
// queue, returning it. Caller holds st.mu.
func (st *state) removeLocked(inv string) *event {
	i := slices.IndexFunc(st.log, func(e *event) bool { return e.kind == KindRequest && e.inv == inv })
	if i < 0 {
		return nil
	}
	ev := st.log[i]
	st.log = slices.Delete(st.log, i, i+1)
	if c := st.conn; c != nil {
		if j := slices.Index(c.queue, ev); j >= 0 {
			c.queue = slices.Delete(c.queue, j, j+1)
		}
	}
	return ev
}

// replayLocked returns the events a stream resuming after lastEventID has
// not seen. Caller holds st.mu.
func (st *state) replayLocked(lastEventID string) []*event {
	var after uint64
	resume := false
	if epoch, seq, ok := strings.Cut(lastEventID, "-"); ok && epoch == st.epoch {
		if n, err := strconv.ParseUint(seq, 10, 64); err == nil {
			after, resume = n, true
		}
	}
	var out []*event
	for _, ev := range st.log {
		switch {
		case resume && ev.seq > after:
			out = append(out, ev)
		case !resume && ev.kind == KindRequest:
			// A stream with no usable resume point gets every request still
			// open, never a cancel for something it did not see.
			out = append(out, ev)
		}
	}
	return out
}
