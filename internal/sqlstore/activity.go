package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// ActivityInsert inserts one ledger entry; its arguments are Entry.Args.
// Drivers run it from Tx.Append, after Entry.Link.
const ActivityInsert = `INSERT INTO activity (` + activityCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// activityCols are the stored columns every store has. An entry's
// PrevHash is not stored: positions on a chain have no gaps, so it is the
// hash of the row one position before on the same chain (on a store of
// one chain, the row with id - 1), which ActivityList joins (migration
// 0022 says why). A store of several chains also keeps chain and seq
// (Dialect.Chains).
const activityCols = `id, ts, actor, verb, target, provenance, reversal, details, hash`

// Entry is an activity entry checked and ready to append: N is the entry
// with its time normalized (and, after Link, its ID and hashes); the
// columns are kept as bound.
type Entry struct {
	N              switchboard.ActivityEntry
	ts             any
	prov, rev, det any
}

// NewEntry is newEntry for a driver's own tests, which put entries in
// batches through the driver's seam.
func (s *Store) NewEntry(op string, e *switchboard.ActivityEntry) (*Entry, error) {
	return s.newEntry(op, e)
}

// newEntry validates e (nil, JSON) and stamps a zero Ts, without changing e.
func (s *Store) newEntry(op string, e *switchboard.ActivityEntry) (*Entry, error) {
	if e == nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: nil entry", op)
	}
	p := &Entry{N: *e}
	p.N.Ts = normTime(s.stamp(p.N.Ts))
	p.ts = s.time(p.N.Ts)
	var err error
	if p.prov, err = rawJSON("provenance", p.N.Provenance); err != nil {
		return nil, err
	}
	if p.rev, err = rawJSON("reversal", p.N.Reversal); err != nil {
		return nil, err
	}
	if p.det, err = rawJSON("details", p.N.Details); err != nil {
		return nil, err
	}
	return p, nil
}

// Link puts the entry after the chain head (headID, headHash) of a store
// with one chain, where an entry's position is its ID: its ID, PrevHash
// and Hash.
func (p *Entry) Link(headID int64, headHash string) {
	p.LinkAt(1, headID+1, headID+1, headHash)
}

// LinkAt puts the entry at position seq of chain, after the entry whose
// hash is prev, as entry id: its ID, Chain, Seq, PrevHash and Hash.
func (p *Entry) LinkAt(chain int, seq, id int64, prev string) {
	n := &p.N
	n.ID, n.Chain, n.Seq = id, chain, seq // ComputeHash covers them, so set them first
	if chain == 1 && seq == id {
		n.Chain, n.Seq = 0, 0
	}
	n.PrevHash = prev
	n.Hash = n.ComputeHash(prev)
}

// Args are ActivityInsert's arguments for the linked entry.
func (p *Entry) Args() []any {
	n := &p.N
	return []any{n.ID, p.ts, n.Actor, n.Verb, n.Target, p.prov, p.rev, p.det, HashBytes(n.Hash)}
}

// HashBytes is a chain hash (hex, as ComputeHash makes it) as the activity
// table keeps it: its 32 bytes. Text that is not hex cannot come from Link;
// it would be kept as its own bytes (and read back as their hex, which
// verification then reports).
func HashBytes(h string) []byte {
	b, err := hex.DecodeString(h)
	if err != nil {
		return []byte(h)
	}
	return b
}

// hashCol scans a stored hash (bytes; NULL for a missing predecessor)
// back into hex.
type hashCol string

func (c *hashCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c = ""
	case []byte:
		*c = hashCol(hex.EncodeToString(v))
	case string: // a row written before migration 0022 on a hand-edited file
		*c = hashCol(v)
	default:
		return fmt.Errorf("hash column holds %T", src)
	}
	return nil
}

// ScanHash is a Scan destination for a stored hash, read as hex.
func ScanHash(h *string) any { return (*hashCol)(h) }

