package sqlstore

import (
	"context"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Replicas: the registry of serve processes sharing the store and the
// compare-and-swap by which a survivor takes over a dead one's work
// (internal/daemon/replica.go).

const replicaCols = `id, name, addr, host, beats, started_at, heartbeat_at, stopped_at, claimed_by, claimed_at, timeout_ms, presence_lock`

const sqlSelectReplica = `SELECT ` + replicaCols + ` FROM replicas WHERE id = ?`

func scanReplica(row Row) (switchboard.Replica, error) {
	var r switchboard.Replica
	var lock int64
	err := row.Scan(&r.ID, &r.Name, &r.Addr, &r.Host, &r.Beats, scanTime(&r.StartedAt), scanTime(&r.HeartbeatAt),
		scanTime(&r.StoppedAt), &r.ClaimedBy, scanTime(&r.ClaimedAt), &r.TimeoutMs, &lock)
	r.PresenceLock = lock != 0
	return r, err
}

// ReplicaRegister inserts r; an existing ID is a CONFLICT.
func (s *Store) ReplicaRegister(ctx context.Context, r switchboard.Replica) error {
	const op = "replica register"
	if err := s.check(op); err != nil {
		return err
	}
	if r.ID == "" || r.Name == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id and name are required", op)
	}
	started := s.stamp(r.StartedAt)
	beat := r.HeartbeatAt
	if beat.IsZero() {
		beat = started
	}
	err := s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO replicas (`+replicaCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			r.ID, r.Name, r.Addr, r.Host, r.Beats, s.time(started), s.time(beat), s.time(r.StoppedAt), r.ClaimedBy, s.time(r.ClaimedAt), max(r.TimeoutMs, 0), presenceLock(r.PresenceLock))
		return err
	})
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		return switchboard.Errorf(switchboard.CodeConflict, "%s: replica %q already exists", op, r.ID)
	}
	return err
}

// ReplicaHeartbeat counts one beat unless the replica was claimed.
func (s *Store) ReplicaHeartbeat(ctx context.Context, id string, at time.Time) (switchboard.Replica, error) {
	const op = "replica heartbeat"
	var (
		stored   switchboard.Replica
		conflict bool
	)
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		stored, conflict, err = swap(ctx, s, q, "replica", id, scanReplica,
			`UPDATE replicas SET beats = beats + 1, heartbeat_at = ? WHERE id = ? AND claimed_by = '' RETURNING `+replicaCols,
			[]any{s.time(s.stamp(at)), id}, sqlSelectReplica)
		return err
	})
	if err == nil && conflict {
		err = switchboard.Errorf(switchboard.CodeConflict, "%s: replica %q was claimed by %q, which resolved its work", op, id, stored.ClaimedBy)
	}
	return stored, err
}

// ReplicaStop stamps the clean shutdown of a replica.
func (s *Store) ReplicaStop(ctx context.Context, id string, at time.Time) error {
	const op = "replica stop"
	if err := s.check(op); err != nil {
		return err
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(`UPDATE replicas SET stopped_at = ? WHERE id = ?`), s.time(s.stamp(at)), id)
		return err
	})
	if err == nil && n == 0 {
		err = notFound("replica", id)
	}
	return err
}

// ReplicaList returns every replica, oldest start first.
func (s *Store) ReplicaList(ctx context.Context) ([]switchboard.Replica, error) {
	return list(ctx, s, "replica list", `SELECT `+replicaCols+` FROM replicas ORDER BY started_at, id`, nil, scanReplica)
}

// ReplicaClaim takes over an unclaimed replica whose beats have not moved.
func (s *Store) ReplicaClaim(ctx context.Context, id, by string, beats int64, at time.Time) (switchboard.Replica, error) {
	const op = "replica claim"
	if by == "" {
		return switchboard.Replica{}, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: the claiming replica is required", op)
	}
	var (
		stored   switchboard.Replica
		conflict bool
	)
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		stored, conflict, err = swap(ctx, s, q, "replica", id, scanReplica,
			`UPDATE replicas SET claimed_by = ?, claimed_at = ? WHERE id = ? AND claimed_by = '' AND beats = ? RETURNING `+replicaCols,
			[]any{by, s.time(s.stamp(at)), id, beats}, sqlSelectReplica)
		return err
	})
	if err == nil && conflict {
		err = switchboard.Errorf(switchboard.CodeConflict, "%s: replica %q is claimed by %q or beat since (beats %d, not %d)",
			op, id, stored.ClaimedBy, stored.Beats, beats)
	}
	return stored, err
}

// ReplicaDelete forgets a replica.
func (s *Store) ReplicaDelete(ctx context.Context, id string) error {
	const op = "replica delete"
	if err := s.check(op); err != nil {
		return err
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(`DELETE FROM replicas WHERE id = ?`), id)
		return err
	})
	if err == nil && n == 0 {
		err = notFound("replica", id)
	}
	return err
}

// presenceLock is Replica.PresenceLock as stored: 1 or 0.
func presenceLock(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
