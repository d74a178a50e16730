package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/switchboardhq/switchboard"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// translate turns a database/sql or SQLite error into a coded
// *switchboard.Error, keeping errors that already carry a code.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var coded *switchboard.Error
	if errors.As(err, &coded) {
		return err
	}
	// A cancelled statement surfaces as SQLITE_INTERRUPT or a driver error;
	// the context says what really happened.
	if ctxErr := ctx.Err(); ctxErr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(ctxErr, context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return switchboard.Errorf(switchboard.CodeTimeout, "%s: %w", op, err)
		}
		return switchboard.Errorf(switchboard.CodeCancelled, "%s: %w", op, err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return switchboard.Errorf(switchboard.CodeNotFound, "%s: not found", op)
	}
	if errors.Is(err, sql.ErrConnDone) {
		return switchboard.Errorf(switchboard.CodeUnavailable, "%s: %w", op, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return switchboard.Errorf(switchboard.CodeConflict, "%s: %w", op, err)
		}
		// Extended codes carry the primary code in the low byte.
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_PERM:
			return switchboard.Errorf(switchboard.CodeUnavailable, "%s: %w", op, err)
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH:
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %w", op, err)
		}
	}
	return switchboard.Errorf(switchboard.CodeInternal, "%s: %w", op, err)
}

// isConstraint reports whether err is a constraint violation (a unique
// key, the primary key, a check).
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}
