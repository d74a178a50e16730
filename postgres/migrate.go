package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/switchboardhq/switchboard"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLock is the first key of the advisory lock taken while migrating;
// the second is the schema name's hash, so different schemas migrate in
// parallel and replicas of one schema take turns.
const migrateLock int32 = 0x53574244 // "SWBD"

// migration is one embedded file, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".sql")
		num, name, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number", f)
		}
		b, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migration version %d appears twice", ms[i].version)
		}
	}
	return ms, nil
}

// migrate creates the schema if needed and applies every pending migration
// in one transaction holding a transaction-scoped advisory lock: a second
// replica waits, then finds nothing left to do; a failed migration leaves
// the schema as it was.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	const op = "migrate postgres"
	ms, err := migrations()
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "%s: %w", op, err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
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
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    int         PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		applied := map[int]bool{}
		for _, v := range versions {
			applied[int(v)] = true
		}
		known := map[int]bool{}
		for _, m := range ms {
			known[m.version] = true
		}
		for v := range applied {
			if !known[v] {
				// An older binary must not write to a schema it does not know.
				return switchboard.Errorf(switchboard.CodeUnavailable,
					"%s: database has migration %d, which this binary does not know; upgrade switchboard", op, v)
			}
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			// No arguments: pgx uses the simple protocol, which runs
			// every statement of the file.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("%04d_%s: %w", m.version, m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`,
				m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
	return translate(ctx, op, err)
}
