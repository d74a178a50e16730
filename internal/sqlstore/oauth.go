package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The embedded authorization server's records (migration 0043).

const oauthCols = `kind, id, ref, user_name, client_id, data, created_at, expires_at, used_at, revoked_at`

func scanOAuth(row Row) (switchboard.OAuthRecord, error) {
	var (
		r    switchboard.OAuthRecord
		data string
	)
	err := row.Scan(&r.Kind, &r.ID, &r.Ref, &r.User, &r.Client, &data,
		scanTime(&r.CreatedAt), scanTime(&r.ExpiresAt), scanTime(&r.UsedAt), scanTime(&r.RevokedAt))
	r.Data = []byte(data)
	return r, err
}

// OAuthPut inserts r; an existing kind and ID is a CONFLICT.
func (s *Store) OAuthPut(ctx context.Context, r switchboard.OAuthRecord) error {
	const op = "oauth put"
	if r.Kind == "" || r.ID == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: kind and id are required", op)
	}
	if len(r.Data) == 0 {
		r.Data = []byte("{}")
	}
	r.CreatedAt = s.stamp(r.CreatedAt)
	return s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO oauth_records (`+oauthCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			r.Kind, r.ID, r.Ref, r.User, r.Client, string(r.Data), s.time(r.CreatedAt), s.time(r.ExpiresAt), s.time(r.UsedAt), s.time(r.RevokedAt))
		return err
	})
}

// OAuthGet returns one record or NOT_FOUND.
func (s *Store) OAuthGet(ctx context.Context, kind, id string) (switchboard.OAuthRecord, error) {
	const op = "oauth get"
	var r switchboard.OAuthRecord
	err := s.read(ctx, op, func(q Reader) error {
		var err error
		r, err = scanOAuth(q.QueryRow(ctx, s.sql(`SELECT `+oauthCols+` FROM oauth_records WHERE kind = ? AND id = ?`), kind, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(kind, id)
		}
		return err
	})
	return r, err
}

// OAuthUpdate replaces User and Data of an unused record.
func (s *Store) OAuthUpdate(ctx context.Context, kind, id, user string, data []byte) error {
	const op = "oauth update"
	return s.db.Write(ctx, op, func(q Querier) error {
		n, err := q.Exec(ctx, s.sql(`UPDATE oauth_records SET user_name = ?, data = ? WHERE kind = ? AND id = ? AND used_at IS NULL`),
			user, string(data), kind, id)
		if err != nil || n == 1 {
			return err
		}
		var found string // the record exists, so it was used
		err = q.QueryRow(ctx, s.sql(`SELECT kind FROM oauth_records WHERE kind = ? AND id = ?`), kind, id).Scan(&found)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(kind, id)
		}
		if err != nil {
			return err
		}
		return switchboard.Errorf(switchboard.CodeConflict, "%s: %s %q was used already", op, kind, id)
	})
}

// OAuthUse stamps used_at once: of two callers (on any replicas) only one
// sees the record unused; the other gets CONFLICT and the record.
func (s *Store) OAuthUse(ctx context.Context, kind, id string, at time.Time) (switchboard.OAuthRecord, error) {
	const op = "oauth use"
	at = s.stamp(at)
	var r switchboard.OAuthRecord
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		r, err = scanOAuth(q.QueryRow(ctx, s.sql(`UPDATE oauth_records SET used_at = ?
			WHERE kind = ? AND id = ? AND used_at IS NULL RETURNING `+oauthCols), s.time(at), kind, id))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		r, err = scanOAuth(q.QueryRow(ctx, s.sql(`SELECT `+oauthCols+` FROM oauth_records WHERE kind = ? AND id = ?`), kind, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(kind, id)
		}
		if err != nil {
			return err
		}
		return switchboard.Errorf(switchboard.CodeConflict, "%s: %s %q was used already", op, kind, id)
	})
	return r, err
}

// OAuthRevoke stamps revoked_at (keeping a first one).
func (s *Store) OAuthRevoke(ctx context.Context, kind, id string, at time.Time) (switchboard.OAuthRecord, error) {
	const op = "oauth revoke"
	at = s.stamp(at)
	var r switchboard.OAuthRecord
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		r, err = scanOAuth(q.QueryRow(ctx, s.sql(`UPDATE oauth_records SET revoked_at = coalesce(revoked_at, ?)
			WHERE kind = ? AND id = ? RETURNING `+oauthCols), s.time(at), kind, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(kind, id)
		}
		return err
	})
	return r, err
}

// OAuthList returns kind's records for user ("" for all), newest first.
func (s *Store) OAuthList(ctx context.Context, kind, user string) ([]switchboard.OAuthRecord, error) {
	out := []switchboard.OAuthRecord{}
	err := s.read(ctx, "oauth list", func(q Reader) error {
		query, args := `SELECT `+oauthCols+` FROM oauth_records WHERE kind = ?`, []any{kind}
		if user != "" {
			query += ` AND user_name = ?`
			args = append(args, user)
		}
		rows, err := q.Query(ctx, s.sql(query+` ORDER BY created_at DESC, id DESC`), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanOAuth(rows)
			if err != nil {
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

// OAuthDeleteExpired removes records whose expiry is before before.
func (s *Store) OAuthDeleteExpired(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.db.Write(ctx, "oauth delete expired", func(q Querier) error {
		c, err := q.Exec(ctx, s.sql(`DELETE FROM oauth_records WHERE expires_at IS NOT NULL AND expires_at < ?`), s.d.Time(normTime(before)))
		n = int(c)
		return err
	})
	return n, err
}
