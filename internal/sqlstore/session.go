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
	err := s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO sessions (id, token_hash, principal, scope, created_at, closed_at, replica) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			sess.ID, sess.TokenHash, sess.Principal, sessionScope(sess.Scope), s.time(sess.CreatedAt), s.time(sess.ClosedAt), sess.Replica)
		return err
	})
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		return switchboard.Errorf(switchboard.CodeConflict, "%s: session %q already exists", op, sess.ID)
	}
	return err
}

// SessionGet returns one session or NOT_FOUND.
func (s *Store) SessionGet(ctx context.Context, id string) (switchboard.Session, error) {
	const op = "session get"
	var (
		sess  switchboard.Session
		scope json.RawMessage
	)
	err := s.read(ctx, op, func(q Reader) error {
		err := q.QueryRow(ctx, s.sql(`SELECT id, token_hash, principal, scope, created_at, closed_at, replica FROM sessions WHERE id = ?`), id).
			Scan(&sess.ID, &sess.TokenHash, &sess.Principal, scanJSON(&scope), scanTime(&sess.CreatedAt), scanTime(&sess.ClosedAt), &sess.Replica)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(op, "session", id)
		}
		return err
	})
	if err == nil {
		err = json.Unmarshal(scope, &sess.Scope)
	}
	return sess, err
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
			return notFound(op, "session", id)
		}
		return err
	})
}
