package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The caller's bounds keep, of its examples, the newest by time (then
// query, so ties are decided the same way on both databases).
const (
	sqlExampleUpsert = `INSERT INTO search_examples (tool, query, caller, invocation_id, created_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tool, query, caller) DO UPDATE SET invocation_id = excluded.invocation_id, created_at = excluded.created_at`
	// sqlExampleReplaced deletes what the same call taught the tool
	// before, when a later call after the same search changed it.
	sqlExampleReplaced = `DELETE FROM search_examples WHERE invocation_id = ? AND tool = ? AND caller = ? AND query <> ?`
	sqlExampleTrimTool = `DELETE FROM search_examples WHERE caller = ? AND tool = ? AND query NOT IN
		(SELECT query FROM search_examples WHERE caller = ? AND tool = ? ORDER BY created_at DESC, query DESC LIMIT ?)`
	sqlExampleTrimCaller = `DELETE FROM search_examples WHERE caller = ? AND (tool, query) NOT IN
		(SELECT tool, query FROM search_examples WHERE caller = ? ORDER BY created_at DESC, tool DESC, query DESC LIMIT ?)`
	sqlExampleList   = `SELECT tool, query, count(*), max(created_at) FROM search_examples `
	sqlExampleGroup  = ` GROUP BY tool, query ORDER BY tool, max(created_at) DESC, query`
	sqlExampleExpire = `DELETE FROM search_examples WHERE (tool, query, caller) IN
		(SELECT tool, query, caller FROM search_examples WHERE created_at < ? ORDER BY created_at LIMIT ?)`
)

// SearchExampleAdd records one example and applies the caller's bounds in
// one transaction.
func (s *Store) SearchExampleAdd(ctx context.Context, ex switchboard.SearchExample, perTool, perCaller int) error {
	const op = "search example add"
	if err := s.check(op); err != nil {
		return err
	}
	if ex.Tool == "" || ex.Query == "" || ex.Caller == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: tool, query and caller are required", op)
	}
	at := s.time(s.stamp(ex.At))
	return s.db.Tx(ctx, op, func(tx Tx) error {
		if ex.InvocationID != "" {
			if _, err := tx.Exec(ctx, s.sql(sqlExampleReplaced), ex.InvocationID, ex.Tool, ex.Caller, ex.Query); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, s.sql(sqlExampleUpsert), ex.Tool, ex.Query, ex.Caller, ex.InvocationID, at); err != nil {
			return err
		}
		if perTool > 0 {
			if _, err := tx.Exec(ctx, s.sql(sqlExampleTrimTool), ex.Caller, ex.Tool, ex.Caller, ex.Tool, perTool); err != nil {
				return err
			}
		}
		if perCaller > 0 {
			if _, err := tx.Exec(ctx, s.sql(sqlExampleTrimCaller), ex.Caller, ex.Caller, perCaller); err != nil {
				return err
			}
		}
		return nil
	})
}

// SearchExampleList aggregates the examples of tool ("" every tool).
func (s *Store) SearchExampleList(ctx context.Context, tool string) ([]switchboard.LearnedQuery, error) {
	const op = "search example list"
	out := []switchboard.LearnedQuery{}
	where, args := "", []any{}
	if tool != "" {
		where, args = "WHERE tool = ?", []any{tool}
	}
	err := s.read(ctx, op, func(q Reader) error {
		rows, err := q.Query(ctx, s.sql(sqlExampleList+where+sqlExampleGroup), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l switchboard.LearnedQuery
			if err := rows.Scan(&l.Tool, &l.Query, &l.Callers, scanTime(&l.LastUsed)); err != nil {
				return err
			}
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SearchExampleDelete deletes a tool's examples.
func (s *Store) SearchExampleDelete(ctx context.Context, tool string) (int, error) {
	const op = "search example delete"
	if err := s.check(op); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) (err error) {
		n, err = q.Exec(ctx, s.sql(`DELETE FROM search_examples WHERE tool = ?`), tool)
		return err
	})
	return int(n), err
}

// SearchExampleDeleteInvocation deletes the examples of a reversed call.
// The tools come back as one JSON array, as a transaction's Querier reads
// one row (pickExpiring does the same).
func (s *Store) SearchExampleDeleteInvocation(ctx context.Context, id string) ([]string, error) {
	const op = "search example delete invocation"
	if err := s.check(op); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: an invocation id is required", op)
	}
	agg := `json_group_array(DISTINCT tool)`
	if s.d.Numbered {
		agg = `coalesce(json_agg(DISTINCT tool), '[]')`
	}
	var tools []string
	err := s.db.Tx(ctx, op, func(tx Tx) error {
		var list json.RawMessage
		if err := tx.QueryRow(ctx, s.sql(`SELECT `+agg+` FROM search_examples WHERE invocation_id = ?`), id).Scan(scanJSON(&list)); err != nil {
			return err
		}
		if err := json.Unmarshal(list, &tools); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.sql(`DELETE FROM search_examples WHERE invocation_id = ?`), id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return tools, nil
}

// SearchExampleExpire deletes up to limit (at most ExpireBatch) examples
// older than before, oldest first, in one statement.
func (s *Store) SearchExampleExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	const op = "search example expire"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if before.IsZero() || limit <= 0 {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a time bound and a positive limit are required", op)
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) (err error) {
		n, err = q.Exec(ctx, s.sql(sqlExampleExpire), s.d.Time(normTime(before)), min(limit, ExpireBatch))
		return err
	})
	return int(n), err
}
