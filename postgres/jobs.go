package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

// Jobs, idempotency keys and the ledger head: the rest of the governance
// part of the store (see governance.go).

const jobCols = `id, invocation_id, run_id, tool, caller, status, progress, message, result, error,
	created_at, updated_at, finished_at`

func scanJob(row pgx.Row) (switchboard.Job, error) {
	var (
		j                          switchboard.Job
		status                     string
		result, errJSON            []byte
		created, updated, finished *time.Time
	)
	if err := row.Scan(&j.ID, &j.InvocationID, &j.RunID, &j.Tool, &j.Caller, &status, &j.Progress, &j.Message,
		&result, &errJSON, &created, &updated, &finished); err != nil {
		return j, err
	}
	j.Status, j.Result = switchboard.JobStatus(status), fromRawJSON(result)
	j.CreatedAt, j.UpdatedAt, j.FinishedAt = fromStamp(created), fromStamp(updated), fromStamp(finished)
	var err error
	j.Error, err = decodeError(errJSON)
	return j, err
}

// JobCreate inserts a job; an existing ID is a CONFLICT.
func (s *Store) JobCreate(ctx context.Context, j switchboard.Job) error {
	const op = "job create"
	if err := s.check(op); err != nil {
		return err
	}
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
	_, err = s.pool.Exec(ctx, `INSERT INTO jobs (`+jobCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		j.ID, j.InvocationID, j.RunID, j.Tool, j.Caller, string(j.Status), j.Progress, j.Message, result, errJSON,
		stamp(j.CreatedAt), stamp(j.UpdatedAt), stamp(j.FinishedAt))
	return translate(ctx, op, err)
}

// JobGet returns one job.
func (s *Store) JobGet(ctx context.Context, id string) (switchboard.Job, error) {
	const op = "job get"
	if err := s.check(op); err != nil {
		return switchboard.Job{}, err
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, switchboard.Errorf(switchboard.CodeNotFound, "%s: no job %q", op, id)
	}
	return j, translate(ctx, op, err)
}

// JobUpdate is a compare-and-swap on the job's status.
func (s *Store) JobUpdate(ctx context.Context, j switchboard.Job, from ...switchboard.JobStatus) (switchboard.Job, error) {
	const op = "job update"
	if err := s.check(op); err != nil {
		return switchboard.Job{}, err
	}
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
	fromText := make([]string, len(from))
	for i, st := range from {
		fromText[i] = string(st)
	}
	stored, err := scanJob(s.pool.QueryRow(ctx, `UPDATE jobs SET status = $1, progress = $2, message = $3, result = $4,
		error = $5, updated_at = $6, finished_at = $7 WHERE id = $8 AND status = ANY($9) RETURNING `+jobCols,
		string(j.Status), j.Progress, j.Message, result, errJSON, stamp(j.UpdatedAt), stamp(j.FinishedAt), j.ID, fromText))
	if err == nil {
		return stored, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return switchboard.Job{}, translate(ctx, op, err)
	}
	current, err := s.JobGet(ctx, j.ID)
	if err != nil {
		return switchboard.Job{}, err
	}
	return current, switchboard.Errorf(switchboard.CodeConflict, "%s: job %q is %s, not %v", op, j.ID, current.Status, from)
}

// JobFailRunning fails every running job with cause.
func (s *Store) JobFailRunning(ctx context.Context, at time.Time, cause *switchboard.Error) (int, error) {
	const op = "job fail running"
	if err := s.check(op); err != nil {
		return 0, err
	}
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
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET status = 'failed', error = $1, updated_at = $2, finished_at = $2
		WHERE status = 'running'`, errJSON, stamp(at))
	if err != nil {
		return 0, translate(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}

// IdempotencyClaim is one upsert that replaces only an expired record, so
// of two concurrent claims exactly one stores its record.
func (s *Store) IdempotencyClaim(ctx context.Context, r switchboard.IdempotencyRecord, notBefore time.Time) (switchboard.IdempotencyRecord, bool, error) {
	const op = "idempotency claim"
	if err := s.check(op); err != nil {
		return r, false, err
	}
	if r.Scope == "" || r.Key == "" || r.InvocationID == "" {
		return r, false, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: scope, key and invocation are required", op)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now()
	}
	r.CreatedAt = normTime(r.CreatedAt)
	var got string
	err := s.pool.QueryRow(ctx, `INSERT INTO idempotency_keys (scope, key, digest, invocation_id, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, key) DO UPDATE SET digest = excluded.digest,
		invocation_id = excluded.invocation_id, created_at = excluded.created_at
		WHERE idempotency_keys.created_at < $6 RETURNING invocation_id`,
		r.Scope, r.Key, r.Digest, r.InvocationID, stamp(r.CreatedAt), stamp(notBefore)).Scan(&got)
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return r, false, translate(ctx, op, err)
	}
	stored := switchboard.IdempotencyRecord{Scope: r.Scope, Key: r.Key}
	var created time.Time
	err = s.pool.QueryRow(ctx, `SELECT digest, invocation_id, created_at FROM idempotency_keys WHERE scope = $1 AND key = $2`,
		r.Scope, r.Key).Scan(&stored.Digest, &stored.InvocationID, &created)
	stored.CreatedAt = created.UTC()
	return stored, false, translate(ctx, op, err)
}

// IdempotencyRelease deletes a claim that still names invocationID.
func (s *Store) IdempotencyRelease(ctx context.Context, scope, key, invocationID string) error {
	const op = "idempotency release"
	if err := s.check(op); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND invocation_id = $3`, scope, key, invocationID)
	return translate(ctx, op, err)
}

// ActivityHead returns the last entry's ID.
func (s *Store) ActivityHead(ctx context.Context) (int64, error) {
	const op = "activity head"
	if err := s.check(op); err != nil {
		return 0, err
	}
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM activity`).Scan(&id)
	return id, translate(ctx, op, err)
}
