package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// ToolPut upserts tools of one source in one transaction that bumps the
// catalog revision once (on Postgres the catalog row lock also orders
// concurrent puts). An empty batch writes nothing.
func (s *Store) ToolPut(ctx context.Context, source switchboard.Source, tools []switchboard.Tool) error {
	const op = "tool put"
	if source.Rank() < 0 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: unknown source %q", op, source)
	}
	if len(tools) == 0 {
		return s.check(op)
	}
	return s.db.Tx(ctx, op, func(tx Tx) error {
		var rev int64
		if err := tx.QueryRow(ctx, sqlBumpCatalog+` RETURNING revision`).Scan(&rev); err != nil {
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
			if _, err := tx.Exec(ctx, s.sql(`INSERT INTO tools (source, name, source_rank, version, descriptor)
				VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (source, name) DO UPDATE SET
					source_rank = excluded.source_rank,
					version = excluded.version,
					descriptor = excluded.descriptor`),
				string(source), t.Name, source.Rank(), rev, desc); err != nil {
				return err
			}
		}
		return nil
	})
}

const sqlBumpCatalog = `UPDATE catalog SET revision = revision + 1 WHERE id = 1`

// ToolDelete removes one declaration and bumps the catalog revision.
func (s *Store) ToolDelete(ctx context.Context, source switchboard.Source, name string) error {
	const op = "tool delete"
	return s.db.Tx(ctx, op, func(tx Tx) error {
		n, err := tx.Exec(ctx, s.sql(`DELETE FROM tools WHERE source = ? AND name = ?`), string(source), name)
		if err != nil {
			return err
		}
		if n == 0 {
			return switchboard.Errorf(switchboard.CodeNotFound, "%s: source %q declares no tool %q", op, source, name)
		}
		_, err = tx.Exec(ctx, sqlBumpCatalog)
		return err
	})
}

// ToolList returns every declaration ordered by name (bytewise: SQLite
// compares TEXT so, the Postgres column is COLLATE "C"), then source rank,
// lowest precedence first.
func (s *Store) ToolList(ctx context.Context) ([]switchboard.Tool, error) {
	const op = "tool list"
	tools := []switchboard.Tool{}
	err := s.read(ctx, op, func(q Reader) error {
		rows, err := q.Query(ctx, `SELECT source, version, descriptor FROM tools ORDER BY name, source_rank`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				source  string
				version int64
				desc    json.RawMessage
			)
			if err := rows.Scan(&source, &version, scanJSON(&desc)); err != nil {
				return err
			}
			t, err := decodeTool(desc, switchboard.Source(source), version)
			if err != nil {
				return err
			}
			tools = append(tools, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return tools, nil
}

// CatalogRevision returns the catalog write counter.
func (s *Store) CatalogRevision(ctx context.Context) (int64, error) {
	var rev int64
	err := s.read(ctx, "catalog revision", func(q Reader) error {
		return q.QueryRow(ctx, `SELECT revision FROM catalog WHERE id = 1`).Scan(&rev)
	})
	if err != nil {
		return 0, err
	}
	return rev, nil
}
