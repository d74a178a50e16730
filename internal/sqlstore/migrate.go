package sqlstore

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Migration is one file of a driver's migrations, NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the *.sql files at the top of fsys in version order.
func Migrations(fsys fs.FS) ([]Migration, error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".sql")
		num, name, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number", f)
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migration version %d appears twice", ms[i].Version)
		}
	}
	return ms, nil
}

// Migrate applies every migration of fsys that q's database has not seen,
// recording each in schema_migrations with applied_at = now. q is the
// driver's migration transaction (holding whatever lock keeps two
// processes from migrating at once), so a failed migration leaves the
// schema as it was. A database that has a migration this binary does not
// know is refused with UNAVAILABLE: an older binary must not write to a
// schema it does not know.
func Migrate(ctx context.Context, q Reader, d Dialect, fsys fs.FS, now time.Time) error {
	const op = "migrate"
	ms, err := Migrations(fsys)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "%s: %w", op, err)
	}
	if _, err := q.Exec(ctx, d.MigrationsTable); err != nil {
		return err
	}
	rows, err := q.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return err
	}
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.Version] = true
	}
	for v := range applied {
		if !known[v] {
			return switchboard.Errorf(switchboard.CodeUnavailable,
				"%s: database has migration %d, which this binary does not know; upgrade switchboard", op, v)
		}
	}
	record := `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
	if d.Numbered {
		record = Numbered(record)
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		// No arguments: pgx then uses the simple protocol, which runs every
		// statement of the file.
		if _, err := q.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("%04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := q.Exec(ctx, record, m.Version, m.Name, d.Time(normTime(now))); err != nil {
			return err
		}
	}
	return nil
}
