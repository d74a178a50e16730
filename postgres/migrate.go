package postgres

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLock is the first key of the advisory lock taken while migrating;
// the second is the schema name's hash, so different schemas migrate in
// parallel and replicas of one schema take turns.
const migrateLock int32 = 0x53574244 // "SWBD"

// migrations is the directory of embedded migrations, NNNN_name.sql.
var migrations, _ = fs.Sub(migrationFS, "migrations")

// migrate creates the schema if needed and applies every pending migration
// in one transaction holding a transaction-scoped advisory lock: a second
// replica waits, then finds nothing left to do; a failed migration leaves
// the schema as it was.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, now time.Time) error {
	const op = "migrate postgres"
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Migrating is bounded by Open's context, not by the statement
		// bound: a replica waits here for another's migration, and a
		// migration may rightly take longer than any store operation.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrateLock, schema); err != nil {
			return err
		}
		if schema != "" {
			ident := pgx.Identifier{schema}.Sanitize()
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`,
				schema).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				if _, err := tx.Exec(ctx, `CREATE SCHEMA `+ident); err != nil {
					return err
				}
			}
			// The connection's search_path named the schema before it
			// existed; say it again so the tables land in it.
			if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+ident); err != nil {
				return err
			}
		}
		return sqlstore.Migrate(ctx, conn{q: tx}, dialect, migrations, now)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "3F000" { // invalid_schema_name: the DSN's search_path names none that exists
		var path string
		_ = pool.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&path)
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"%s: the store URL's search_path (%s) names no schema that exists: create it first (CREATE SCHEMA name;), or drop search_path from the URL to use the database's default: %w", op, path, err)
	}
	return translate(ctx, op, err)
}