// ActivityAppend assigns e the next ID, the previous entry's hash and its
// own hash in one transaction (Tx.Append keeps the chain from forking). A
// zero Ts is stamped with the store's clock; Ts is kept (and hashed) at
// microsecond precision in UTC. e is changed only when the append commits.
func (s *Store) ActivityAppend(ctx context.Context, e *switchboard.ActivityEntry) error {
	const op = "activity append"
	p, err := s.newEntry(op, e)
	if err != nil {
		return err
	}
	if err := s.db.Tx(ctx, op, func(tx Tx) error { return tx.Append(ctx, p) }); err != nil {
		return err
	}
	*e = p.N
	return nil
}

// sqlFirstSince is the first entry a ?since= listing can return.
const sqlFirstSince = `SELECT min(+id) FROM activity WHERE ts >= ?`

// ActivityList pages the ledger oldest first.
func (s *Store) ActivityList(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	const op = "activity list"
	var since any
	if !f.Since.IsZero() {
		// The listing walks the ledger by id, but ts only roughly follows
		// id (entries are stamped before they are appended), so ts >= ?
		// alone would make it read every older entry first. The walk
		// starts at the first entry at or after Since instead, found on
		// activity_by_ts (+id keeps SQLite from walking the primary key
		// for min(id)); ts >= ? still picks the entries exactly.
		since = s.d.Time(ceilMicro(f.Since))
		var first sql.NullInt64
		err := s.read(ctx, op, func(q Reader) error {
			return q.QueryRow(ctx, s.sql(sqlFirstSince), since).Scan(&first)
		})
		if err != nil {
			return nil, err
		}
		if !first.Valid {
			return []switchboard.ActivityEntry{}, nil
		}
		f.AfterID = max(f.AfterID, first.Int64-1)
	}
	where := []string{"id > ?"}
	args := []any{f.AfterID}
	if f.Actor != "" {
		where, args = append(where, "actor = ?"), append(args, f.Actor)
	}
	if f.Verb != "" {
		where, args = append(where, "verb = ?"), append(args, f.Verb)
	}
	if since != nil {
		where, args = append(where, "ts >= ?"), append(args, since)
	}
	args = append(args, limit(f.Limit))
	out := []switchboard.ActivityEntry{}
	err := s.read(ctx, op, func(q Reader) error {
		// The previous entry is the one before on the same chain; on a
		// store of one chain, the entry with id - 1.
		pos, prev := `0 AS chain, 0 AS seq`, `p.id = a.id - 1`
		if s.d.Chains {
			pos, prev = `chain, seq`, `p.chain = a.chain AND p.seq = a.seq - 1`
		}
		rows, err := q.Query(ctx, s.sql(`SELECT a.id, a.ts, a.actor, a.verb, a.target, a.provenance, a.reversal, a.details,
			a.chain, a.seq, p.hash, a.hash FROM (SELECT `+activityCols+`, `+pos+` FROM activity WHERE `+strings.Join(where, " AND ")+
			` ORDER BY id LIMIT ?) a LEFT JOIN activity p ON `+prev+` ORDER BY a.id`), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e switchboard.ActivityEntry
			if err := rows.Scan(&e.ID, scanTime(&e.Ts), &e.Actor, &e.Verb, &e.Target, scanJSON(&e.Provenance),
				scanJSON(&e.Reversal), scanJSON(&e.Details), &e.Chain, &e.Seq, ScanHash(&e.PrevHash), ScanHash(&e.Hash)); err != nil {
				return err
			}
			if e.Chain == 1 && e.Seq == e.ID { // as Entry.LinkAt made it
				e.Chain, e.Seq = 0, 0
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// limit is a page size: DefaultActivityLimit for none, at most
// MaxActivityLimit.
func limit(n int) int {
	if n <= 0 {
		n = DefaultActivityLimit
	}
	return min(n, MaxActivityLimit)
}

// ActivityHead returns the last entry's ID.
func (s *Store) ActivityHead(ctx context.Context) (int64, error) {
	var id int64
	err := s.read(ctx, "activity head", func(q Reader) error {
		return q.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM activity`).Scan(&id)
	})
	return id, err
}
