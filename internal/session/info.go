package session

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// List describes the open sessions whose tabs are kept — connected,
// reconnecting, or within their keep window — on this replica or, as
// announced, on another (presence.go), and those whose tab advertised but
// has not attached a stream anywhere within the keep window (connecting,
// from the store); newest first. Every replica lists the same tabs.
func (m *Manager) List(ctx context.Context) ([]switchboard.SessionInfo, error) {
	stored, err := m.store.SessionList(ctx, switchboard.SessionFilter{SeenSince: m.opts.Now().Add(-m.opts.Grace)})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	out := make([]switchboard.SessionInfo, 0, len(m.sessions))
	listed := map[string]bool{}
	for id, st := range m.sessions {
		// A tab whose stream left for another replica is listed as that
		// replica announces it.
		if !st.ended && (st.reachable() || m.remoteLocked(id) == nil) {
			out = append(out, m.infoLocked(st))
			listed[id] = true
		}
	}
	for id, rt := range m.remote {
		if !listed[id] && m.fresh(rt) {
			out = append(out, m.remoteInfo(id, rt))
			listed[id] = true
		}
	}
	m.mu.Unlock()
	for _, s := range stored {
		if !listed[s.ID] {
			if info, ok := m.storedInfo(s); ok {
				out = append(out, info)
			}
		}
	}
	slices.SortFunc(out, func(a, b switchboard.SessionInfo) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Info describes session id as List does; a session no replica keeps is
// described from the store as connecting, gone or closed. NOT_FOUND for an
// id never opened.
func (m *Manager) Info(ctx context.Context, id string) (switchboard.SessionInfo, error) {
	m.mu.Lock()
	if st := m.sessions[id]; st != nil && !st.ended && (st.reachable() || m.remoteLocked(id) == nil) {
		info := m.infoLocked(st)
		m.mu.Unlock()
		return info, nil
	}
	rt := m.remote[id]
	if !m.fresh(rt) {
		rt = nil
	}
	m.mu.Unlock()
	s, err := m.store.SessionGet(ctx, id)
	if rt != nil && err == nil && s.ClosedAt.IsZero() {
		// Another replica announces the tab; the store has the last word
		// on whether the session is still open.
		m.mu.Lock()
		info := m.remoteInfo(id, rt)
		m.mu.Unlock()
		return info, nil
	}
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return switchboard.SessionInfo{}, switchboard.Errorf(switchboard.CodeNotFound, "no session %q; `switchboard sessions list` shows the open tabs", id)
		}
		return switchboard.SessionInfo{}, err
	}
	if info, ok := m.storedInfo(s); ok {
		return info, nil
	}
	info := switchboard.SessionInfo{ID: s.ID, User: s.Principal, State: switchboard.TabGone, CreatedAt: s.CreatedAt,
		ClosedAt: s.ClosedAt, Tools: []switchboard.Tool{}, Contexts: []switchboard.WorkspaceContext{}}
	if !s.ClosedAt.IsZero() {
		info.State = switchboard.TabClosed
	}
	return info, nil
}

// storedInfo describes an open session that no replica announces but
// whose tab was heard from within the keep window without a stream that
// came and went: it advertised before attaching, or its stream attached
// on a replica whose announcement has not arrived. That tab is
// connecting, with its stored tools; ok is false for any other session.
func (m *Manager) storedInfo(s switchboard.Session) (switchboard.SessionInfo, bool) {
	now := m.opts.Now()
	if !s.ClosedAt.IsZero() || now.Sub(s.SeenAt) > m.opts.Grace || (s.Stream == "" && !s.StreamAt.IsZero()) {
		return switchboard.SessionInfo{}, false
	}
	info := switchboard.SessionInfo{ID: s.ID, User: s.Principal, State: switchboard.TabConnecting, CreatedAt: s.CreatedAt,
		LastSeen: s.SeenAt, ExpiresAt: s.SeenAt.Add(m.opts.Grace), Replica: s.Stream,
		Tools: make([]switchboard.Tool, 0, len(s.Tools)), Contexts: []switchboard.WorkspaceContext{}}
	for _, t := range s.Tools {
		t.Origin = &switchboard.Origin{Source: switchboard.SourceSession, SessionID: s.ID}
		info.Tools = append(info.Tools, t)
	}
	slices.SortFunc(info.Tools, func(a, b switchboard.Tool) int { return strings.Compare(a.Name, b.Name) })
	return info, true
}

// infoLocked describes a kept state. Caller holds m.mu.
func (m *Manager) infoLocked(st *state) switchboard.SessionInfo {
	info := switchboard.SessionInfo{ID: st.id, User: st.user, CreatedAt: st.createdAt,
		Tools: st.listLocked(), Contexts: []switchboard.WorkspaceContext{}}
	switch {
	case st.up:
		info.State, info.Connected, info.Replica = switchboard.TabConnected, true, m.opts.Replica
	case !st.isLive:
		info.State = switchboard.TabConnecting
	case st.waiting:
		info.State = switchboard.TabReconnecting
	default:
		info.State = switchboard.TabDisconnected
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	info.LastSeen, info.ExpiresAt = st.seen, st.expires
	if st.up {
		info.LastSeen = m.opts.Now()
	}
	for _, ev := range st.log {
		if ev.kind == KindRequest {
			info.Pending++
		}
	}
	return info
}

// Attached counts the tabs whose stream this replica holds or awaits
// back (connected or reconnecting): the metrics' open-tabs gauge, read
// at scrape time without a store read.
func (m *Manager) Attached() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, st := range m.sessions {
		if st.reachable() {
			n++
		}
	}
	return n
}
