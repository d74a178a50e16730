package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Jobs, idempotency keys and the ledger head: the rest of the governance
// part of the store (see governance.go).

const jobCols = `id, invocation_id, run_id, tool, caller, status, progress, message, result, error,
	created_at, updated_at, finished_at`

func scanJob(row interface{ Scan(...any) error }) (switchboard.Job, error) {
	var (
		j                          switchboard.Job
		status                     string
		result, errJSON            sql.NullString
		created, updated, finished sql.NullInt64
	)
	if err := row.Scan(&j.ID, &j.InvocationID, &j.RunID, &j.Tool, &j.Caller, &status, &j.Progress, &j.Message,
		&result, &errJSON, &created, &updated, &finished); err != nil {
		return j, err
	}
	j.Status, j.Result = switchboard.JobStatus(status), fromRawJSON(result)
	j.CreatedAt, j.UpdatedAt, j.FinishedAt = fromMicros(created), fromMicros(updated), fromMicros(finished)
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
	return s.write(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO jobs (`+jobCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.ID, j.InvocationID, j.RunID, j.Tool, j.Caller, string(j.Status), j.Progress, j.Message, result, errJSON,
			micros(j.CreatedAt), micros(j.UpdatedAt), micros(j.FinishedAt))
		return err
	})
}

// JobGet returns one job.
func (s *Store) JobGet(ctx context.Context, id string) (switchboard.Job, error) {
	const op = "job get"
	if err := s.check(op); err != nil {
		return switchboard.Job{}, err
	}
	j, err := scanJob(s.r.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return j, switchboard.Errorf(switchboard.CodeNotFound, "%s: no job %q", op, id)
	}
	return j, translate(ctx, op, err)
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
	if j.UpdatedAt.IsZero() {
		j.UpdatedAt = s.now()
	}
	args := []any{string(j.Status), j.Progress, j.Message, result, errJSON, micros(j.UpdatedAt), micros(j.FinishedAt), j.ID}
	for _, st := range from {
		args = append(args, string(st))
	}
	var (
		stored   switchboard.Job
		conflict bool
	)
	err = s.write(ctx, op, func(tx *sql.Tx) error {
		var err error
		stored, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET status = ?, progress = ?, message = ?, result = ?,
			error = ?, updated_at = ?, finished_at = ? WHERE id = ? AND status IN (?`+strings.Repeat(", ?", len(from)-1)+`)
			RETURNING `+jobCols, args...))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		stored, err = scanJob(tx.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`, j.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return switchboard.Errorf(switchboard.CodeNotFound, "%s: no job %q", op, j.ID)
		}
		conflict = err == nil
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

// JobFailRunning fails every running job with cause.
func (s *Store) JobFailRunning(ctx context.Context, at time.Time, cause *switchboard.Error) (int, error) {
	const op = "job fail running"
	if cause == nil {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a cause is required", op)
	}
	if at.IsZero() {
		at = s.now()
	}
	errJSON, err := encodeError(cause)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'failed', error = ?, updated_at = ?, finished_at = ?
			WHERE status = 'running'`, errJSON, at.UnixMicro(), at.UnixMicro())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// IdempotencyClaim inserts r or returns the live record for its key.
func (s *Store) IdempotencyClaim(ctx context.Context, r switchboard.IdempotencyRecord, notBefore time.Time) (switchboard.IdempotencyRecord, bool, error) {
	const op = "idempotency claim"
	if r.Scope == "" || r.Key == "" || r.InvocationID == "" {
		return r, false, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: scope, key and invocation are required", op)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now()
	}
	r.CreatedAt = normTime(r.CreatedAt)
	var (
		stored  switchboard.IdempotencyRecord
		claimed bool
	)
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT digest, invocation_id, created_at FROM idempotency_keys WHERE scope = ? AND key = ?`,
			r.Scope, r.Key).Scan(&stored.Digest, &stored.InvocationID, &created)
		switch {
		case err == nil && created >= notBefore.UnixMicro():
			stored.Scope, stored.Key, stored.CreatedAt = r.Scope, r.Key, time.UnixMicro(created).UTC()
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys (scope, key, digest, invocation_id, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET digest = excluded.digest,
			invocation_id = excluded.invocation_id, created_at = excluded.created_at`,
			r.Scope, r.Key, r.Digest, r.InvocationID, r.CreatedAt.UnixMicro())
		stored, claimed = r, err == nil
		return err
	})
	return stored, claimed, err
}

// IdempotencyRelease deletes a claim that still names invocationID.
func (s *Store) IdempotencyRelease(ctx context.Context, scope, key, invocationID string) error {
	return s.write(ctx, "idempotency release", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND invocation_id = ?`, scope, key, invocationID)
		return err
	})
}

// ActivityHead returns the last entry's ID.
func (s *Store) ActivityHead(ctx context.Context) (int64, error) {
	const op = "activity head"
	if err := s.check(op); err != nil {
		return 0, err
	}
	var id int64
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM activity`).Scan(&id)
	return id, translate(ctx, op, err)
}
