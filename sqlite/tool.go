package sqlite

import (
	"context"
	"database/sql"

	"github.com/switchboardhq/switchboard"
)

// ToolPut upserts tools of one source in one transaction that bumps the
// catalog revision once. An empty batch writes nothing.
func (s *Store) ToolPut(ctx context.Context, source switchboard.Source, tools []switchboard.Tool) error {
	const op = "tool put"
	if source.Rank() < 0 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: unknown source %q", op, source)
	}
	if len(tools) == 0 {
		return s.check(op)
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		var rev int64
		if err := tx.QueryRowContext(ctx,
			`UPDATE catalog SET revision = revision + 1 WHERE id = 1 RETURNING revision`).Scan(&rev); err != nil {
			return err
		}
		seen := make(map[string]bool, len(tools))
		for _, t := range tools {
			if t.Name == "" {
				return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a tool has no name", op)
			}
			if seen[t.Name] {
				return switchboard.Errorf(switchboard.CodeConflict, "%s: tool %q appears twice in one batch", op, t.Name)
			}
			seen[t.Name] = true
			desc, err := encodeTool(t, source, rev)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO tools (source, name, source_rank, version, descriptor)
				VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (source, name) DO UPDATE SET
					source_rank = excluded.source_rank,
					version = excluded.version,
					descriptor = excluded.descriptor`,
				string(source), t.Name, source.Rank(), rev, desc); err != nil {
				return err
			}
		}
		return nil
	})
}

// ToolDelete removes one declaration and bumps the catalog revision.
func (s *Store) ToolDelete(ctx context.Context, source switchboard.Source, name string) error {
	const op = "tool delete"
	return s.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM tools WHERE source = ? AND name = ?`, string(source), name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return switchboard.Errorf(switchboard.CodeNotFound, "%s: source %q declares no tool %q", op, source, name)
		}
		_, err = tx.ExecContext(ctx, `UPDATE catalog SET revision = revision + 1 WHERE id = 1`)
		return err
	})
}

// ToolList returns every declaration ordered by name (bytewise), then
// source rank, lowest precedence first.
func (s *Store) ToolList(ctx context.Context) ([]switchboard.Tool, error) {
	const op = "tool list"
	if err := s.check(op); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT source, version, descriptor FROM tools ORDER BY name, source_rank`)
	if err != nil {
		return nil, translate(ctx, op, err)
	}
	defer rows.Close()
	tools := []switchboard.Tool{}
	for rows.Next() {
		var (
			source  string
			version int64
			desc    string
		)
		if err := rows.Scan(&source, &version, &desc); err != nil {
			return nil, translate(ctx, op, err)
		}
		t, err := decodeTool(desc, switchboard.Source(source), version)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(ctx, op, err)
	}
	return tools, nil
}

// CatalogRevision returns the catalog write counter.
func (s *Store) CatalogRevision(ctx context.Context) (int64, error) {
	const op = "catalog revision"
	if err := s.check(op); err != nil {
		return 0, err
	}
	var rev int64
	if err := s.r.QueryRowContext(ctx, `SELECT revision FROM catalog WHERE id = 1`).Scan(&rev); err != nil {
		return 0, translate(ctx, op, err)
	}
	return rev, nil
}
