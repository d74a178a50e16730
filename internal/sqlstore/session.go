package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/switchboardhq/switchboard"
)

// SessionCreate stores a new session; an existing ID is a CONFLICT.
func (s *Store) SessionCreate(ctx context.Context, sess switchboard.Session) error {
	const op = "session create"
	if err := s.check(op); err != nil {
		return err
	}
	if sess.ID == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id is required", op)
	}
	canvas, err := rawJSON("session canvas policy", sess.Canvas)
	if err != nil {
		return err
	}
	if canvas == nil {
		canvas = "{}"
	}
	err = s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO sessions (id, token_hash, principal, scope, created_at, closed_at, replica, canvas) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
			sess.ID, sess.TokenHash, sess.Principal, sessionScope(sess.Scope), s.time(sess.CreatedAt), s.time(sess.ClosedAt), sess.Replica, canvas)
		return err
	})
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		return switchboard.Errorf(switchboard.CodeConflict, "%s: session %q already exists", op, sess.ID)
	}
	return err
}

// sessionCols are the columns scanSession reads.
const sessionCols = `id, token_hash, principal, scope, created_at, closed_at, replica, tools, report, stream, stream_at, seen_at, canvas`

// SessionGet returns one session or NOT_FOUND.
func (s *Store) SessionGet(ctx context.Context, id string) (switchboard.Session, error) {
	return get(ctx, s, "session get", "session", id, scanSession, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`)
}

func scanSession(r Row) (switchboard.Session, error) {
	var (
		sess                         switchboard.Session
		scope, tools, report, canvas json.RawMessage
	)
	err := r.Scan(&sess.ID, &sess.TokenHash, &sess.Principal, scanJSON(&scope), scanTime(&sess.CreatedAt), scanTime(&sess.ClosedAt),
		&sess.Replica, scanJSON(&tools), scanJSON(&report), &sess.Stream, scanTime(&sess.StreamAt), scanTime(&sess.SeenAt), scanJSON(&canvas))
	if err != nil {
		return sess, err
	}
	if len(canvas) > 0 && string(canvas) != "{}" {
		sess.Canvas = canvas
	}
	if err := json.Unmarshal(scope, &sess.Scope); err != nil {
		return sess, switchboard.Errorf(switchboard.CodeInternal, "session %s: stored scope does not decode: %w", sess.ID, err)
	}
	if err := json.Unmarshal(tools, &sess.Tools); err != nil {
		return sess, switchboard.Errorf(switchboard.CodeInternal, "session %s: stored tools do not decode: %w", sess.ID, err)
	}
	if len(sess.Tools) == 0 {
		sess.Tools = nil
	}
	if err := json.Unmarshal(report, &sess.Report); err != nil {
		return sess, switchboard.Errorf(switchboard.CodeInternal, "session %s: stored report does not decode: %w", sess.ID, err)
	}
	return sess, nil
}

// SessionList returns the open sessions heard from since f.SeenSince or
// with a stream attached, newest first.
func (s *Store) SessionList(ctx context.Context, f switchboard.SessionFilter) ([]switchboard.Session, error) {
	n := f.Limit
	if n <= 0 {
		n = MaxActivityLimit
	}
	where, args := `closed_at IS NULL`, []any{}
	if !f.SeenSince.IsZero() {
		where, args = where+` AND (seen_at >= ? OR stream <> '')`, append(args, s.time(f.SeenSince))
	}
	return list(ctx, s, "session list", `SELECT `+sessionCols+` FROM sessions WHERE `+where+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, min(n, MaxActivityLimit)), scanSession)
}

// SessionAdvertise stores a tab's advertisement.
func (s *Store) SessionAdvertise(ctx context.Context, id string, tools []switchboard.Tool, at time.Time) error {
	const op = "session advertise"
	if tools == nil {
		tools = []switchboard.Tool{}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: tools do not encode: %v", op, err)
	}
	return s.sessionPut(ctx, op, id, "tools", string(b), at)
}

// SessionReport stores a tab's workspace report.
func (s *Store) SessionReport(ctx context.Context, id string, r switchboard.TabReport, at time.Time) error {
	const op = "session report"
	b, err := json.Marshal(r)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: the report does not encode: %v", op, err)
	}
	return s.sessionPut(ctx, op, id, "report", string(b), at)
}

// sessionPut writes one JSON column of an open session and stamps seen_at.
func (s *Store) sessionPut(ctx context.Context, op, id, col, doc string, at time.Time) error {
	if err := s.check(op); err != nil {
		return err
	}
	at = s.stamp(at)
	return s.db.Tx(ctx, op, func(tx Tx) error {
		n, err := tx.Exec(ctx, s.sql(`UPDATE sessions SET `+col+` = ?, seen_at = ? WHERE id = ? AND closed_at IS NULL`), doc, s.time(at), id)
		if err != nil || n == 1 {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, s.sql(`SELECT 1 FROM sessions WHERE id = ?`), id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("session", id)
		}
		if err == nil {
			err = switchboard.Errorf(switchboard.CodeSessionGone, "session %s was closed", id)
		}
		return err
	})
}

// SessionStream records which replica holds a tab's stream.
func (s *Store) SessionStream(ctx context.Context, id, replica string, attached bool, at time.Time) error {
	const op = "session stream"
	if err := s.check(op); err != nil {
		return err
	}
	if replica == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: replica is required", op)
	}
	at = s.stamp(at)
	return s.db.Tx(ctx, op, func(tx Tx) error {
		var (
			n   int64
			err error
		)
		if attached {
			n, err = tx.Exec(ctx, s.sql(`UPDATE sessions SET stream = ?, stream_at = ?, seen_at = ? WHERE id = ?`), replica, s.time(at), s.time(at), id)
		} else {
			n, err = tx.Exec(ctx, s.sql(`UPDATE sessions SET stream = '', stream_at = ?, seen_at = ? WHERE id = ? AND stream = ?`), s.time(at), s.time(at), id, replica)
		}
		if err != nil || n == 1 {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, s.sql(`SELECT 1 FROM sessions WHERE id = ?`), id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("session", id)
		}
		return err
	})
}

// SessionClose marks a session closed. Closing a closed session keeps its
// first close time and succeeds; an unknown session is NOT_FOUND.
func (s *Store) SessionClose(ctx context.Context, id string, at time.Time) error {
	const op = "session close"
	at = s.stamp(at)
	return s.db.Tx(ctx, op, func(tx Tx) error {
		n, err := tx.Exec(ctx, s.sql(`UPDATE sessions SET closed_at = ? WHERE id = ? AND closed_at IS NULL`), s.time(at), id)
		if err != nil || n == 1 {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, s.sql(`SELECT 1 FROM sessions WHERE id = ?`), id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("session", id)
		}
		return err
	})
}
