package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// ExpireBatch bounds what one InvocationExpire or IdempotencyExpire
// deletes: one short write transaction, so calls waiting for the writer
// (SQLite) or for a row (Postgres) are never held up for long. A sweeper
// that has more to delete calls again.
const ExpireBatch = 128

// terminalStatuses are the statuses an expired record may have.
var terminalStatuses = func() []any {
	var out []any
	for _, st := range []switchboard.Status{switchboard.StatusSucceeded, switchboard.StatusFailed,
		switchboard.StatusDenied, switchboard.StatusTimedOut, switchboard.StatusCancelled} {
		out = append(out, string(st))
	}
	return out
}()

// sqlExpiring picks the records InvocationExpire may delete, oldest
// first: created and finished before the bound, terminal, and named by
// nothing that still needs them. It walks invocations_by_created from the
// oldest record; the three checks are index lookups (approvals'
// invocation_id is UNIQUE; idempotency_keys_by_invocation; jobs are few
// per call and the job check is by invocation through jobs_running).
var sqlExpiring = `SELECT i.id FROM invocations i
	WHERE i.created_at < ? AND i.finished_at < ? AND i.status ` + in(len(terminalStatuses)) + `
	AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.invocation_id = i.id AND a.status = 'pending')
	AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.invocation_id = i.id)
	AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.status = 'running' AND j.invocation_id = i.id)
	ORDER BY i.created_at LIMIT ?`

// The deletes name the picked ids in a fixed number of placeholders
// (unused ones are the empty id, which no record has), so their text is constant and
// statement caches hit it.
var (
	sqlExpireApprovals = `DELETE FROM approvals WHERE status <> 'pending' AND invocation_id ` + in(ExpireBatch)
	// The terminal check is repeated: a record is never deleted in flight
	// even if something changed it since it was picked.
	sqlExpireInvocations = `DELETE FROM invocations WHERE id ` + in(ExpireBatch) +
		` AND status ` + in(len(terminalStatuses))
	// A key whose call is not terminal is kept whatever its age
	//: a retry must find the call, not start another.
	sqlExpireKeys = `DELETE FROM idempotency_keys WHERE (scope, key) IN
		(SELECT k.scope, k.key FROM idempotency_keys k WHERE k.created_at < ? AND ` + sqlKeySettled + `
		ORDER BY k.created_at LIMIT ?)`
)

// sqlKeySettled holds for an idempotency key k whose invocation is
// terminal or gone: only such a key may expire (IdempotencyExpire) or be
// replaced by a new claim (IdempotencyClaim). Its placeholders are
// terminalStatuses.
var sqlKeySettled = `NOT EXISTS (SELECT 1 FROM invocations i WHERE i.id = k.invocation_id AND i.status NOT ` + in(len(terminalStatuses)) + `)`

// InvocationExpire deletes up to limit (at most ExpireBatch) expired
// records in one transaction: it picks them, deletes their decided
// approvals, then them.
func (s *Store) InvocationExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	const op = "invocation expire"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if before.IsZero() || limit <= 0 {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a time bound and a positive limit are required", op)
	}
	limit = min(limit, ExpireBatch)
	b := s.d.Time(normTime(before))
	pick := append([]any{b, b}, terminalStatuses...)
	pick = append(pick, limit)
	var n int64
	err := s.db.Tx(ctx, op, func(tx Tx) error {
		ids, err := s.pickExpiring(ctx, tx, pick)
		if err != nil || len(ids) == 0 {
			return err
		}
		args := make([]any, ExpireBatch, ExpireBatch+len(terminalStatuses))
		for i := range args {
			args[i] = ""
		}
		for i, id := range ids {
			args[i] = id
		}
		if _, err := tx.Exec(ctx, s.sql(sqlExpireApprovals), args...); err != nil {
			return err
		}
		n, err = tx.Exec(ctx, s.sql(sqlExpireInvocations), append(args, terminalStatuses...)...)
		return err
	})
	return int(n), err
}

// pickExpiring reads the ids sqlExpiring picks. A transaction's Querier
// reads one row, so the ids come back as one JSON array, which keeps any
// id intact (the aggregate's name differs: json_agg on Postgres, the
// numbered dialect; json_group_array on SQLite).
func (s *Store) pickExpiring(ctx context.Context, tx Tx, args []any) ([]string, error) {
	agg := `json_group_array(id)`
	if s.d.Numbered {
		agg = `coalesce(json_agg(id), '[]')`
	}
	var list json.RawMessage
	if err := tx.QueryRow(ctx, s.sql(`SELECT `+agg+` FROM (`+sqlExpiring+`) picked`), args...).Scan(scanJSON(&list)); err != nil {
		return nil, err
	}
	var ids []string
	if err := json.Unmarshal(list, &ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// IdempotencyExpire deletes up to limit (at most ExpireBatch) keys created
// before before whose calls are terminal, oldest first, in one statement.
func (s *Store) IdempotencyExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	const op = "idempotency expire"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if before.IsZero() || limit <= 0 {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a time bound and a positive limit are required", op)
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		args := append([]any{s.d.Time(normTime(before))}, terminalStatuses...)
		n, err = q.Exec(ctx, s.sql(sqlExpireKeys), append(args, min(limit, ExpireBatch))...)
		return err
	})
	return int(n), err
}
