package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// PanelRegistrationPut upserts regs in one transaction; see
// switchboard.Store.
func (s *Store) PanelRegistrationPut(ctx context.Context, regs []switchboard.PanelRegistration, at time.Time) error {
	const op = "panel registration put"
	if err := s.check(op); err != nil {
		return err
	}
	for _, r := range regs {
		if r.Kind != switchboard.RegistrationPanel && r.Kind != switchboard.RegistrationAdapter {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: kind %q is not panel or adapter", op, r.Kind)
		}
		if r.Name == "" {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a %s has no name", op, r.Kind)
		}
		if d := bytes.TrimSpace(r.Definition); len(d) == 0 || d[0] != '{' || !json.Valid(d) {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %s %s: the definition is not a JSON object", op, r.Kind, r.Name)
		}
	}
	if len(regs) == 0 {
		return nil
	}
	at = s.stamp(at)
	return s.db.Tx(ctx, op, func(tx Tx) error {
		for _, r := range regs {
			if _, err := tx.Exec(ctx, s.sql(`INSERT INTO panel_registrations (kind, name, definition, updated_at)
				VALUES (?, ?, ?, ?)
				ON CONFLICT (kind, name) DO UPDATE SET definition = excluded.definition, updated_at = excluded.updated_at`),
				r.Kind, r.Name, string(r.Definition), s.time(at)); err != nil {
				return err
			}
		}
		return nil
	})
}

// PanelRegistrationDelete removes one registration.
func (s *Store) PanelRegistrationDelete(ctx context.Context, kind, name string) error {
	const op = "panel registration delete"
	if err := s.check(op); err != nil {
		return err
	}
	return s.db.Write(ctx, op, func(q Querier) error {
		n, err := q.Exec(ctx, s.sql(`DELETE FROM panel_registrations WHERE kind = ? AND name = ?`), kind, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound(kind, name)
		}
		return nil
	})
}

// PanelRegistrationList returns every registration by kind, then name.
func (s *Store) PanelRegistrationList(ctx context.Context) ([]switchboard.PanelRegistration, error) {
	const op = "panel registration list"
	out := []switchboard.PanelRegistration{}
	err := s.read(ctx, op, func(q Reader) error {
		rows, err := q.Query(ctx, `SELECT kind, name, definition, updated_at FROM panel_registrations ORDER BY kind, name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r switchboard.PanelRegistration
			if err := rows.Scan(&r.Kind, &r.Name, scanJSON(&r.Definition), scanTime(&r.UpdatedAt)); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
