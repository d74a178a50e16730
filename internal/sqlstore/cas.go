package sqlstore

import (
	"context"
	"database/sql"
	"errors"
)

// swap is one compare-and-swap: update (an UPDATE ... WHERE <compare>
// RETURNING the row's columns, binding args) runs on q; when it matches
// nothing, byID (a SELECT of the same columns by id) reads the row the
// compare failed against, and conflict says so. A row that does not exist
// is NOT_FOUND. A concurrent winner makes the loser match nothing (SQLite
// has one writer; under Postgres's READ COMMITTED the loser waits for the
// winner's row lock and re-checks the compare).
func swap[T any](ctx context.Context, s *Store, q Querier, kind, id string, scan func(Row) (T, error),
	update string, args []any, byID string) (stored T, conflict bool, err error) {
	stored, err = scan(q.QueryRow(ctx, s.sql(update), args...))
	if !errors.Is(err, sql.ErrNoRows) {
		return stored, false, err
	}
	stored, err = scan(q.QueryRow(ctx, s.sql(byID), id))
	if errors.Is(err, sql.ErrNoRows) {
		return stored, false, notFound(kind, id)
	}
	return stored, err == nil, err
}

// get reads one row by id with byID on the reader; NOT_FOUND when there is
// none.
func get[T any](ctx context.Context, s *Store, op, kind, id string, scan func(Row) (T, error), byID string) (T, error) {
	var v T
	err := s.read(ctx, op, func(q Reader) error {
		var err error
		v, err = scan(q.QueryRow(ctx, s.sql(byID), id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(kind, id)
		}
		return err
	})
	return v, err
}
