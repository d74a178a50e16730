package sqlstore

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Signing keys (migration 0034): the keys switchboard signs assertions
// with, shared by every replica. The private key is kept as base64 text so
// both drivers store it in a plain text column.

// SigningKeyCreate inserts a key; an existing ID is a CONFLICT.
func (s *Store) SigningKeyCreate(ctx context.Context, k switchboard.SigningKey) error {
	const op = "signing key create"
	if k.ID == "" || k.Algorithm == "" || len(k.Private) == 0 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, algorithm and key are required", op)
	}
	k.CreatedAt = s.stamp(k.CreatedAt)
	return s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO signing_keys (id, alg, private_key, created_at) VALUES (?, ?, ?, ?)`),
			k.ID, k.Algorithm, base64.StdEncoding.EncodeToString(k.Private), s.time(k.CreatedAt))
		return err
	})
}

// SigningKeyList returns the keys created at or after since, newest first.
func (s *Store) SigningKeyList(ctx context.Context, since time.Time) ([]switchboard.SigningKey, error) {
	out := []switchboard.SigningKey{}
	err := s.read(ctx, "signing key list", func(q Reader) error {
		rows, err := q.Query(ctx, s.sql(`SELECT id, alg, private_key, created_at FROM signing_keys
			WHERE created_at >= ? ORDER BY created_at DESC, id DESC`), s.d.Time(normTime(since)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				k    switchboard.SigningKey
				priv string
			)
			if err := rows.Scan(&k.ID, &k.Algorithm, &priv, scanTime(&k.CreatedAt)); err != nil {
				return err
			}
			if k.Private, err = base64.StdEncoding.DecodeString(priv); err != nil {
				return err
			}
			out = append(out, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SigningKeyDelete removes keys created before before.
func (s *Store) SigningKeyDelete(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.db.Write(ctx, "signing key delete", func(q Querier) error {
		c, err := q.Exec(ctx, s.sql(`DELETE FROM signing_keys WHERE created_at < ?`), s.d.Time(normTime(before)))
		n = int(c)
		return err
	})
	return n, err
}
