package session

import "context"

// Broadcast queues an application event (see Send) on every tab attached
// to this process and returns how many got it: how approval.request and
// approval.resolved reach the user's open tabs, whichever page they show.
// With several replicas each replica broadcasts to its own tabs (the
// caller publishes the event on the bus to all of them).
func (m *Manager) Broadcast(ctx context.Context, kind string, data []byte) int {
	m.mu.Lock()
	ids := make([]string, 0, len(m.sessions))
	for id, st := range m.sessions {
		if st.live() {
			ids = append(ids, id)
		}
	}
	m.mu.Unlock()
	n := 0
	for _, id := range ids {
		if m.Send(ctx, id, kind, data) == nil {
			n++
		}
	}
	return n
}
