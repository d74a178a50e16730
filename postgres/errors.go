package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// translate turns a pgx or Postgres error into a coded *switchboard.Error
// (sqlstore.Translate, with classify).
func translate(ctx context.Context, op string, err error) error {
	return sqlstore.Translate(ctx, op, err, classify)
}

// classify codes a pgx or Postgres error by its SQLSTATE: unique
// violations are CONFLICT, integrity and data errors INVALID_INPUT,
// serialization failures, deadlocks, timeouts, a standby, a failing server or
// connection UNAVAILABLE.
func classify(err error) switchboard.Code {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch c := pe.Code; {
		case c == "23505": // unique_violation
			return switchboard.CodeConflict
		case strings.HasPrefix(c, "23"), strings.HasPrefix(c, "22"): // integrity, data exception
			return switchboard.CodeInvalidInput
		case c == "40001", c == "40P01", c == "55P03", c == "57014", // serialization, deadlock, lock not available, canceled
			strings.HasPrefix(c, "08"), strings.HasPrefix(c, "53"), strings.HasPrefix(c, "57P"),
			c == "25006": // read_only_sql_transaction: a standby
			return switchboard.CodeUnavailable
		}
		return switchboard.CodeInternal
	}
	// Without a server error the connection or the pool failed.
	var (
		ce   *pgconn.ConnectError
		nerr net.Error
	)
	if errors.As(err, &ce) || errors.As(err, &nerr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return switchboard.CodeUnavailable
	}
	return ""
}
