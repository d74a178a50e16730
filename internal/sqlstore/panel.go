package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/switchboardhq/switchboard"
)

const panelCols = `id, session_id, seq, version, doc, updated_at`

func scanPanel(r interface{ Scan(...any) error }, p *switchboard.PanelInstance) error {
	return r.Scan(&p.ID, &p.SessionID, &p.Seq, &p.Version, scanJSON(&p.Doc), scanTime(&p.UpdatedAt))
}

// PanelInstancePut inserts (prev 0) or replaces (stored version prev) a
// panel instance; see switchboard.Store.
func (s *Store) PanelInstancePut(ctx context.Context, p switchboard.PanelInstance, prev int64) (switchboard.PanelInstance, error) {
	const op = "panel instance put"
	if err := s.check(op); err != nil {
		return p, err
	}
	if p.ID == "" || p.SessionID == "" {
		return p, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id and session id are required", op)
	}
	if prev < 0 || p.Version <= prev {
		return p, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: version %d must be greater than the version it replaces (%d)", op, p.Version, prev)
	}
	doc, err := rawJSON("doc", p.Doc)
	if err != nil {
		return p, err
	}
	if doc == nil {
		return p, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: doc is required", op)
	}
	p.UpdatedAt = normTime(s.stamp(p.UpdatedAt))
	var cur switchboard.PanelInstance
	err = s.db.Write(ctx, op, func(q Querier) error {
		if prev == 0 {
			_, err := q.Exec(ctx, s.sql(`INSERT INTO panel_instances (`+panelCols+`) VALUES (?, ?, ?, ?, ?, ?)`),
				p.ID, p.SessionID, p.Seq, p.Version, doc, s.time(p.UpdatedAt))
			return err
		}
		err := q.QueryRow(ctx, s.sql(`UPDATE panel_instances SET version = ?, doc = ?, updated_at = ? WHERE id = ? AND version = ? RETURNING seq`),
			p.Version, doc, s.time(p.UpdatedAt), p.ID, prev).Scan(&p.Seq) // an update keeps the instance's place
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		err = scanPanel(q.QueryRow(ctx, s.sql(`SELECT `+panelCols+` FROM panel_instances WHERE id = ?`), p.ID), &cur)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("panel instance", p.ID)
		}
		if err != nil {
			return err
		}
		return switchboard.Errorf(switchboard.CodeConflict, "%s: panel instance %s is at version %d, not %d", op, p.ID, cur.Version, prev)
	})
	switch switchboard.CodeOf(err) {
	case "":
		p.Doc = []byte(doc.(string))
		return p, nil
	case switchboard.CodeConflict:
		if cur.ID == "" { // the insert met an existing id
			return p, switchboard.Errorf(switchboard.CodeConflict, "%s: panel instance %q already exists", op, p.ID)
		}
		return cur, err
	}
	return p, err
}

// PanelInstanceGet returns one panel instance or NOT_FOUND.
func (s *Store) PanelInstanceGet(ctx context.Context, id string) (switchboard.PanelInstance, error) {
	const op = "panel instance get"
	var p switchboard.PanelInstance
	err := s.read(ctx, op, func(q Reader) error {
		err := scanPanel(q.QueryRow(ctx, s.sql(`SELECT `+panelCols+` FROM panel_instances WHERE id = ?`), id), &p)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("panel instance", id)
		}
		return err
	})
	return p, err
}

// PanelInstanceList returns a session's panel instances in seq order.
func (s *Store) PanelInstanceList(ctx context.Context, sessionID string) ([]switchboard.PanelInstance, error) {
	const op = "panel instance list"
	var out []switchboard.PanelInstance
	err := s.read(ctx, op, func(q Reader) error {
		rows, err := q.Query(ctx, s.sql(`SELECT `+panelCols+` FROM panel_instances WHERE session_id = ? ORDER BY seq, id`), sessionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p switchboard.PanelInstance
			if err := scanPanel(rows, &p); err != nil {
				return err
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	return out, err
}

// PanelInstanceDelete removes one panel instance, if it exists.
func (s *Store) PanelInstanceDelete(ctx context.Context, id string) error {
	const op = "panel instance delete"
	return s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`DELETE FROM panel_instances WHERE id = ?`), id)
		return err
	})
}

// PanelInstanceDeleteSession removes a session's panel instances.
func (s *Store) PanelInstanceDeleteSession(ctx context.Context, sessionID string) (int, error) {
	const op = "panel instance delete session"
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(`DELETE FROM panel_instances WHERE session_id = ?`), sessionID)
		return err
	})
	return int(n), err
}
