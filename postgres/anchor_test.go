package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/storetest"
)

// The ledger's anchor catches a cut tail on Postgres (issue 14 item 5).
// The tamperer also moves each chain's head in activity_head back, as one who wanted the cut
// to go unnoticed would.
func TestAnchor(t *testing.T) {
	dsn := testDSN(t)
	storetest.ExerciseAnchor(t, func(t *testing.T) (switchboard.Store, storetest.Tamper) {
		schema := freshSchema(t, dsn)
		s := open(t, dsn, schema)
		return s, func(t *testing.T, from int64) switchboard.Store {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			must(t, err)
			defer conn.Close(ctx)
			act, head := pgx.Identifier{schema, "activity"}.Sanitize(), pgx.Identifier{schema, "activity_head"}.Sanitize()
			_, err = conn.Exec(ctx, `DELETE FROM `+act+` WHERE id >= $1`, from)
			must(t, err)
			// Each chain's head back to its last remaining entry.
			_, err = conn.Exec(ctx, `UPDATE `+head+` h SET (last_id, last_hash) = (SELECT coalesce(max(seq), 0), coalesce((SELECT encode(hash, 'hex') FROM `+act+` WHERE chain = h.id ORDER BY seq DESC LIMIT 1), '') FROM `+act+` WHERE chain = h.id)`)
			must(t, err)
			return s
		}
	})
}
