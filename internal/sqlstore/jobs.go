package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Jobs and idempotency keys: the rest of the governance part of the store
// (see governance.go).

const jobCols = `id, invocation_id, run_id, tool, caller, status, progress, message, result, error,
	created_at, updated_at, finished_at, replica, user_name`

func scanJob(row Row) (switchboard.Job, error) {
	var (
		j       switchboard.Job
		status  string
		errJSON json.RawMessage
	)
	if err := row.Scan(&j.ID, &j.InvocationID, &j.RunID, &j.Tool, &j.Caller, &status, &j.Progress, &j.Message,
		scanJSON(&j.Result), scanJSON(&errJSON), scanTime(&j.CreatedAt), scanTime(&j.UpdatedAt), scanTime(&j.FinishedAt), &j.Replica, &j.User); err != nil {
		return j, err
	}
	j.Status = switchboard.JobStatus(status)
	var err error
	j.Error, err = decodeError(errJSON)
	return j, err
}

// JobCreate inserts a job; an existing ID is a CONFLICT.
func (s *Store) JobCreate(ctx context.Context, j switchboard.Job) error {
	const op = "job create"
	if j.ID == "" || j.Status == "" || j.CreatedAt.IsZero() {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, status and createdAt are required", op)
	}
	result, err := rawJSON("result", j.Result)
	if err != nil {
		return err
	}
	errJSON, err := encodeError(j.Error)
	if err != nil {
		return err
	}
	if j.UpdatedAt.IsZero() {
		j.UpdatedAt = j.CreatedAt
	}
	return s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO jobs (`+jobCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			j.ID, j.InvocationID, j.RunID, j.Tool, j.Caller, string(j.Status), j.Progress, j.Message, result, errJSON,
			s.time(j.CreatedAt), s.time(j.UpdatedAt), s.time(j.FinishedAt), j.Replica, j.User)
		return err
	})
}

// JobGet returns one job.
func (s *Store) JobGet(ctx context.Context, id string) (switchboard.Job, error) {
	return get(ctx, s, "job get", "job", id, scanJob, sqlSelectJob)
}

const sqlSelectJob = `SELECT ` + jobCols + ` FROM jobs WHERE id = ?`

// JobList returns matching jobs, newest first.
func (s *Store) JobList(ctx context.Context, f switchboard.JobFilter) ([]switchboard.Job, error) {
	where, args := []string{"1 = 1"}, []any{}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Caller != "" {
		where, args = append(where, "caller = ?"), append(args, f.Caller)
	}
	if f.User != "" {
		where, args = append(where, "user_name = ?"), append(args, f.User)
	}
	return list(ctx, s, "job list", `SELECT `+jobCols+` FROM jobs WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit(f.Limit)), scanJob)
}

// JobUpdate is a compare-and-swap on the job's status.
func (s *Store) JobUpdate(ctx context.Context, j switchboard.Job, from ...switchboard.JobStatus) (switchboard.Job, error) {
	const op = "job update"
	if len(from) == 0 || j.Status == "" {
		return switchboard.Job{}, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a status and at least one from-status are required", op)
	}
	result, err := rawJSON("result", j.Result)
	if err != nil {
		return switchboard.Job{}, err
	}
	errJSON, err := encodeError(j.Error)
	if err != nil {
		return switchboard.Job{}, err
	}
	args := []any{string(j.Status), j.Progress, j.Message, result, errJSON, s.time(s.stamp(j.UpdatedAt)), s.time(j.FinishedAt), j.ID}
	for _, st := range from {
		args = append(args, string(st))
	}
	var (
		stored   switchboard.Job
		conflict bool
	)
	err = s.db.Write(ctx, op, func(q Querier) error {
		var err error
		stored, conflict, err = swap(ctx, s, q, "job", j.ID, scanJob, `UPDATE jobs SET status = ?, progress = ?,
			message = ?, result = ?, error = ?, updated_at = ?, finished_at = ? WHERE id = ? AND status `+in(len(from))+`
			RETURNING `+jobCols, args, sqlSelectJob)
		return err
	})
	if err != nil {
		return switchboard.Job{}, err
	}
	if conflict {
		return stored, switchboard.Errorf(switchboard.CodeConflict, "%s: job %q is %s, not %v", op, j.ID, stored.Status, from)
	}
	return stored, nil
}

