package postgres

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// sqlAppend inserts an entry and moves the chain head to it in one
// statement (one round trip).
var sqlAppend = `WITH appended AS (` + sqlstore.Numbered(sqlstore.ActivityInsert) + ` RETURNING id, hash)
	UPDATE activity_head SET last_id = appended.id, last_hash = encode(appended.hash, 'hex')
	FROM appended WHERE activity_head.id = 1`

// sqlHead reads the chain head and locks it until the transaction ends.
const sqlHead = `SELECT last_id, last_hash FROM activity_head WHERE id = 1 FOR UPDATE`

// Append inserts p after the chain head, holding the head's row lock until
// the transaction ends, so appends from every replica are serialized and
// the chain cannot fork.
func (t tx) Append(ctx context.Context, p *sqlstore.Entry) error {
	var (
		lastID   int64
		lastHash string
	)
	if err := t.QueryRow(ctx, sqlHead).Scan(&lastID, &lastHash); err != nil {
		return err
	}
	p.Link(lastID, lastHash)
	_, err := t.Exec(ctx, sqlAppend, p.Args()...)
	return err
}
