package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/switchboardhq/switchboard"
)

// The conditional upsert is the whole quota check: a row's calls grow only
// while they stay within the limit (0: none), so two replicas admitting
// the last call at once cannot both get it.
const (
	sqlQuotaAdd = `INSERT INTO quota_usage (subject, day, calls, tokens, cost_micros) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (subject, day) DO UPDATE SET calls = quota_usage.calls + excluded.calls,
			tokens = quota_usage.tokens + excluded.tokens, cost_micros = quota_usage.cost_micros + excluded.cost_micros
		WHERE ? = 0 OR quota_usage.calls + excluded.calls <= ?
		RETURNING calls, tokens, cost_micros`
	sqlQuotaGet  = `SELECT calls, tokens, cost_micros FROM quota_usage WHERE subject = ? AND day = ?`
	sqlQuotaList = `SELECT subject, calls, tokens, cost_micros FROM quota_usage WHERE day = ?
		ORDER BY calls DESC, subject LIMIT ?`
	sqlQuotaExpire = `DELETE FROM quota_usage WHERE (subject, day) IN
		(SELECT subject, day FROM quota_usage WHERE day < ? ORDER BY day LIMIT ?)`
)

// QuotaAdd adds to subject's usage of day unless a call would go past the
// call limit.
func (s *Store) QuotaAdd(ctx context.Context, subject, day string, add, limit switchboard.QuotaUsage) (switchboard.QuotaUsage, bool, error) {
	const op = "quota add"
	var used switchboard.QuotaUsage
	if err := s.check(op); err != nil {
		return used, false, err
	}
	if subject == "" || day == "" {
		return used, false, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a subject and a day are required", op)
	}
	if limit.Calls > 0 && add.Calls > limit.Calls {
		used, err := s.QuotaGet(ctx, subject, day)
		return used, false, err
	}
	ok := true
	err := s.db.Write(ctx, op, func(q Querier) error {
		err := q.QueryRow(ctx, s.sql(sqlQuotaAdd), subject, day, add.Calls, add.Tokens, add.CostMicros, limit.Calls, limit.Calls).
			Scan(&used.Calls, &used.Tokens, &used.CostMicros)
		if errors.Is(err, sql.ErrNoRows) {
			ok = false // the limit refused the update: nothing was added
			return q.QueryRow(ctx, s.sql(sqlQuotaGet), subject, day).Scan(&used.Calls, &used.Tokens, &used.CostMicros)
		}
		return err
	})
	if err != nil {
		return switchboard.QuotaUsage{}, false, err
	}
	return used, ok, nil
}

// QuotaGet returns subject's usage of day (zero when none).
func (s *Store) QuotaGet(ctx context.Context, subject, day string) (switchboard.QuotaUsage, error) {
	const op = "quota get"
	var used switchboard.QuotaUsage
	err := s.read(ctx, op, func(q Reader) error {
		err := q.QueryRow(ctx, s.sql(sqlQuotaGet), subject, day).Scan(&used.Calls, &used.Tokens, &used.CostMicros)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return used, err
}

// QuotaList returns day's usage rows, most calls first.
func (s *Store) QuotaList(ctx context.Context, day string, limit int) ([]switchboard.QuotaRow, error) {
	const op = "quota list"
	if day == "" || limit <= 0 {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a day and a positive limit are required", op)
	}
	var out []switchboard.QuotaRow
	err := s.read(ctx, op, func(q Reader) error {
		out = out[:0]
		rows, err := q.Query(ctx, s.sql(sqlQuotaList), day, min(limit, ExpireBatch))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r switchboard.QuotaRow
			if err := rows.Scan(&r.Subject, &r.Used.Calls, &r.Used.Tokens, &r.Used.CostMicros); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// QuotaExpire deletes usage of days before before, at most limit rows.
func (s *Store) QuotaExpire(ctx context.Context, before string, limit int) (int, error) {
	const op = "quota expire"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if before == "" || limit <= 0 {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a day and a positive limit are required", op)
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) (err error) {
		n, err = q.Exec(ctx, s.sql(sqlQuotaExpire), before, min(limit, ExpireBatch))
		return err
	})
	return int(n), err
}