// JobFailRunning fails every running job of replicas (of every replica
// when none is named) with cause.
func (s *Store) JobFailRunning(ctx context.Context, at time.Time, cause *switchboard.Error, replicas ...string) (int, error) {
	const op = "job fail running"
	if cause == nil {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a cause is required", op)
	}
	errJSON, err := encodeError(cause)
	if err != nil {
		return 0, err
	}
	t := s.time(s.stamp(at))
	var n int64
	err = s.db.Write(ctx, op, func(q Querier) error {
		var err error
		query, args := `UPDATE jobs SET status = 'failed', error = ?, updated_at = ?, finished_at = ?
			WHERE status = 'running'`, []any{errJSON, t, t}
		if len(replicas) > 0 {
			query += ` AND replica ` + in(len(replicas))
			for _, r := range replicas {
				args = append(args, r)
			}
		}
		n, err = q.Exec(ctx, s.sql(query), args...)
		return err
	})
	return int(n), err
}

// IdempotencyClaim is one upsert that replaces only an expired record, so
// of two concurrent claims exactly one stores its record (the loser reads
// the record that won), and the winner's invocation is inserted in the
// same transaction.
func (s *Store) IdempotencyClaim(ctx context.Context, r switchboard.IdempotencyRecord, notBefore time.Time, inv switchboard.Invocation) (switchboard.IdempotencyRecord, bool, error) {
	const op = "idempotency claim"
	if r.Scope == "" || r.Key == "" || r.InvocationID == "" {
		return r, false, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: scope, key and invocation are required", op)
	}
	if inv.ID != r.InvocationID || inv.Status == "" {
		return r, false, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: the invocation must have the claim's id and a status", op)
	}
	args, err := s.invocationArgs(inv)
	if err != nil {
		return r, false, err
	}
	r.CreatedAt = normTime(s.stamp(r.CreatedAt))
	stored, claimed := r, false
	err = s.db.Tx(ctx, op, func(q Tx) error {
		stored, claimed = r, false
		var got string
		// An older key is replaced only once its call is terminal
		// (sqlKeySettled): a key never expires under a call in flight.
		claimArgs := append([]any{r.Scope, r.Key, r.Digest, r.InvocationID, s.time(r.CreatedAt), s.d.Time(normTime(notBefore))}, terminalStatuses...)
		err := q.QueryRow(ctx, s.sql(`INSERT INTO idempotency_keys AS k (scope, key, digest, invocation_id, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET digest = excluded.digest,
			invocation_id = excluded.invocation_id, created_at = excluded.created_at
			WHERE k.created_at < ? AND `+sqlKeySettled+` RETURNING invocation_id`),
			claimArgs...).Scan(&got)
		if err == nil {
			claimed = true
			_, err = q.Exec(ctx, s.sql(sqlInsertInvocation), args...)
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		stored = switchboard.IdempotencyRecord{Scope: r.Scope, Key: r.Key}
		return q.QueryRow(ctx, s.sql(sqlSelectIdempotency), r.Scope, r.Key).
			Scan(&stored.Digest, &stored.InvocationID, scanTime(&stored.CreatedAt))
	})
	if err != nil {
		return r, false, err
	}
	return stored, claimed, nil
}

const sqlSelectIdempotency = `SELECT digest, invocation_id, created_at FROM idempotency_keys WHERE scope = ? AND key = ?`

// IdempotencyGet returns the record of (scope, key) or NOT_FOUND.
func (s *Store) IdempotencyGet(ctx context.Context, scope, key string) (switchboard.IdempotencyRecord, error) {
	const op = "idempotency get"
	r := switchboard.IdempotencyRecord{Scope: scope, Key: key}
	err := s.read(ctx, op, func(q Reader) error {
		err := q.QueryRow(ctx, s.sql(sqlSelectIdempotency), scope, key).
			Scan(&r.Digest, &r.InvocationID, scanTime(&r.CreatedAt))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("idempotency key", key)
		}
		return err
	})
	return r, err
}

// IdempotencyRelease deletes a claim that still names invocationID.
func (s *Store) IdempotencyRelease(ctx context.Context, scope, key, invocationID string) error {
	return s.db.Write(ctx, "idempotency release", func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND invocation_id = ?`),
			scope, key, invocationID)
		return err
	})
}

// IdempotencyReleaseOrphans deletes every key whose invocation is missing.
func (s *Store) IdempotencyReleaseOrphans(ctx context.Context) (int, error) {
	var n int64
	err := s.db.Write(ctx, "idempotency release orphans", func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(`DELETE FROM idempotency_keys WHERE NOT EXISTS
			(SELECT 1 FROM invocations i WHERE i.id = idempotency_keys.invocation_id)`))
		return err
	})
	return int(n), err
}
