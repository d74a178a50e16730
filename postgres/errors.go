package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/switchboardhq/switchboard"
)

// translate turns a pgx or Postgres error into a coded *switchboard.Error,
// keeping errors that already carry a code.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var coded *switchboard.Error
	if errors.As(err, &coded) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(ctxErr, context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return switchboard.Errorf(switchboard.CodeTimeout, "%s: %w", op, err)
		}
		return switchboard.Errorf(switchboard.CodeCancelled, "%s: %w", op, err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return switchboard.Errorf(switchboard.CodeNotFound, "%s: not found", op)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch c := pe.Code; {
		case c == "23505": // unique_violation
			return switchboard.Errorf(switchboard.CodeConflict, "%s: %w", op, err)
		case strings.HasPrefix(c, "23"), strings.HasPrefix(c, "22"): // integrity, data exception
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %w", op, err)
		case c == "40001", c == "40P01", c == "55P03", // serialization, deadlock, lock not available
			strings.HasPrefix(c, "08"), strings.HasPrefix(c, "53"), strings.HasPrefix(c, "57P"),
			c == "25006": // read_only_sql_transaction: a standby
			return switchboard.Errorf(switchboard.CodeUnavailable, "%s: %w", op, err)
		}
		return switchboard.Errorf(switchboard.CodeInternal, "%s: %w", op, err)
	}
	// Without a server error the connection or the pool failed.
	var (
		ce   *pgconn.ConnectError
		nerr net.Error
	)
	if errors.As(err, &ce) || errors.As(err, &nerr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return switchboard.Errorf(switchboard.CodeUnavailable, "%s: %w", op, err)
	}
	return switchboard.Errorf(switchboard.CodeInternal, "%s: %w", op, err)
}
