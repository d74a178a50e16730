package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"io/fs"
	"time"

	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations is the directory of embedded migrations, NNNN_name.sql.
var migrations, _ = fs.Sub(migrationFS, "migrations")

// migrate applies every pending migration in one IMMEDIATE transaction, so
// two processes opening the same file at once apply each migration once and
// a failed migration leaves the schema as it was.
func migrate(ctx context.Context, db *sql.DB, now time.Time) error {
	const op = "migrate sqlite"
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return translate(ctx, op, err)
	}
	defer tx.Rollback()
	if err := sqlstore.Migrate(ctx, pool{tx}, dialect, migrations, now); err != nil {
		return translate(ctx, op, err)
	}
	return translate(ctx, op, tx.Commit())
}
