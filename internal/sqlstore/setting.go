package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/switchboardhq/switchboard"
)

// SettingGet returns a run-time setting's value, or NOT_FOUND.
func (s *Store) SettingGet(ctx context.Context, key string) (json.RawMessage, error) {
	const op = "setting get"
	var v json.RawMessage
	err := s.read(ctx, op, func(q Reader) error {
		err := q.QueryRow(ctx, s.sql(`SELECT value FROM settings WHERE key = ?`), key).Scan(scanJSON(&v))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("setting", key)
		}
		return err
	})
	return v, err
}

// SettingPut replaces a run-time setting's value.
func (s *Store) SettingPut(ctx context.Context, key string, value json.RawMessage, at time.Time) error {
	const op = "setting put"
	if err := s.check(op); err != nil {
		return err
	}
	if key == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: key is required", op)
	}
	v, err := rawJSON("setting "+key, value)
	if err != nil {
		return err
	}
	if v == nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: setting %s has no value", op, key)
	}
	at = s.stamp(at)
	return s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`), key, v, s.time(at))
		return err
	})
}
