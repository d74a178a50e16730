package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// The ledger on Postgres is several hash chains (migration 0047), one head
// row each in activity_head. A transaction that appends takes the first
// head nobody holds, starting from its store's preferred chain, and keeps
// its row lock until it ends: appends on one chain are serialized (so the
// chain cannot fork), appends of different replicas are not. Only when
// every chain is held does an append wait, for its preferred one. The
// entry's id, the order across chains, comes from the sequence
// activity_id, drawn while the chain is held, so ids rise along a chain.

// chains is how many chains migration 0047 made: more than the replicas
// a Postgres serves (bench/README.md, "Several replicas").
const chains = 8

// sqlInsert inserts an entry at its place on its chain; its arguments are
// Entry.Args then chain and seq.
const sqlInsert = `INSERT INTO activity (id, ts, actor, verb, target, provenance, reversal, details, hash, chain, seq)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// sqlAppend inserts an entry and moves its chain's head to it in one
// statement (one round trip).
const sqlAppend = `WITH appended AS (` + sqlInsert + ` RETURNING chain, seq, hash)
	UPDATE activity_head SET last_id = appended.seq, last_hash = encode(appended.hash, 'hex')
	FROM appended WHERE activity_head.id = appended.chain`

// sqlTakeChain locks the first chain head no other transaction holds,
// from chain $1 on (and round), and draws the first entry's id once the
// lock is held (the outer query runs after the CTE's row is locked).
const sqlTakeChain = `WITH h AS (SELECT id, last_id, last_hash FROM activity_head
		ORDER BY id < $1, id FOR UPDATE SKIP LOCKED LIMIT 1)
	SELECT id, last_id, last_hash, nextval('activity_id') FROM h`

// sqlWaitChain locks chain $1, waiting for it: every chain was held.
const sqlWaitChain = `WITH h AS (SELECT id, last_id, last_hash FROM activity_head WHERE id = $1 FOR UPDATE)
	SELECT id, last_id, last_hash, nextval('activity_id') FROM h`

// sqlNextID draws the id of a later entry on a chain the transaction holds.
const sqlNextID = `SELECT nextval('activity_id')`

// chainHead is the head of the chain a transaction holds, after its last
// append.
type chainHead struct {
	chain int
	seq   int64
	hash  string
	ok    bool
}

// appendOn appends p on the chain held as *h, taking one first (q is the
// transaction) when *h is not set.
func appendOn(ctx context.Context, q interface {
	QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}, prefer int, h *chainHead, p *sqlstore.Entry) error {
	var id int64
	if !h.ok {
		err := q.QueryRow(ctx, sqlTakeChain, prefer).Scan(&h.chain, &h.seq, &h.hash, &id)
		if errors.Is(err, pgx.ErrNoRows) {
			err = q.QueryRow(ctx, sqlWaitChain, prefer).Scan(&h.chain, &h.seq, &h.hash, &id)
		}
		if err != nil {
			return err
		}
		h.ok = true
	} else if err := q.QueryRow(ctx, sqlNextID).Scan(&id); err != nil {
		return err
	}
	p.LinkAt(h.chain, h.seq+1, id, h.hash)
	chain, seq := p.N.Position()
	if _, err := q.Exec(ctx, sqlAppend, append(p.Args(), chain, seq)...); err != nil {
		return err
	}
	h.seq, h.hash = seq, p.N.Hash
	return nil
}

// Append inserts p on the first free chain; a later append of the same
// transaction continues that chain.
func (t tx) Append(ctx context.Context, p *sqlstore.Entry) error {
	// A lone transaction appends once (a finish and its entry), so its
	// head is not kept: a second append takes a chain again (the one it
	// holds reads as it left it).
	var h chainHead
	return appendOn(ctx, t, t.prefer, &h, p)
}
