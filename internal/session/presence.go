package session

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// Presence across replicas (issue 16). A tab's stream lives on one
// replica; every other request of the tab may reach any replica (a
// round-robin load balancer needs no stickiness). Each Manager with
// Options.Presence announces its tabs on the bus (whether a stream is up,
// whether calls named to it may wait for it, the tools it advertises, when
// it was last seen) when they change and again every presenceEvery, and
// keeps what the others announce for presenceTTL. A call whose tab is not
// here goes to the replica that holds it the way every call goes: the
// request on that replica's own topic (route.go), the answer to the
// call's owner (the broker's ends), a tab going away on the session's
// state topic.
//
// What is the truth and what is a hint. The store holds what the tab sent
// (its advertisement, its workspace report) and which replica holds its
// stream (Session.Stream); presence is the live picture built from the
// announcements: a replica that missed one has the next within
// presenceEvery, and a dead replica's tabs are announced gone by the
// survivor that claims it (ReplicaGone), or forgotten after presenceTTL
// when nobody does. The session's dispatch topic carries the tab's own news to
// whoever keeps a state of it: its advertisement changed (reload it from
// the store), its stream attached elsewhere (drop the state quietly: the
// tab moved), the session was closed (end the stream). A call naming a
// tab that the store says is attached to another live replica, before
// that replica's announcement arrived, waits for it (at most attachWait).

const (
	topicPresence = "session.presence"
	presenceEvery = 15 * time.Second
	presenceTTL   = 3 * presenceEvery
	// attachWait bounds how long a call naming a tab whose stream the
	// store records on another replica waits for that replica's
	// announcement (normally milliseconds behind the attach).
	attachWait = 2 * time.Second
)

// presenceMsg is one tab's announcement.
type presenceMsg struct {
	From    string `json:"from"`
	ID      string `json:"id"`
	User    string `json:"user,omitempty"`
	Up      bool   `json:"up,omitempty"`
	Waiting bool   `json:"waiting,omitempty"`
	Gone    bool   `json:"gone,omitempty"`
	// Closed: the session was ended (on the replica sending this, which
	// may not hold the tab): every replica forgets the tab at once.
	Closed bool               `json:"closed,omitempty"`
	Tools  []switchboard.Tool `json:"tools,omitempty"`
	// What GET /sessions shows of it (SessionInfo), as of the announcement.
	Created  time.Time `json:"created,omitzero"`
	LastSeen time.Time `json:"lastSeen,omitzero"`
	Expires  time.Time `json:"expires,omitzero"`
	Pending  int       `json:"pending,omitempty"`
	// Panels: a panel renderer attached in the tab (MarkPanels), so a
	// panel call that names no tab may choose it from any replica.
	Panels bool `json:"panels,omitempty"`
}

// remoteTab is another replica's tab as last announced.
type remoteTab struct {
	from        string
	user        string
	up, waiting bool
	panels      bool
	tools       map[string]*liveTool
	seen        time.Time // when the announcement arrived

	created, lastSeen, expires time.Time
	pending                    int
}

