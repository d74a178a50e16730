package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Activity paging limits (ActivityFilter.Limit).
const (
	DefaultActivityLimit = 100
	MaxActivityLimit     = 1000
)

// ActivityAppend assigns e the next ID, the previous entry's hash and its
// own hash in one IMMEDIATE transaction; the single writer connection makes
// appends strictly sequential. A zero Ts is stamped with Options.Now; Ts is
// kept (and hashed) at microsecond precision in UTC. e is changed only when
// the append commits.
func (s *Store) ActivityAppend(ctx context.Context, e *switchboard.ActivityEntry) error {
	const op = "activity append"
	if e == nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: nil entry", op)
	}
	n := *e
	if n.Ts.IsZero() {
		n.Ts = s.now()
	}
	n.Ts = normTime(n.Ts)
	prov, err := rawJSON("provenance", n.Provenance)
	if err != nil {
		return err
	}
	rev, err := rawJSON("reversal", n.Reversal)
	if err != nil {
		return err
	}
	det, err := rawJSON("details", n.Details)
	if err != nil {
		return err
	}
	err = s.write(ctx, op, func(tx *sql.Tx) error {
		var lastID int64
		var lastHash string
		err := tx.QueryRowContext(ctx, `SELECT id, hash FROM activity ORDER BY id DESC LIMIT 1`).Scan(&lastID, &lastHash)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		n.ID = lastID + 1 // ComputeHash covers the ID, so set it first
		n.PrevHash = lastHash
		n.Hash = n.ComputeHash(lastHash)
		_, err = tx.ExecContext(ctx, `INSERT INTO activity
			(id, ts, actor, verb, target, provenance, reversal, details, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			n.ID, n.Ts.UnixMicro(), n.Actor, n.Verb, n.Target, prov, rev, det, n.PrevHash, n.Hash)
		return err
	})
	if err != nil {
		return err
	}
	*e = n
	return nil
}

// ActivityList pages the ledger oldest first.
func (s *Store) ActivityList(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	const op = "activity list"
	if err := s.check(op); err != nil {
		return nil, err
	}
	where := []string{"id > ?"}
	args := []any{f.AfterID}
	if f.Actor != "" {
		where = append(where, "actor = ?")
		args = append(args, f.Actor)
	}
	if f.Verb != "" {
		where = append(where, "verb = ?")
		args = append(args, f.Verb)
	}
	if !f.Since.IsZero() {
		where = append(where, "ts >= ?")
		args = append(args, ceilMicros(f.Since))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultActivityLimit
	}
	limit = min(limit, MaxActivityLimit)
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, `SELECT id, ts, actor, verb, target, provenance, reversal, details, prev_hash, hash
		FROM activity WHERE `+strings.Join(where, " AND ")+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return nil, translate(ctx, op, err)
	}
	defer rows.Close()
	out := []switchboard.ActivityEntry{}
	for rows.Next() {
		var (
			e              switchboard.ActivityEntry
			ts             sql.NullInt64
			prov, rev, det sql.NullString
		)
		if err := rows.Scan(&e.ID, &ts, &e.Actor, &e.Verb, &e.Target, &prov, &rev, &det, &e.PrevHash, &e.Hash); err != nil {
			return nil, translate(ctx, op, err)
		}
		e.Ts = fromMicros(ts)
		e.Provenance, e.Reversal, e.Details = fromRawJSON(prov), fromRawJSON(rev), fromRawJSON(det)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(ctx, op, err)
	}
	return out, nil
}

// ceilMicros is the first stored microsecond not before t, so Since stays
// exact when it carries nanoseconds.
func ceilMicros(t time.Time) int64 {
	us := t.UnixMicro()
	if t.Truncate(time.Microsecond).Before(t) {
		us++
	}
	return us
}
