package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

// ChatGet returns the history of a chat session, or NOT_FOUND.
func (s *Store) ChatGet(ctx context.Context, sessionID string) (switchboard.ChatHistory, error) {
	const op = "chat get"
	h := switchboard.ChatHistory{SessionID: sessionID}
	if err := s.check(op); err != nil {
		return h, err
	}
	var (
		msgs    string
		updated time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT owner, messages::text, revision, updated_at FROM chat_history WHERE session_id = $1`, sessionID).
		Scan(&h.Owner, &msgs, &h.Revision, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, switchboard.Errorf(switchboard.CodeNotFound, "%s: no history for chat session %q", op, sessionID)
	}
	if err != nil {
		return h, translate(ctx, op, err)
	}
	h.Messages = []byte(msgs)
	h.UpdatedAt = updated.UTC()
	return h, nil
}

// ChatPut stores h.Messages as the history of h.SessionID, creating the row
// (with h.Owner) or replacing the messages of an existing one (its owner is
// kept), and returns the stored record with its new revision.
func (s *Store) ChatPut(ctx context.Context, h switchboard.ChatHistory) (switchboard.ChatHistory, error) {
	const op = "chat put"
	if h.SessionID == "" {
		return h, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: session id is required", op)
	}
	if err := s.check(op); err != nil {
		return h, err
	}
	msgs := string(h.Messages)
	if len(h.Messages) == 0 {
		msgs = "[]"
	}
	if h.UpdatedAt.IsZero() {
		h.UpdatedAt = s.now()
	}
	h.UpdatedAt = h.UpdatedAt.Truncate(time.Microsecond).UTC()
	err := s.pool.QueryRow(ctx, `INSERT INTO chat_history (session_id, owner, messages, revision, updated_at)
		VALUES ($1, $2, $3::json, 1, $4)
		ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages,
			revision = chat_history.revision + 1, updated_at = excluded.updated_at
		RETURNING owner, revision`,
		h.SessionID, h.Owner, msgs, h.UpdatedAt).Scan(&h.Owner, &h.Revision)
	if err != nil {
		return h, translate(ctx, op, err)
	}
	h.Messages = []byte(msgs)
	return h, nil
}