// list is rt's tools as session id advertises them, by name.
func (rt *remoteTab) list(id string) []switchboard.Tool {
	out := make([]switchboard.Tool, 0, len(rt.tools))
	for _, lt := range rt.tools {
		out = append(out, withOrigin(id, lt))
	}
	slices.SortFunc(out, func(a, b switchboard.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// info describes another replica's tab, as List and Info show it.
func (m *Manager) remoteInfo(id string, rt *remoteTab) switchboard.SessionInfo {
	info := switchboard.SessionInfo{ID: id, User: rt.user, CreatedAt: rt.created, LastSeen: rt.lastSeen, ExpiresAt: rt.expires,
		Pending: rt.pending, Replica: rt.from, Tools: rt.list(id), Contexts: []switchboard.WorkspaceContext{}}
	switch {
	case rt.up:
		info.State, info.Connected, info.LastSeen, info.ExpiresAt = switchboard.TabConnected, true, m.opts.Now(), time.Time{}
	case rt.waiting:
		info.State = switchboard.TabReconnecting
	default:
		info.State = switchboard.TabDisconnected
	}
	return info
}

// awaitPresence waits at most attachWait for a tab to be reachable here or
// announced by another replica, and reports whether it is.
func (m *Manager) awaitPresence(ctx context.Context, id string) bool {
	ch := make(chan struct{}, 1)
	stop := m.SubscribeTools(ch) // applyPresence signals it
	defer stop()
	timer := time.NewTimer(attachWait)
	defer timer.Stop()
	for {
		m.mu.Lock()
		st, rt := m.sessions[id], m.remoteLocked(id)
		ok := (st != nil && st.reachable()) || (rt != nil && rt.waiting)
		m.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-m.shutdown:
			return false
		}
	}
}

func (m *Manager) fresh(rt *remoteTab) bool {
	return rt != nil && m.opts.Now().Sub(rt.seen) < presenceTTL
}

// remoteLocked returns the tab id announced by another replica when this
// replica cannot reach it itself. Caller holds m.mu.
func (m *Manager) remoteLocked(id string) *remoteTab {
	if st := m.sessions[id]; st != nil && st.reachable() {
		return nil
	}
	if rt := m.remote[id]; m.fresh(rt) {
		return rt
	}
	return nil
}

func remoteTarget(id string, lt *liveTool) broker.Target {
	t := lt.tool
	t.Origin = &switchboard.Origin{Source: switchboard.SourceSession, SessionID: id}
	return broker.Target{SessionID: id, Tool: t, Input: lt.input, Output: lt.outp}
}

// startPresence announces this replica's tabs and listens to the others'.
func (m *Manager) startPresence() error {
	inbox := make(chan []byte, 256)
	unsub, err := m.bus.Subscribe(topicPresence, func(p []byte) {
		select { // handlers must not block; the next round repeats it
		case inbox <- bytes.Clone(p):
		default:
		}
	})
	if err != nil {
		return err
	}
	unsubDispatch, err := m.listenDispatch()
	if err != nil {
		unsub()
		return err
	}
	changes := make(chan struct{}, 1)
	stopWatch := m.SubscribeTools(changes)
	m.presenceKick = make(chan struct{}, 1)
	m.presenceDone = make(chan struct{})
	go func() {
		defer close(m.presenceDone)
		defer unsub()
		defer unsubDispatch()
		defer stopWatch()
		last := map[string]string{} // session → what was announced
		tick := time.NewTicker(presenceEvery)
		defer tick.Stop()
		m.announce(last, true)
		for {
			select {
			case <-m.shutdown:
				m.announceGone(last) // tabs reconnect elsewhere; stop routing here now
				return
			case <-changes:
				m.announce(last, false)
			case <-m.presenceKick:
				m.announce(last, false)
			case <-tick.C:
				m.announce(last, true)
				m.forgetStale()
			case p := <-inbox:
				m.applyPresence(p)
			}
		}
	}()
	return nil
}

// announce publishes the tabs whose presence changed since last (all of
// them with every), and a gone for those no longer here.
func (m *Manager) announce(last map[string]string, every bool) {
	var out []presenceMsg
	seen := map[string]bool{}
	m.mu.Lock()
	for id, st := range m.sessions {
		if !st.kept() {
			continue
		}
		seen[id] = true
		msg := presenceMsg{From: m.replica, ID: id, User: st.user, Up: st.connected(), Waiting: st.reachable(), Created: st.createdAt, Panels: st.panels}
		st.mu.Lock()
		msg.LastSeen, msg.Expires = st.seen, st.expires
		for _, ev := range st.log {
			if ev.kind == KindRequest {
				msg.Pending++
			}
		}
		st.mu.Unlock()
		keys := make([]string, 0, len(st.tools))
		for _, lt := range st.tools {
			msg.Tools = append(msg.Tools, lt.tool)
			keys = append(keys, hex.EncodeToString(lt.key[:8]))
		}
		slices.Sort(keys)
		fp := boolMark(msg.Up) + boolMark(msg.Waiting) + boolMark(msg.Panels) + strings.Join(keys, ",")
		if every || last[id] != fp {
			last[id] = fp
			out = append(out, msg)
		}
	}
	m.mu.Unlock()
	for id := range last {
		if !seen[id] {
			delete(last, id)
			out = append(out, presenceMsg{From: m.replica, ID: id, Gone: true})
		}
	}
	for _, msg := range out {
		m.publishPresence(msg)
	}
}

func (m *Manager) announceGone(last map[string]string) {
	for id := range last {
		m.publishPresence(presenceMsg{From: m.replica, ID: id, Gone: true})
	}
}

func (m *Manager) publishPresence(msg presenceMsg) {
	b, err := json.Marshal(msg)
	if err == nil {
		err = m.bus.Publish(context.Background(), topicPresence, b)
	}
	if err != nil {
		m.log.Warn("other replicas do not see this tab", "session", msg.ID, "err", err)
	}
}

func boolMark(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// applyPresence records another replica's announcement.
func (m *Manager) applyPresence(p []byte) {
	var msg presenceMsg
	if json.Unmarshal(p, &msg) != nil || (msg.From == m.replica && !msg.Closed) || msg.ID == "" {
		return
	}
	if msg.Gone {
		m.mu.Lock()
		if rt := m.remote[msg.ID]; rt != nil && (rt.from == msg.From || msg.Closed) {
			delete(m.remote, msg.ID)
		}
		m.mu.Unlock()
		m.watch.notify()
		return
	}
	rt := &remoteTab{from: msg.From, user: msg.User, up: msg.Up, waiting: msg.Waiting, panels: msg.Panels,
		tools: make(map[string]*liveTool, len(msg.Tools)), seen: m.opts.Now(),
		created: msg.Created, lastSeen: msg.LastSeen, expires: msg.Expires, pending: msg.Pending}
	for _, t := range msg.Tools {
		key, err := keyOf(t)
		if err != nil {
			continue
		}
		m.mu.Lock()
		lt := m.shared[key]
		if lt == nil {
			lt = m.remoteTools[key]
		}
		m.mu.Unlock()
		if lt == nil {
			if lt, err = compileTool(key, t); err != nil {
				continue // it compiled where it was advertised; a newer schema dialect, say
			}
		}
		rt.tools[t.Name] = lt
	}
	m.mu.Lock()
	if have := m.remote[msg.ID]; m.fresh(have) && have.from != rt.from && have.up && !rt.up {
		// The tab's stream is up on another replica: this one's is what it
		// left behind (a reconnect that the load balancer sent elsewhere).
		m.mu.Unlock()
		return
	}
	for _, lt := range rt.tools {
		m.remoteTools[lt.key] = lt
	}
	m.remote[msg.ID] = rt
	m.mu.Unlock()
	m.watch.notify()
}

// forgetStale drops announcements older than presenceTTL (their replica
// stopped announcing: it died or lost the bus) and the compiled tools no
// remote tab uses any more.
func (m *Manager) forgetStale() {
	m.mu.Lock()
	defer m.mu.Unlock()
	used := map[[32]byte]bool{}
	for id, rt := range m.remote {
		if !m.fresh(rt) {
			delete(m.remote, id)
			continue
		}
		for _, lt := range rt.tools {
			used[lt.key] = true
		}
	}
	for key := range m.remoteTools {
		if !used[key] {
			delete(m.remoteTools, key)
		}
	}
}

// remoteLiveLocked lists the tools of other replicas' connected tabs that
// this replica does not hold. Caller holds m.mu.
func (m *Manager) remoteLiveLocked() []switchboard.Tool {
	var out []switchboard.Tool
	for id := range m.remote {
		rt := m.remoteLocked(id)
		if rt == nil || !rt.up {
			continue
		}
		for _, lt := range rt.tools {
			out = append(out, remoteTarget(id, lt).Tool)
		}
	}
	return out
}

// MarkPanels records that a panel renderer attached in session id's tab
// (held here), and announces it to the other replicas.
func (m *Manager) MarkPanels(id string) {
	m.mu.Lock()
	st := m.sessions[id]
	changed := st != nil && !st.panels
	if changed {
		st.panels = true
	}
	kick := m.presenceKick
	m.mu.Unlock()
	if !changed {
		return
	}
	m.watch.notify() // ShowsPanels may have turned true
	if kick != nil {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}

// ShowsPanels reports whether a tab in which a panel renderer attached
// (MarkPanels) is connected, here or on another replica: panels can be
// shown. SubscribeTools signals when the answer may have changed.
func (m *Manager) ShowsPanels() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.sessions {
		if st.panels && st.connected() {
			return true
		}
	}
	for id := range m.remote {
		if rt := m.remoteLocked(id); rt != nil && rt.up && rt.panels {
			return true
		}
	}
	return false
}

// PanelTabsElsewhere lists the tabs other replicas hold, connected, in
// which a panel renderer attached (MarkPanels there).
func (m *Manager) PanelTabsElsewhere() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id := range m.remote {
		if rt := m.remoteLocked(id); rt != nil && rt.up && rt.panels {
			out = append(out, id)
		}
	}
	return out
}

// TabsElsewhere lists the tabs other replicas hold, connected (what
// panel.list without a session lists beside this replica's own).
func (m *Manager) TabsElsewhere() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id := range m.remote {
		if rt := m.remoteLocked(id); rt != nil && rt.up {
			out = append(out, id)
		}
	}
	return out
}

// PresenceID is the id this process announces its tabs under: what
// Elsewhere answers on the other replicas.
func (m *Manager) PresenceID() string { return m.replica }

// Elsewhere names the replica that announced session id's tab as
// connected (or within its reconnect window) when this replica does not
// hold it itself; "" when no other replica did. Package panel sends its
// calls for that tab there.
func (m *Manager) Elsewhere(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ""
	}
	if rt := m.remoteLocked(id); rt != nil && (rt.up || rt.waiting) {
		return rt.from
	}
	return ""
}

