package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// sqlChainHead reads the last entry's id and hash.
const sqlChainHead = `SELECT id, hash FROM activity ORDER BY id DESC LIMIT 1`

// Append inserts p after the chain head, inside w's IMMEDIATE transaction;
// the single writer connection makes appends strictly sequential. The head
// is the entry an earlier member of the same batch appended, else the
// cache of the last committed one when it is set; a cached head that is stale
// (something else appended) makes the insert collide with the real head's
// id (the primary key), and the append then reads the head and tries again.
func (w *wconn) Append(_ context.Context, p *sqlstore.Entry) error {
	head, cached := w.h.head, w.h.head.ok
	if w.head.ok { // an earlier member of this batch appended: continue from it
		head = w.head
	}
	for {
		if !head.ok {
			err := w.queryRow(sqlChainHead).Scan(&head.id, sqlstore.ScanHash(&head.hash))
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			head.ok, cached = true, false
		}
		p.Link(head.id, head.hash)
		_, err := w.exec(sqlstore.ActivityInsert, p.Args()...)
		if err != nil && cached && isConstraint(err) {
			head = chainHead{}
			continue
		}
		if err != nil {
			return err
		}
		w.head = chainHead{id: p.N.ID, hash: p.N.Hash, ok: true}
		return nil
	}
}
