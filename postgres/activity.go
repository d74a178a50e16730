package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

// Activity paging limits (ActivityFilter.Limit).
const (
	DefaultActivityLimit = 100
	MaxActivityLimit     = 1000
)

// ActivityAppend assigns e the next ID, the previous entry's hash and its
// own hash in one transaction that holds the chain-head row lock, so appends
// from every replica are serialized and the chain cannot fork. A zero Ts is
// stamped with Options.Now; Ts is kept (and hashed) at microsecond precision
// in UTC. e is changed only when the append commits.
func (s *Store) ActivityAppend(ctx context.Context, e *switchboard.ActivityEntry) error {
	const op = "activity append"
	p, err := s.newEntry(op, e)
	if err != nil {
		return err
	}
	if err := s.write(ctx, op, func(tx pgx.Tx) error { return p.append(ctx, tx) }); err != nil {
		return err
	}
	*e = p.n
	return nil
}

// entry is an activity entry checked and ready to append: n with its time
// normalized, and its JSON columns as bound.
type entry struct {
	n              switchboard.ActivityEntry
	prov, rev, det any
}

// newEntry validates e (nil, JSON) and stamps a zero Ts, without changing e.
func (s *Store) newEntry(op string, e *switchboard.ActivityEntry) (*entry, error) {
	if e == nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: nil entry", op)
	}
	p := &entry{n: *e}
	if p.n.Ts.IsZero() {
		p.n.Ts = s.now()
	}
	p.n.Ts = normTime(p.n.Ts)
	var err error
	if p.prov, err = rawJSON("provenance", p.n.Provenance); err != nil {
		return nil, err
	}
	if p.rev, err = rawJSON("reversal", p.n.Reversal); err != nil {
		return nil, err
	}
	if p.det, err = rawJSON("details", p.n.Details); err != nil {
		return nil, err
	}
	return p, nil
}

// append inserts p after the chain head inside tx, holding the head's row
// lock until tx ends. The insert and the head's move are one statement (one
// round trip).
func (p *entry) append(ctx context.Context, tx pgx.Tx) error {
	var lastID int64
	var lastHash string
	if err := tx.QueryRow(ctx,
		`SELECT last_id, last_hash FROM activity_head WHERE id = 1 FOR UPDATE`).Scan(&lastID, &lastHash); err != nil {
		return err
	}
	n := &p.n
	n.ID = lastID + 1 // ComputeHash covers the ID, so set it first
	n.PrevHash = lastHash
	n.Hash = n.ComputeHash(lastHash)
	_, err := tx.Exec(ctx, `WITH appended AS (
			INSERT INTO activity (id, ts, actor, verb, target, provenance, reversal, details, prev_hash, hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			RETURNING id, hash
		)
		UPDATE activity_head SET last_id = appended.id, last_hash = appended.hash
		FROM appended WHERE activity_head.id = 1`,
		n.ID, n.Ts, n.Actor, n.Verb, n.Target, p.prov, p.rev, p.det, n.PrevHash, n.Hash)
	return err
}

// ActivityList pages the ledger oldest first.
func (s *Store) ActivityList(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	const op = "activity list"
	if err := s.check(op); err != nil {
		return nil, err
	}
	where := []string{"id > $1"}
	args := []any{f.AfterID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	if f.Actor != "" {
		add("actor =", f.Actor)
	}
	if f.Verb != "" {
		add("verb =", f.Verb)
	}
	if !f.Since.IsZero() {
		add("ts >=", ceilMicro(f.Since))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultActivityLimit
	}
	args = append(args, min(limit, MaxActivityLimit))
	rows, err := s.pool.Query(ctx, `SELECT id, ts, actor, verb, target, provenance, reversal, details, prev_hash, hash
		FROM activity WHERE `+strings.Join(where, " AND ")+` ORDER BY id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, translate(ctx, op, err)
	}
	defer rows.Close()
	out := []switchboard.ActivityEntry{}
	for rows.Next() {
		var (
			e              switchboard.ActivityEntry
			ts             time.Time
			prov, rev, det []byte
		)
		if err := rows.Scan(&e.ID, &ts, &e.Actor, &e.Verb, &e.Target, &prov, &rev, &det, &e.PrevHash, &e.Hash); err != nil {
			return nil, translate(ctx, op, err)
		}
		e.Ts = ts.UTC()
		e.Provenance, e.Reversal, e.Details = fromRawJSON(prov), fromRawJSON(rev), fromRawJSON(det)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(ctx, op, err)
	}
	return out, nil
}
