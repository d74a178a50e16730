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
	p, err := s.newEntry(op, e)
	if err != nil {
		return err
	}
	if err := s.fast(ctx, op, true, p.append); err != nil {
		return err
	}
	*e = p.n
	return nil
}

// Statements of the append.
const (
	sqlChainHead      = `SELECT id, hash FROM activity ORDER BY id DESC LIMIT 1`
	sqlInsertActivity = `INSERT INTO activity
		(id, ts, actor, verb, target, provenance, reversal, details, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

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

// append inserts p after the chain head, inside w's transaction. The head
// comes from the cache when it is set; a cached head that is stale
// (something else appended) makes the insert collide with the real head's
// id or prev_hash, and the append then reads the head and tries again.
func (p *entry) append(w *wconn) error {
	head, cached := w.h.head, w.h.head.ok
	for {
		if !head.ok {
			err := w.queryRow(sqlChainHead).Scan(&head.id, &head.hash)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			head.ok, cached = true, false
		}
		n := &p.n
		n.ID = head.id + 1 // ComputeHash covers the ID, so set it first
		n.PrevHash = head.hash
		n.Hash = n.ComputeHash(head.hash)
		_, err := w.exec(sqlInsertActivity,
			n.ID, n.Ts.UnixMicro(), n.Actor, n.Verb, n.Target, p.prov, p.rev, p.det, n.PrevHash, n.Hash)
		if err != nil && cached && isConstraint(err) {
			head = chainHead{}
			continue
		}
		if err != nil {
			return err
		}
		w.head = chainHead{id: n.ID, hash: n.Hash, ok: true}
		return nil
	}
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
