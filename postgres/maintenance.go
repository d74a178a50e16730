package postgres

import "context"

// Autovacuum reports whether the server runs autovacuum (SHOW
// autovacuum). With it off, nothing vacuums the row versions the call
// path leaves dead (a finished call's record is rewritten once, a
// revoked token, a closed session…) or refreshes the planner's
// statistics of the store's tables, so they and their indexes keep
// growing; serve logs a warning and doctor warns (docs/operations.md,
// "Postgres maintenance").
func (s *Store) Autovacuum(ctx context.Context) (bool, error) {
	const op = "read the server's autovacuum setting"
	if err := s.check(op); err != nil {
		return false, err
	}
	ctx, cancel := within(ctx, s.deadline())
	defer cancel()
	var v string
	if err := s.pool.QueryRow(ctx, "SHOW autovacuum").Scan(&v); err != nil {
		return false, s.translate(ctx, op, err)
	}
	return v == "on", nil
}
