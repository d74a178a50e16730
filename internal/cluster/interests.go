package cluster

import (
	"sync"
	"time"
)

// Interests is, on the replica that owns some items (its calls, its
// runs), which other replicas asked to hear of which item: "tell replica
// R when X changes". An asker repeats its interest while it still cares,
// and one not repeated within TTL is dropped (the asker went away, or
// the item never changed again here). The owner sends to each replica in
// the set; a replica that asked for nothing hears nothing.
type Interests struct {
	TTL time.Duration

	mu     sync.Mutex
	by     map[string]map[string]time.Time // item -> replica -> last asked
	pruned time.Time
}

// Add records that replica asked about item at now; it reports whether
// the replica was not in the item's set (a first ask, not a renewal).
// Every TTL it also drops the interests not renewed since.
func (s *Interests) Add(item, replica string, now time.Time) (first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]map[string]time.Time{}
	}
	if now.Sub(s.pruned) > s.TTL {
		s.pruned = now
		for it, rs := range s.by {
			for r, at := range rs {
				if now.Sub(at) > s.TTL {
					delete(rs, r)
				}
			}
			if len(rs) == 0 {
				delete(s.by, it)
			}
		}
	}
	if s.by[item] == nil {
		s.by[item] = map[string]time.Time{}
	}
	at, had := s.by[item][replica]
	s.by[item][replica] = now
	// One past the TTL was no longer listed: answered as a first.
	return !had || now.Sub(at) > s.TTL
}

// List returns the replicas that asked about item within TTL of now; take
// also forgets them (the item's last change was sent). One not renewed is
// left out even before a prune drops it: an item that changes often (a
// run's flushes) would otherwise be sent to an asker gone quiet until it
// ends.
func (s *Interests) List(item string, take bool, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.by[item]
	if take {
		delete(s.by, item)
	}
	out := make([]string, 0, len(rs))
	for r, at := range rs {
		if now.Sub(at) <= s.TTL {
			out = append(out, r)
		}
	}
	return out
}
