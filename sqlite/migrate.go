package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

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

// migrate applies every pending migration in one IMMEDIATE transaction, so
// two processes opening the same file at once apply each migration once and
// a failed migration leaves the schema as it was.
func migrate(ctx context.Context, db *sql.DB, now time.Time) error {
	const op = "migrate sqlite"
	ms, err := migrations()
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "%s: %w", op, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return translate(ctx, op, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return translate(ctx, op, err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return translate(ctx, op, err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return translate(ctx, op, err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return translate(ctx, op, err)
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
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return translate(ctx, fmt.Sprintf("%s %04d_%s", op, m.version, m.name), err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, now.UnixMicro()); err != nil {
			return translate(ctx, op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return translate(ctx, op, err)
	}
	return nil
}
