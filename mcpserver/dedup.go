package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/broker"
)

// Bounds of the idempotency table.
const (
	dedupTTL = time.Hour
	dedupMax = 10000
)

// dedup makes a re-sent call with the same idempotency key run once. A
// client re-sends when its stream dropped mid-call (under the 2026-07-28
// revision it must, under a new JSON-RPC id), so the JSON-RPC id cannot
// tell a retry from a new call; the caller's own key can. A retry that
// arrives while the first call runs waits for it; one that arrives after
// gets the stored outcome; one with the same key but another tool or other
// arguments is IDEMPOTENCY_CONFLICT and runs nothing.
//
// The table lives in this process: on several replicas a retry must reach
// the replica holding its session, which MCP's session routing ensures.
type dedup struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*dedupEntry
	order   []string // insertion order, for expiry and the size bound
}

type dedupEntry struct {
	digest string
	at     time.Time
	done   chan struct{}
	inv    switchboard.Invocation
	err    error
}

func newDedup(now func() time.Time) *dedup {
	return &dedup{now: now, entries: map[string]*dedupEntry{}}
}

// do runs call once per key and digest.
func (d *dedup) do(ctx context.Context, key, digest string, call func() (switchboard.Invocation, error)) (switchboard.Invocation, error) {
	d.mu.Lock()
	d.expireLocked()
	e, found := d.entries[key]
	if !found {
		e = &dedupEntry{digest: digest, at: d.now(), done: make(chan struct{})}
		d.entries[key] = e
		d.order = append(d.order, key)
	}
	d.mu.Unlock()
	if found {
		if e.digest != digest {
			return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeIdempotencyConflict,
				"idempotency key %q was used for a different call (another tool or other arguments); use a new key", key[keyStart(key):])
		}
		select {
		case <-e.done:
			return e.inv, e.err
		case <-ctx.Done():
			return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeCancelled, "cancelled while waiting for the first call with this idempotency key")
		}
	}
	e.inv, e.err = call()
	close(e.done)
	return e.inv, e.err
}

// expireLocked drops entries past their TTL and beyond the size bound
// (oldest first). Entries still running are kept: their waiters need them.
func (d *dedup) expireLocked() {
	cutoff := d.now().Add(-dedupTTL)
	i := 0
	for ; i < len(d.order); i++ {
		e := d.entries[d.order[i]]
		if e == nil {
			continue
		}
		old := e.at.Before(cutoff) || len(d.order)-i > dedupMax
		if !old || !closed(e.done) {
			break
		}
		delete(d.entries, d.order[i])
	}
	d.order = d.order[i:]
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// keyStart skips the principal prefix of a table key in messages.
func keyStart(key string) int {
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return i + 1
		}
	}
	return 0
}

// digest fingerprints what a call does: tool, arguments and target tab.
func digest(cr broker.CallRequest) string {
	h := sha256.New()
	h.Write([]byte(cr.Tool + "\x00" + cr.SessionID + "\x00"))
	h.Write(cr.Input) // marshaled from a map: top-level keys sorted, compact
	return hex.EncodeToString(h.Sum(nil)[:16])
}
