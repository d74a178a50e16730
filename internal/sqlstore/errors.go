package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/switchboardhq/switchboard"
)

// Translate is the error translation both drivers share. nil stays nil and
// an error that already carries a code keeps it; then a cancelled or
// expired context is CANCELLED or TIMEOUT (a cancelled statement surfaces
// as a driver error; the context says what really happened), and no rows
// is NOT_FOUND. Anything else gets the code classify gives it, INTERNAL
// when that is "".
func Translate(ctx context.Context, op string, err error, classify func(error) switchboard.Code) error {
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
	if errors.Is(err, sql.ErrNoRows) { // pgx.ErrNoRows is sql.ErrNoRows too
		return switchboard.Errorf(switchboard.CodeNotFound, "%s: not found", op)
	}
	code := classify(err)
	if code == "" {
		code = switchboard.CodeInternal
	}
	return switchboard.Errorf(code, "%s: %w", op, err)
}

// Closed is the error of a call on a closed store.
func Closed(op string) error {
	return switchboard.Errorf(switchboard.CodeUnavailable, "%s: store is closed", op)
}
