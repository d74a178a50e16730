package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// translate turns a database/sql or SQLite error into a coded
// *switchboard.Error (sqlstore.Translate, with classify).
func translate(ctx context.Context, op string, err error) error {
	return sqlstore.Translate(ctx, op, err, classify)
}

// classify codes a database/sql or SQLite error: unique violations are
// CONFLICT, a busy, locked or failing database UNAVAILABLE, other
// constraint and type errors INVALID_INPUT.
func classify(err error) switchboard.Code {
	if errors.Is(err, sql.ErrConnDone) {
		return switchboard.CodeUnavailable
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return switchboard.CodeConflict
	}
	// Extended codes carry the primary code in the low byte.
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_PERM:
		return switchboard.CodeUnavailable
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH:
		return switchboard.CodeInvalidInput
	}
	return ""
}

// isConstraint reports whether err is a constraint violation (a unique
// key, the primary key, a check).
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}
