package switchboard

import "time"

// Replica is one `switchboard serve` process (one start of one) registered
// in the store: several replicas share one Postgres, and each owns the
// work it started — invocations, jobs, tab sessions record its ID. A
// replica heartbeats; when it stops (or is found stale by a survivor), a
// survivor claims it (Store.ReplicaClaim, a compare-and-swap only one
// replica wins) and resolves what it owned, as a restart does for one
// daemon. See docs/deploy.md ("Several replicas").
type Replica struct {
	// ID names this start of the process; work records it as its owner.
	ID string `json:"replicaId"`
	// Name is stable across restarts of the same process (serve's
	// --replica-name; by default host name and listen address), so a
	// restarted replica resolves its previous start's work at once.
	Name string `json:"name"`
	Addr string `json:"addr,omitempty"`
	Host string `json:"host,omitempty"`
	// Beats counts heartbeats; a claim compares it, so a replica that
	// beat after the claimer last looked is never claimed.
	Beats       int64     `json:"beats"`
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
	// StoppedAt is set when the replica shut down cleanly: survivors claim
	// it without waiting for its heartbeat to lapse.
	StoppedAt time.Time `json:"stoppedAt,omitzero"`
	// ClaimedBy is the replica that took over this one's work ("" while
	// nobody has); a claimed replica's heartbeat is refused.
	ClaimedBy string    `json:"claimedBy,omitempty"`
	ClaimedAt time.Time `json:"claimedAt,omitzero"`
	// TimeoutMs is the replica's own timeout (ReplicaOptions.Timeout): a
	// survivor waits at least this long after its last beat, whatever its
	// own setting, so replicas configured with different heartbeats never
	// take over one that is alive. 0: recorded before replicas said.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// PresenceLock: the replica holds a presence lock for as long as its
	// process's connection to the store lives (Postgres; see
	// internal/cluster/members.go), so survivors take a free lock for its
	// death. False: it is judged by its heartbeat alone.
	PresenceLock bool `json:"presenceLock,omitempty"`
}
