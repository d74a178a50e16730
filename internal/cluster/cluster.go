// Package cluster is what makes several replicas on one store one system.
// A subsystem that owns work on one replica (a panel's working copy, an
// agent session, a chat's follow-ups, a job) records its owner in the
// store and reaches it through this package. Two paths are their own,
// addressed rather than asked, as no answer is awaited: a browser call's
// dispatch and end (internal/session, internal/broker: the answer comes
// from whichever replica the tab reaches) and run flush notices (the
// holder sends them to the replicas that asked, internal/agent,
// interest.go). docs/architecture.md ("Several replicas: who owns what")
// lists every kind of live work.
//
//   - Liveness: which replicas are alive, and a signal the moment one is
//     known gone (members.go: Members registers this replica, watches the
//     others and claims the dead; on Postgres a presence lock finds a
//     killed process within 1–2 s, the heartbeat timeout is the
//     fallback), so that a dead replica's work is resolved in seconds
//     rather than after a tool's timeout. On Postgres the claimer first
//     cuts the claimed replica off (Fencer): its sessions end and it
//     opens none again, so one that was only paused writes nothing more.
//   - Ask: send a request to the replica that owns something and wait for
//     its answer (ask.go); it fails fast when the owner is gone.
//   - Interests: on an owner, which replicas asked to hear of which of its
//     items (interests.go), so that a call's end and a run's flushes go to
//     those replicas only.
//
// The store stays the truth: who owns what is recorded there, and the bus
// (internal/bus) only carries hints and requests.
package cluster

// Liveness says which replicas are alive.
type Liveness interface {
	// Self is this replica's id.
	Self() string
	// Gone returns a channel that is closed once replica id is known to
	// be gone (it stopped, died, was claimed by a survivor, or is not
	// registered at all). It never closes for Self while this replica
	// runs.
	Gone(id string) <-chan struct{}
}
