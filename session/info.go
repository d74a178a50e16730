package session

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// List describes the sessions whose tabs this process keeps (connected,
// reconnecting, or within their keep window), newest first. Sessions that
// are open in the store but have no tab here are not listed (Info shows
// one by id); with several replicas each lists its own tabs.
func (m *Manager) List() []switchboard.SessionInfo {
	m.mu.Lock()
	out := make([]switchboard.SessionInfo, 0, len(m.sessions))
	for _, st := range m.sessions {
		if !st.ended {
			out = append(out, m.infoLocked(st))
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b switchboard.SessionInfo) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out
}

// Info describes session id: as List does when this process keeps its tab,
// else from the store as gone (open, no tab here) or closed. NOT_FOUND for
// an id never opened.
func (m *Manager) Info(ctx context.Context, id string) (switchboard.SessionInfo, error) {
	m.mu.Lock()
	if st := m.sessions[id]; st != nil && !st.ended {
		info := m.infoLocked(st)
		m.mu.Unlock()
		return info, nil
	}
	m.mu.Unlock()
	s, err := m.store.SessionGet(ctx, id)
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return switchboard.SessionInfo{}, switchboard.Errorf(switchboard.CodeNotFound, "no session %q; `switchboard sessions list` shows the open tabs", id)
		}
		return switchboard.SessionInfo{}, err
	}
	info := switchboard.SessionInfo{ID: s.ID, User: s.Principal, State: switchboard.TabGone, CreatedAt: s.CreatedAt,
		ClosedAt: s.ClosedAt, Tools: []switchboard.Tool{}, Contexts: []switchboard.WorkspaceContext{}}
	if !s.ClosedAt.IsZero() {
		info.State = switchboard.TabClosed
	}
	return info, nil
}

// infoLocked describes a kept state. Caller holds m.mu.
func (m *Manager) infoLocked(st *state) switchboard.SessionInfo {
	info := switchboard.SessionInfo{ID: st.id, User: st.user, CreatedAt: st.createdAt,
		Tools: st.listLocked(), Contexts: []switchboard.WorkspaceContext{}}
	switch {
	case st.up:
		info.State, info.Connected = switchboard.TabConnected, true
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
