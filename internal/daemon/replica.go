package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/cluster"
)

// Several replicas on one store: each daemon registers itself as a
// replica (switchboard.Replica), records itself as the owner of the work
// it starts, and is watched by the others; package cluster (members.go)
// finds a dead replica and claims it, and the claimer resolves what the
// dead one owned (takeOver) the way a restart does its own previous
// start's work. See docs/deploy.md ("Several replicas").

// Defaults for ReplicaOptions.
const (
	DefaultReplicaHeartbeat = cluster.DefaultHeartbeat
	DefaultReplicaTimeout   = cluster.DefaultTimeout
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
	// Heartbeat is how often the replica beats (default
	// DefaultReplicaHeartbeat).
	Heartbeat time.Duration
	// Timeout is how long a replica's beats may stand still before a
	// survivor claims it (default DefaultReplicaTimeout). It must be well
	// above Heartbeat: a replica claimed while alive stops (Lost).
	Timeout time.Duration
	// NoLock keeps failure detection to heartbeats on Postgres (no
	// presence lock; cluster.Members), for a connection pooler that does
	// not keep sessions.
	NoLock bool
}

// initReplica names this start of the daemon; the broker, sessions and
// jobs stamp it on what they record.
func (d *Daemon) initReplica(opts Options) error {
	o := opts.Replicas
	m, err := cluster.NewMembers(cluster.MembersOptions{Store: opts.Store, Name: o.Name, Addr: o.Addr,
		Heartbeat: o.Heartbeat, Timeout: o.Timeout, NoLock: o.NoLock, Logger: d.log, TakeOver: d.takeOver})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.members = m
	return nil
}

// ReplicaID is this start's replica ID, the owner recorded on its work.
func (d *Daemon) ReplicaID() string { return d.members.Self() }

// Lost is closed when another replica found this one dead and took over
// its work: calls it still runs have been resolved, so it must stop
// (serve exits with an error for its supervisor to restart it).
func (d *Daemon) Lost() <-chan struct{} { return d.members.Lost() }

// takeOver resolves the work of replica id, claimed by this one, and of
// what it had claimed (owners): the start-up sweep's states, then the
// calls kept waiting for an approval become this replica's and resume
// here, its delegated tasks resume, and the tabs whose stream it held are
// announced down (session.Manager.ReplicaGone). The cluster package forgets the owners once it returns
// nil, and calls it again at its next round when it fails.
func (d *Daemon) takeOver(ctx context.Context, id string, owners map[string]bool) error {
	kept, err := d.sweep(ctx, d.store, owners)
	if err != nil {
		return err
	}
	for o := range owners {
		if _, err := d.store.InvocationAdopt(ctx, o, d.members.Self()); err != nil {
			return err
		}
	}
	d.resume(kept)
	if n, err := d.Tasks.Recover(ctx, owners); err != nil {
		d.log.Warn("could not resume another replica's delegated tasks", "replica", id, "err", err)
	} else if n > 0 {
		d.log.Info("resumed another replica's delegated tasks", "replica", id, "count", n)
	}
	for o := range owners {
		if o == "" {
			continue
		}
		if n, err := d.Sessions.ReplicaGone(ctx, o); err != nil {
			d.log.Warn("could not tell the other replicas about a dead replica's tabs; they lapse from presence", "replica", o, "err", err)
		} else if n > 0 {
			d.log.Info("told the other replicas a dead replica's tabs lost their stream", "replica", o, "count", n)
		}
	}
	return nil
}

// Release records that this replica stopped cleanly, so that survivors
// take over its calls awaiting approval at once instead of after the
// timeout, and ends its presence lock. Call it after Close, once the HTTP
// server has finished its requests (serve does, after graceful shutdown):
// until then the replica still owns the calls it answers.
func (d *Daemon) Release(ctx context.Context) error { return d.members.Release(ctx) }
