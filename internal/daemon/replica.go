package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Several replicas on one store: each daemon registers itself as a
// replica (switchboard.Replica), records itself as the owner of the work
// it starts, and heartbeats. The start-up sweep (sweep.go) resolves only
// its own previous start's work and that of replicas known to be gone;
// while it runs, a replica watches the others and, when one stops
// heartbeating for ReplicaOptions.Timeout, claims it (a compare-and-swap
// only one survivor wins) and resolves what it owned the same way. See
// docs/deploy.md ("Several replicas").

// Defaults for ReplicaOptions.
const (
	DefaultReplicaHeartbeat = 5 * time.Second
	DefaultReplicaTimeout   = 30 * time.Second
)

// ReplicaOptions tune the replica registry. The zero value means the
// defaults.
type ReplicaOptions struct {
	// Name is stable across restarts of one process (serve: the host name
	// and listen address, or --replica-name): a start claims the previous
	// starts of its name at once, so a single daemon's restart resolves
	// what it left in flight as it always did. Two live processes must not
	// share a name. Default: the host name.
	Name string
	// Addr is shown to operators (the listen address).
	Addr string
	// Heartbeat is how often the replica beats and looks at the others
	// (default DefaultReplicaHeartbeat).
	Heartbeat time.Duration
	// Timeout is how long a replica's beats may stand still before a
	// survivor claims it (default DefaultReplicaTimeout). It must be well
	// above Heartbeat: a replica claimed while alive stops (Lost).
	Timeout time.Duration
}

// replicaState is the daemon's registration and its watch loop.
type replicaState struct {
	id   string
	opts ReplicaOptions
	st   switchboard.Store
	// lost is closed when a survivor claimed this replica while it ran
	// (its heartbeat lapsed past the timeout): its calls were resolved.
	lost     chan struct{}
	lostOnce sync.Once
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// initReplica names this start of the daemon; the broker, sessions and
// jobs stamp it on what they record.
func (d *Daemon) initReplica(opts Options) error {
	o := opts.Replicas
	if o.Name == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		o.Name = host
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultReplicaHeartbeat
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultReplicaTimeout
	}
	if o.Timeout < 2*o.Heartbeat {
		return fmt.Errorf("daemon: the replica timeout (%s) must be at least twice the heartbeat (%s)", o.Timeout, o.Heartbeat)
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	d.replica = replicaState{id: "rep_" + hex.EncodeToString(b), opts: o, st: opts.Store, lost: make(chan struct{})}
	return nil
}

// ReplicaID is this start's replica ID, the owner recorded on its work.
func (d *Daemon) ReplicaID() string { return d.replica.id }

// Lost is closed when another replica found this one's heartbeat stale
// and took over its work: calls it still runs have been resolved, so it
// must stop (serve exits with an error for its supervisor to restart it).
func (d *Daemon) Lost() <-chan struct{} { return d.replica.lost }

// registerReplica records this start and claims the replicas whose work
// it resolves at once: earlier starts of its name, and replicas that
// stopped cleanly. It returns the owners for the start-up sweep: those,
// what they had claimed and not finished, and "" (work recorded before
// replicas were, by a single daemon).
func (d *Daemon) registerReplica(ctx context.Context) (map[string]bool, error) {
	r := &d.replica
	host, _ := os.Hostname()
	now := time.Now()
	if err := r.st.ReplicaRegister(ctx, switchboard.Replica{ID: r.id, Name: r.opts.Name, Addr: r.opts.Addr, Host: host,
		StartedAt: now, HeartbeatAt: now, TimeoutMs: r.opts.Timeout.Milliseconds()}); err != nil {
		return nil, fmt.Errorf("register replica: %w", err)
	}
	list, err := r.st.ReplicaList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	owners := map[string]bool{"": true}
	for _, o := range list {
		switch {
		case o.ID == r.id:
		case o.ClaimedBy == "" && (o.Name == r.opts.Name || !o.StoppedAt.IsZero()):
			if _, err := r.st.ReplicaClaim(ctx, o.ID, r.id, o.Beats, now); err != nil {
				if switchboard.CodeOf(err) == switchboard.CodeConflict {
					continue // it beat since (a live namesake) or a survivor took it
				}
				return nil, fmt.Errorf("claim replica %s: %w", o.ID, err)
			}
			for id := range claimedBy(list, o.ID) {
				owners[id] = true
			}
		}
	}
	return owners, nil
}

// claimedBy is id and every replica it claimed (and they claimed, ...)
// whose row is still there: claims whose sweep did not finish.
func claimedBy(list []switchboard.Replica, id string) map[string]bool {
	out := map[string]bool{id: true}
	for grew := true; grew; {
		grew = false
		for _, o := range list {
			if o.ClaimedBy != "" && out[o.ClaimedBy] && !out[o.ID] {
				out[o.ID], grew = true, true
			}
		}
	}
	return out
}

// forget deletes the rows of replicas whose work is resolved.
func (d *Daemon) forget(ctx context.Context, owners map[string]bool) {
	for id := range owners {
		if id == "" || id == d.replica.id {
			continue
		}
		if err := d.replica.st.ReplicaDelete(ctx, id); err != nil && switchboard.CodeOf(err) != switchboard.CodeNotFound {
			d.log.Warn("could not forget a resolved replica; it is resolved again later", "replica", id, "err", err)
		}
	}
}

// startReplicaWatch beats and watches the other replicas until Close.
func (d *Daemon) startReplicaWatch() {
	r := &d.replica
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	r.wg.Go(func() {
		tick := time.NewTicker(r.opts.Heartbeat)
		defer tick.Stop()
		seen := map[string]observed{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !d.beat(ctx, seen) {
				return
			}
		}
	})
}

// observed is the last beat count seen of a replica and when (this
// process's clock) it was first seen at that count: staleness is judged
// on one clock, so replicas' clocks need not agree.
type observed struct {
	beats int64
	since time.Time
}

// beat heartbeats, then claims and resolves any replica that stopped or
// whose beats stood still past the timeout. It reports false when this
// replica was itself claimed.
func (d *Daemon) beat(ctx context.Context, seen map[string]observed) bool {
	r := &d.replica
	now := time.Now()
	if _, err := r.st.ReplicaHeartbeat(ctx, r.id, now); err != nil {
		if ctx.Err() != nil {
			return false
		}
		if c := switchboard.CodeOf(err); c == switchboard.CodeConflict || c == switchboard.CodeNotFound {
			d.log.Error("another replica found this one's heartbeat stale and resolved its calls; stopping", "replica", r.id, "err", err)
			r.lostOnce.Do(func() { close(r.lost) })
			return false
		}
		d.log.Warn("replica heartbeat failed", "replica", r.id, "err", err)
		return true
	}
	list, err := r.st.ReplicaList(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("could not list replicas", "err", err)
		}
		return true
	}
	live := map[string]bool{}
	for _, o := range list {
		live[o.ID] = true
		if o.ID == r.id {
			continue
		}
		switch {
		case o.ClaimedBy == r.id: // claimed earlier; its sweep did not finish
			d.takeOver(ctx, list, o.ID)
		case o.ClaimedBy != "":
		case !o.StoppedAt.IsZero():
			d.claim(ctx, list, o, now)
		default:
			ob, ok := seen[o.ID]
			if !ok || ob.beats != o.Beats {
				seen[o.ID] = observed{o.Beats, now}
				continue
			}
			// The longer of the two timeouts: a replica configured
			// to beat less often than this one is not taken for dead.
			if now.Sub(ob.since) >= max(r.opts.Timeout, time.Duration(o.TimeoutMs)*time.Millisecond) {
				d.claim(ctx, list, o, now)
			}
		}
	}
	for id := range seen {
		if !live[id] {
			delete(seen, id)
		}
	}
	return true
}

