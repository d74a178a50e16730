package panel

import (
	"context"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// DefaultLeaseTTL is how long an agent's edit holds a panel instance when
// Options.LeaseTTL is not set. Each further edit by the holder renews it.
const DefaultLeaseTTL = 60 * time.Second

// Lease is an agent's hold on a panel instance: the agent that last
// filled, patched or ran an action on it holds it until ExpiresAt, and
// another agent's edit is refused with LEASE_HELD meanwhile. The user's
// own edits always win and end it.
type Lease struct {
	// AgentID is the holder: the acting agent session's id, or its
	// principal ("agent:planner") when the call named no agent session.
	AgentID string `json:"agentId"`
	// Principal is the holder's principal as the ledger names it.
	Principal string    `json:"principal"`
	Since     time.Time `json:"since"`
	ExpiresAt time.Time `json:"expiresAt"`
	// holder is who the lease belongs to (Options.Holder): the sessions of
	// one holder share it, and the newest of them is AgentID.
	holder string
}

// actor is who edits a panel instance.
type actor struct {
	id, principal string
	// holder is what a lease compares (Options.Holder of id; id itself
	// by default).
	holder string
	// user: a person (the tab, the user's token, an in-process caller with
	// no principal). Users never wait for a lease; their edits end it.
	user bool
}

// actorOf is the caller in ctx as a lease sees it: the agent session
// acting (switchboard.AgentSessionFrom), else the principal.
func actorOf(ctx context.Context) actor {
	p, ok := switchboard.PrincipalFrom(ctx)
	a := actor{principal: p.String()}
	if id, has := switchboard.AgentSessionFrom(ctx); has {
		a.id = id
		if !ok {
			a.principal = "agent-session:" + id
		}
		return a
	}
	if !ok || p.Kind != switchboard.PrincipalAgent {
		a.user = true
		if !ok {
			a.principal = "system"
		}
	}
	a.id = a.principal
	return a
}

// actor is actorOf with the holder its leases belong to: the built-in
// assistant's runs of one chat are one holder (Options.Holder), so the
// chat's next run is not refused by its own previous run's lease.
func (s *Service) actor(ctx context.Context) actor {
	a := actorOf(ctx)
	a.holder = a.id
	if _, has := switchboard.AgentSessionFrom(ctx); has && s.opts.Holder != nil {
		if h := s.opts.Holder(a.id); h != "" {
			a.holder = h
		}
	}
	return a
}

// leaseBook holds the leases of this process's panel instances, keyed by
// instance id. It is the one home of lease state, and deliberately small
// (take, drop, get) so that it can move into the store as a
// compare-and-swap row when instances are shared between replicas (issue
// 16); today instances live on the replica that holds their tab's stream,
// and so do their leases. Expired leases are dropped when read.
type leaseBook struct {
	ttl time.Duration
	now func() time.Time

	mu     sync.Mutex
	leases map[string]Lease
}

func newLeaseBook(ttl time.Duration, now func() time.Time) *leaseBook {
	return &leaseBook{ttl: ttl, now: now, leases: map[string]Lease{}}
}

// take gives a the lease on instance, or renews a's own. It fails with
// LEASE_HELD, naming the holder and the expiry, while another agent holds
// it. Users are never refused, and take no lease: their edit ends any.
func (b *leaseBook) take(instance string, a actor) (*Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if a.user {
		delete(b.leases, instance)
		return nil, nil
	}
	l, held := b.leases[instance]
	if held && now.Before(l.ExpiresAt) && l.holder != a.holder {
		return nil, leaseHeld(instance, l, now)
	}
	if !held || l.holder != a.holder || !now.Before(l.ExpiresAt) {
		l = Lease{Since: now, holder: a.holder}
	}
	l.AgentID, l.Principal = a.id, a.principal // the holder's newest session
	l.ExpiresAt = now.Add(b.ttl)
	b.leases[instance] = l
	return &l, nil
}

// check fails with LEASE_HELD when another agent holds instance, without
// taking it (closing a panel ends it whoever asks, so it takes nothing).
func (b *leaseBook) check(instance string, a actor) error {
	if a.user {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if l, held := b.leases[instance]; held && now.Before(l.ExpiresAt) && l.holder != a.holder {
		return leaseHeld(instance, l, now)
	}
	return nil
}

// drop ends the lease on instance, if any, and reports whether one was
// in force.
func (b *leaseBook) drop(instance string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, held := b.leases[instance]
	delete(b.leases, instance)
	return held && b.now().Before(l.ExpiresAt)
}

// release drops every lease agent session id holds (it ended) and
// returns the instances it held.
func (b *leaseBook) release(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for instance, l := range b.leases {
		if l.AgentID == id {
			delete(b.leases, instance)
			if b.now().Before(l.ExpiresAt) {
				out = append(out, instance)
			}
		}
	}
	return out
}

// ReleaseLeases ends the leases agent session id holds: the daemon calls
// it when the session ends (done, cancelled, interrupted), so a finished
// agent does not keep others off a panel until the lease runs out. The
// tabs showing those panels get the update (the lease badge goes away).
func (s *Service) ReleaseLeases(id string) int {
	released := s.leases.release(id)
	for _, iid := range released {
		s.mu.Lock()
		in := s.byID[iid]
		var sn Snapshot
		if in != nil {
			sn = in.snapshot()
		}
		s.mu.Unlock()
		if in != nil {
			_ = s.changed(in, EventUpdate, sn)
		}
	}
	return len(released)
}

// restore puts back a lease read from the store (a tab rebuilt here).
func (b *leaseBook) restore(instance string, l Lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.now().Before(l.ExpiresAt) {
		b.leases[instance] = l
	}
}

// get returns the lease in force on instance, or nil.
func (b *leaseBook) get(instance string) *Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, held := b.leases[instance]
	if !held {
		return nil
	}
	if !b.now().Before(l.ExpiresAt) {
		delete(b.leases, instance)
		return nil
	}
	return &l
}

func leaseHeld(instance string, l Lease, now time.Time) error {
	return switchboard.Errorf(switchboard.CodeLeaseHeld,
		"panel instance %s is being edited by agent %s (%s) until %s (in %s); wait for that, read it with panel.read_state, or ask the user — their edits always win",
		instance, l.AgentID, l.Principal, l.ExpiresAt.UTC().Format(time.RFC3339), l.ExpiresAt.Sub(now).Round(time.Second)).
		WithDetails(map[string]any{"instanceId": instance, "agentId": l.AgentID, "principal": l.Principal,
			"since": l.Since.UTC(), "expiresAt": l.ExpiresAt.UTC()})
}

// withLease adds the lease in force to a snapshot about to leave the
// service (pushed to the tab or returned to a caller).
func (s *Service) withLease(sn Snapshot) Snapshot {
	sn.Lease = s.leases.get(sn.InstanceID)
	return sn
}
