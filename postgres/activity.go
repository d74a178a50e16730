package postgres

import (
	"context"
	"errors"
	"slices"

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
// from chain $1 on (and round), and draws $2 entry ids once the lock is
// held (the outer query, and the subquery that names h, run after the
// CTE's row is locked), so ids rise along a chain.
const sqlTakeChain = `WITH h AS (SELECT id, last_id, last_hash FROM activity_head
		ORDER BY id < $1, id FOR UPDATE SKIP LOCKED LIMIT 1)
	SELECT id, last_id, last_hash,
		ARRAY(SELECT nextval('activity_id') FROM generate_series(1, $2) WHERE h.id IS NOT NULL) FROM h`

// sqlWaitChain locks chain $1, waiting for it (every chain was held), and
// draws $2 ids as sqlTakeChain does.
const sqlWaitChain = `WITH h AS (SELECT id, last_id, last_hash FROM activity_head WHERE id = $1 FOR UPDATE)
	SELECT id, last_id, last_hash,
		ARRAY(SELECT nextval('activity_id') FROM generate_series(1, $2) WHERE h.id IS NOT NULL) FROM h`

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

// takeChain locks a chain for q's transaction (the first free one from
// prefer on, else prefer, waiting; only waiting when busy says every
// chain was just found held) and draws n ids for its appends.
func takeChain(ctx context.Context, q interface {
	QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row
}, prefer, n int, busy bool, h *chainHead) (ids []int64, err error) {
	err = pgx.ErrNoRows
	if !busy {
		ids, err = scanHead(q.QueryRow(ctx, sqlTakeChain, prefer, n), h)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		ids, err = scanHead(q.QueryRow(ctx, sqlWaitChain, prefer, n), h)
	}
	return ids, err
}

// scanHead reads a head sqlTakeChain or sqlWaitChain took into h, and the
// ids drawn with it.
func scanHead(r interface{ Scan(dest ...any) error }, h *chainHead) ([]int64, error) {
	var got chainHead
	var ids []int64
	if err := r.Scan(&got.chain, &got.seq, &got.hash, &ids); err != nil {
		return nil, err
	}
	got.ok = true
	*h = got
	slices.Sort(ids)
	return ids, nil
}

// link places p after h on its chain with id; the caller then stores it
// (sqlAppend with p.Args() and its position) and moves h to it.
func link(h *chainHead, id int64, p *sqlstore.Entry) []any {
	p.LinkAt(h.chain, h.seq+1, id, h.hash)
	chain, seq := p.N.Position()
	h.seq, h.hash = seq, p.N.Hash
	return append(p.Args(), chain, seq)
}

// Append inserts p on the first free chain. A lone transaction appends
// once (a finish and its entry), so its head is not kept: a second append
// takes a chain again (the one it holds reads as it left it).
func (t tx) Append(ctx context.Context, p *sqlstore.Entry) error {
	var h chainHead
	ids, err := takeChain(ctx, t, t.prefer, 1, false, &h)
	if err != nil {
		return err
	}
	_, err = t.Exec(ctx, sqlAppend, link(&h, ids[0], p)...)
	return err
}
