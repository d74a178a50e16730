package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/switchboardhq/switchboard"
)

// ChatGet returns the history of a chat session, or NOT_FOUND.
func (s *Store) ChatGet(ctx context.Context, sessionID string) (switchboard.ChatHistory, error) {
	const op = "chat get"
	h := switchboard.ChatHistory{SessionID: sessionID}
	err := s.read(ctx, op, func(q Reader) error {
		err := q.QueryRow(ctx, s.sql(`SELECT owner, messages, revision, updated_at FROM chat_history WHERE session_id = ?`), sessionID).
			Scan(&h.Owner, scanJSON(&h.Messages), &h.Revision, scanTime(&h.UpdatedAt))
		if errors.Is(err, sql.ErrNoRows) {
			return switchboard.Errorf(switchboard.CodeNotFound, "%s: no history for chat session %q", op, sessionID)
		}
		return err
	})
	return h, err
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
	h.UpdatedAt = normTime(s.stamp(h.UpdatedAt))
	err = s.db.Write(ctx, op, func(q Querier) error {
		return q.QueryRow(ctx, s.sql(`INSERT INTO chat_history (session_id, owner, messages, revision, updated_at)
			VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages,
				revision = chat_history.revision + 1, updated_at = excluded.updated_at
			RETURNING owner, revision`),
			h.SessionID, h.Owner, msgs, s.time(h.UpdatedAt)).Scan(&h.Owner, &h.Revision)
	})
	if err != nil {
		return h, err
	}
	h.Messages = []byte(msgs.(string))
	return h, nil
}