// ReplicaGone tells every replica about the tabs whose stream replica id
// held, once that replica is known dead (a survivor claimed it,
// cluster.Members), as its own timers would have had it lived: their
// stream is down for good there. At once, every replica forgets their
// presence (instead of after presenceTTL), and the calls delivered to them
// from any replica end SESSION_GONE (the state topic's offline message,
// what they hear when a tab's stream stays down past the reconnect
// window; the dead replica's log of them is lost, so they would otherwise
// wait for the tool's timeout). After the keep window, a tab that has not
// reattached anywhere is announced gone, waking the WatchGone watchers
// (workspace contexts, panels) as a live replica's expiry does; one that
// reattached (the SDK retries at once) keeps its contexts and panels. It
// returns how many tabs it told of.
func (m *Manager) ReplicaGone(ctx context.Context, id string) (int, error) {
	if id == "" || id == m.replica {
		return 0, nil
	}
	ids := map[string]bool{}
	m.mu.Lock()
	for sid, rt := range m.remote {
		if rt.from == id {
			ids[sid] = true
		}
	}
	m.mu.Unlock()
	// A filter in the future keeps only the sessions whose stream is
	// attached somewhere (SessionFilter.SeenSince).
	list, err := m.store.SessionList(ctx, switchboard.SessionFilter{SeenSince: m.opts.Now().Add(24 * time.Hour)})
	if err != nil {
		return 0, err
	}
	for _, s := range list {
		if s.Stream == id {
			ids[s.ID] = true
		}
	}
	var told []string
	for sid := range ids {
		if !m.detachedFrom(ctx, sid, id) {
			continue
		}
		if m.opts.Presence {
			m.publishPresence(presenceMsg{From: id, ID: sid, Gone: true})
		}
		m.publishState(sid, stateOffline, fmt.Sprintf("the replica holding the stream of session %s's tab (%s) died before the tab answered", sid, id))
		told = append(told, sid)
	}
	if len(told) > 0 {
		time.AfterFunc(m.opts.Grace, func() {
			m.mu.Lock()
			closed := m.closed
			m.mu.Unlock()
			if closed {
				return // presence lapses; the next start's watchers start afresh
			}
			ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
			defer cancel()
			for _, sid := range told {
				if m.detachedFrom(ctx, sid, id) {
					m.publishGone(sid, fmt.Sprintf("the tab of session %s lost its replica (%s) and did not reattach within %s", sid, id, m.opts.Grace))
				}
			}
		})
	}
	return len(told), nil
}

// detachedFrom records that dead replica id no longer holds session sid's
// stream, and reports whether the tab is open and attached nowhere (not
// reattached to a live replica since).
func (m *Manager) detachedFrom(ctx context.Context, sid, id string) bool {
	if err := m.store.SessionStream(ctx, sid, id, false, m.opts.Now()); err != nil {
		if switchboard.CodeOf(err) != switchboard.CodeNotFound {
			m.log.Warn("could not record that a dead replica's tab lost its stream", "session", sid, "err", err)
		}
		return false
	}
	s, err := m.store.SessionGet(ctx, sid)
	return err == nil && s.ClosedAt.IsZero() && s.Stream == ""
}