// claim takes over replica o if no other survivor (and no late beat of
// its own) got there first.
func (d *Daemon) claim(ctx context.Context, list []switchboard.Replica, o switchboard.Replica, now time.Time) {
	if _, err := d.replica.st.ReplicaClaim(ctx, o.ID, d.replica.id, o.Beats, now); err != nil {
		if switchboard.CodeOf(err) != switchboard.CodeConflict && ctx.Err() == nil {
			d.log.Warn("could not claim a stale replica", "replica", o.ID, "err", err)
		}
		return
	}
	reason := "its heartbeat stopped"
	if !o.StoppedAt.IsZero() {
		reason = "it stopped"
	}
	d.log.Warn("taking over the calls of another replica: "+reason, "replica", o.ID, "name", o.Name, "lastHeartbeat", o.HeartbeatAt)
	d.takeOver(ctx, list, o.ID)
}

// takeOver resolves the work of replica id (claimed by this one) and of
// what it had claimed: the start-up sweep's states, then the calls kept
// waiting for an approval become this replica's, and resume here.
func (d *Daemon) takeOver(ctx context.Context, list []switchboard.Replica, id string) {
	owners := claimedBy(list, id)
	kept, err := d.sweep(ctx, d.replica.st, owners)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("resolving another replica's calls failed; retrying at the next heartbeat", "replica", id, "err", err)
		}
		return
	}
	for o := range owners {
		if _, err := d.replica.st.InvocationAdopt(ctx, o, d.replica.id); err != nil {
			d.log.Warn("could not take over calls awaiting approval; retrying at the next heartbeat", "replica", o, "err", err)
			return
		}
	}
	d.resume(kept)
	if n, err := d.Tasks.Recover(ctx, owners); err != nil {
		d.log.Warn("could not resume another replica's delegated tasks", "replica", id, "err", err)
	} else if n > 0 {
		d.log.Info("resumed another replica's delegated tasks", "replica", id, "count", n)
	}
	d.forget(ctx, owners)
}

// stopReplicaWatch ends the heartbeat (Close).
func (d *Daemon) stopReplicaWatch() {
	if d.replica.stop != nil {
		d.replica.stop()
	}
	d.replica.wg.Wait()
}

// Release records that this replica stopped cleanly, so that survivors
// take over its calls awaiting approval at once instead of after the
// timeout. Call it after Close, once the HTTP server has finished its
// requests (serve does, after graceful shutdown): until then the replica
// still owns the calls it answers.
func (d *Daemon) Release(ctx context.Context) error {
	select {
	case <-d.replica.lost:
		return nil // claimed already
	default:
	}
	return d.replica.st.ReplicaStop(ctx, d.replica.id, time.Now())
}
