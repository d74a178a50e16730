package session

import (
	"slices"
	"strings"
	"sync"

	"github.com/switchboardhq/switchboard"
)

// toolWatch fans a "live tools changed" signal out to subscribers (the MCP
// server sends list_changed on it). Signals never block: a subscriber whose
// channel is full already has a pending signal.
type toolWatch struct {
	mu   sync.Mutex
	subs map[chan<- struct{}]struct{}
}

func (w *toolWatch) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// LiveTools returns every browser tool advertised by a tab with a connected
// stream, on this process or announced by another replica (presence.go);
// a tab whose stream dropped is not offered. Each names its tab in
// Origin.SessionID; sorted by name then session.
func (m *Manager) LiveTools() []switchboard.Tool {
	m.mu.Lock()
	var out []switchboard.Tool
	for _, st := range m.sessions {
		if st.connected() {
			out = append(out, st.listLocked()...)
		}
	}
	out = append(out, m.remoteLiveLocked()...)
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b switchboard.Tool) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Origin.SessionID, b.Origin.SessionID)
	})
	return out
}

// LiveTool returns a browser tool of that name as one tab LiveTools
// lists advertises it, found by name rather than by listing them all: the
// call metrics look up every browser call's tool, on the appender's
// goroutine.
func (m *Manager) LiveTool(name string) (switchboard.Tool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.byTool[name] {
		if lt := st.tools[name]; lt != nil && st.connected() {
			return st.withOrigin(lt), true
		}
	}
	for id := range m.remote {
		if rt := m.remoteLocked(id); rt != nil && rt.up {
			if lt := rt.tools[name]; lt != nil {
				return remoteTarget(id, lt).Tool, true
			}
		}
	}
	return switchboard.Tool{}, false
}

// SubscribeTools signals ch whenever the set of live tools may have changed:
// a tab advertised, connected, went away or was closed. cancel stops it.
func (m *Manager) SubscribeTools(ch chan<- struct{}) (cancel func()) {
	m.watch.mu.Lock()
	if m.watch.subs == nil {
		m.watch.subs = map[chan<- struct{}]struct{}{}
	}
	m.watch.subs[ch] = struct{}{}
	m.watch.mu.Unlock()
	return func() {
		m.watch.mu.Lock()
		delete(m.watch.subs, ch)
		m.watch.mu.Unlock()
	}
}

// LiveIDs lists the sessions this process keeps: with a connected stream
// or within their keep window, so an event sent to them is delivered when
// the stream resumes (for events addressed to a user's tabs).
func (m *Manager) LiveIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, st := range m.sessions {
		if st.kept() {
			out = append(out, id)
		}
	}
	return out
}
