package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

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
		updated int64
	)
	err := s.r.QueryRowContext(ctx, `SELECT owner, messages, revision, updated_at FROM chat_history WHERE session_id = ?`, sessionID).
		Scan(&h.Owner, &msgs, &h.Revision, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return h, switchboard.Errorf(switchboard.CodeNotFound, "%s: no history for chat session %q", op, sessionID)
	}
	if err != nil {
		return h, translate(ctx, op, err)
	}
	h.Messages = []byte(msgs)
	h.UpdatedAt = time.UnixMicro(updated).UTC()
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
	msgs, err := rawJSON("messages", h.Messages)
	if err != nil {
		return h, err
	}
	if msgs == nil {
		msgs = "[]"
	}
	if h.UpdatedAt.IsZero() {
		h.UpdatedAt = s.now()
	}
	h.UpdatedAt = normTime(h.UpdatedAt)
	err = s.write(ctx, op, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO chat_history (session_id, owner, messages, revision, updated_at)
			VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages,
				revision = chat_history.revision + 1, updated_at = excluded.updated_at
			RETURNING owner, revision`,
			h.SessionID, h.Owner, msgs, h.UpdatedAt.UnixMicro()).Scan(&h.Owner, &h.Revision)
	})
	if err != nil {
		return h, err
	}
	h.Messages = []byte(msgs.(string))
	return h, nil
}
