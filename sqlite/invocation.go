package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

const invocationCols = `id, run_id, tool, tool_version, surface, session_id, caller, status,
	input, result, error, input_bytes, result_bytes, created_at, updated_at, finished_at, duration_ms`

// scanInvocation reads one row selected with invocationCols.
func scanInvocation(row interface{ Scan(...any) error }) (switchboard.Invocation, error) {
	var (
		inv                        switchboard.Invocation
		surface, status            string
		input, result, errJSON     sql.NullString
		created, updated, finished sql.NullInt64
	)
	if err := row.Scan(&inv.ID, &inv.RunID, &inv.Tool, &inv.ToolVersion, &surface, &inv.SessionID,
		&inv.Caller, &status, &input, &result, &errJSON, &inv.InputBytes, &inv.ResultBytes,
		&created, &updated, &finished, &inv.DurationMs); err != nil {
		return inv, err
	}
	inv.Surface = switchboard.Surface(surface)
	inv.Status = switchboard.Status(status)
	inv.Input = fromRawJSON(input)
	inv.Result = fromRawJSON(result)
	inv.CreatedAt = fromMicros(created)
	inv.UpdatedAt = fromMicros(updated)
	inv.FinishedAt = fromMicros(finished)
	var err error
	inv.Error, err = decodeError(errJSON)
	return inv, err
}

// InvocationCreate inserts a new record; an existing ID is a CONFLICT.
func (s *Store) InvocationCreate(ctx context.Context, inv switchboard.Invocation) error {
	const op = "invocation create"
	if err := s.check(op); err != nil {
		return err
	}
	if inv.ID == "" || inv.Status == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id and status are required", op)
	}
	input, err := rawJSON("input", inv.Input)
	if err != nil {
		return err
	}
	result, err := rawJSON("result", inv.Result)
	if err != nil {
		return err
	}
	errJSON, err := encodeError(inv.Error)
	if err != nil {
		return err
	}
	// One statement, so no explicit transaction: it commits by itself.
	err = s.fast(ctx, op, false, func(w *wconn) error {
		_, err := w.exec(sqlInsertInvocation,
			inv.ID, inv.RunID, inv.Tool, inv.ToolVersion, string(inv.Surface), inv.SessionID, inv.Caller,
			string(inv.Status), input, result, errJSON, inv.InputBytes, inv.ResultBytes,
			micros(inv.CreatedAt), micros(inv.UpdatedAt), micros(inv.FinishedAt), inv.DurationMs)
		return err
	})
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		return switchboard.Errorf(switchboard.CodeConflict, "%s: invocation %q already exists", op, inv.ID)
	}
	return err
}

// InvocationGet returns one record or NOT_FOUND.
func (s *Store) InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error) {
	const op = "invocation get"
	if err := s.check(op); err != nil {
		return switchboard.Invocation{}, err
	}
	inv, err := scanInvocation(s.r.QueryRowContext(ctx,
		`SELECT `+invocationCols+` FROM invocations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return inv, switchboard.Errorf(switchboard.CodeNotFound, "%s: no invocation %q", op, id)
	}
	return inv, translate(ctx, op, err)
}

// InvocationUpdate is one UPDATE ... WHERE status IN (from) RETURNING; when
// it matches nothing the current row comes back with CONFLICT.
func (s *Store) InvocationUpdate(ctx context.Context, inv switchboard.Invocation, from ...switchboard.Status) (switchboard.Invocation, error) {
	const op = "invocation update"
	c, err := newCAS(op, inv, from)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if err := s.fast(ctx, op, true, c.run); err != nil {
		return switchboard.Invocation{}, err
	}
	return c.outcome()
}

// InvocationFinish is InvocationUpdate and, only when its compare-and-swap
// succeeds, ActivityAppend of e, in one transaction. On a
// failed compare nothing is written, e is left as it was, and the current
// record comes back with CONFLICT.
func (s *Store) InvocationFinish(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error) {
	const op = "invocation finish"
	c, err := newCAS(op, inv, from)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	p, err := s.newEntry(op, e)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	err = s.fast(ctx, op, true, func(w *wconn) error {
		if err := c.run(w); err != nil || c.conflict {
			return err
		}
		return p.append(w)
	})
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if !c.conflict {
		*e = p.n
	}
	return c.outcome()
}

// Statements of the invocation fast path.
const (
	sqlInsertInvocation = `INSERT INTO invocations (` + invocationCols + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlSelectInvocation = `SELECT ` + invocationCols + ` FROM invocations WHERE id = ?`
)

// casSQLs holds the compare-and-swap UPDATE for 1 to 8 from-statuses, so
// the statement cache sees the same text every call.
var casSQLs = func() (q [9]string) {
	for n := 1; n < len(q); n++ {
		q[n] = buildCASSQL(n)
	}
	return q
}()

func casSQL(n int) string {
	if n < len(casSQLs) {
		return casSQLs[n]
	}
	return buildCASSQL(n)
}

func buildCASSQL(n int) string {
	return `UPDATE invocations SET
		status = ?, session_id = ?, result = ?, error = ?, input_bytes = ?, result_bytes = ?,
		updated_at = ?, finished_at = ?, duration_ms = ?
		WHERE id = ? AND status IN (?` + strings.Repeat(", ?", n-1) + `)
		RETURNING ` + invocationCols
}

// cas is one compare-and-swap of an invocation record.
type cas struct {
	op       string
	id       string
	from     []switchboard.Status
	args     []any
	stored   switchboard.Invocation
	conflict bool
}

// newCAS checks and encodes the update before any transaction starts.
func newCAS(op string, inv switchboard.Invocation, from []switchboard.Status) (*cas, error) {
	if len(from) == 0 || inv.Status == "" {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput,
			"%s: a status and at least one from-status are required", op)
	}
	result, err := rawJSON("result", inv.Result)
	if err != nil {
		return nil, err
	}
	errJSON, err := encodeError(inv.Error)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 10+len(from))
	args = append(args, string(inv.Status), inv.SessionID, result, errJSON, inv.InputBytes, inv.ResultBytes,
		micros(inv.UpdatedAt), micros(inv.FinishedAt), inv.DurationMs, inv.ID)
	for _, st := range from {
		args = append(args, string(st))
	}
	return &cas{op: op, id: inv.ID, from: from, args: args}, nil
}

// run makes the swap inside w's transaction. When it matches nothing it
// reads the current row in the same transaction, so that is the row the
// compare failed against.
func (c *cas) run(w *wconn) error {
	var err error
	c.stored, err = scanInvocation(w.queryRow(casSQL(len(c.from)), c.args...))
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	c.stored, err = scanInvocation(w.queryRow(sqlSelectInvocation, c.id))
	if errors.Is(err, sql.ErrNoRows) {
		return switchboard.Errorf(switchboard.CodeNotFound, "%s: no invocation %q", c.op, c.id)
	}
	c.conflict = err == nil
	return err
}

// outcome is the stored record, with CONFLICT when the compare failed.
func (c *cas) outcome() (switchboard.Invocation, error) {
	if c.conflict {
		return c.stored, switchboard.Errorf(switchboard.CodeConflict,
			"%s: invocation %q is %s, not %v", c.op, c.id, c.stored.Status, c.from)
	}
	return c.stored, nil
}

// InvocationFailInFlight fails every non-terminal record with cause at at.
func (s *Store) InvocationFailInFlight(ctx context.Context, at time.Time, cause *switchboard.Error) (int, error) {
	const op = "invocation fail in flight"
	if cause == nil {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a cause is required", op)
	}
	if at.IsZero() {
		at = s.now()
	}
	errJSON, err := encodeError(cause)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.write(ctx, op, func(tx *sql.Tx) error {
		at := at.UnixMicro()
		res, err := tx.ExecContext(ctx, `UPDATE invocations SET
			status = ?, error = ?, updated_at = ?, finished_at = ?,
			duration_ms = CASE WHEN created_at IS NULL THEN 0 ELSE (? - created_at) / 1000.0 END
			WHERE status IN (?, ?, ?)`,
			string(switchboard.StatusFailed), errJSON, at, at, at,
			string(switchboard.InFlight[0]), string(switchboard.InFlight[1]), string(switchboard.InFlight[2]))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// SessionCreate stores a new session; an existing ID is a CONFLICT.
func (s *Store) SessionCreate(ctx context.Context, sess switchboard.Session) error {
	const op = "session create"
	if err := s.check(op); err != nil {
		return err
	}
	if sess.ID == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id is required", op)
	}
	_, err := s.w.ExecContext(ctx,
		`INSERT INTO sessions (id, token_hash, principal, created_at, closed_at) VALUES (?, ?, ?, ?, ?)`,
		sess.ID, sess.TokenHash, sess.Principal, micros(sess.CreatedAt), micros(sess.ClosedAt))
	if err != nil {
		err = translate(ctx, op, err)
		if switchboard.CodeOf(err) == switchboard.CodeConflict {
			return switchboard.Errorf(switchboard.CodeConflict, "%s: session %q already exists", op, sess.ID)
		}
	}
	return err
}

// SessionGet returns one session or NOT_FOUND.
func (s *Store) SessionGet(ctx context.Context, id string) (switchboard.Session, error) {
	const op = "session get"
	if err := s.check(op); err != nil {
		return switchboard.Session{}, err
	}
	var (
		sess            switchboard.Session
		created, closed sql.NullInt64
	)
	err := s.r.QueryRowContext(ctx,
		`SELECT id, token_hash, principal, created_at, closed_at FROM sessions WHERE id = ?`, id).
		Scan(&sess.ID, &sess.TokenHash, &sess.Principal, &created, &closed)
	if errors.Is(err, sql.ErrNoRows) {
		return sess, switchboard.Errorf(switchboard.CodeNotFound, "%s: no session %q", op, id)
	}
	if err != nil {
		return sess, translate(ctx, op, err)
	}
	sess.CreatedAt = fromMicros(created)
	sess.ClosedAt = fromMicros(closed)
	return sess, nil
}

// SessionClose marks a session closed. Closing a closed session keeps its
// first close time and succeeds; an unknown session is NOT_FOUND.
func (s *Store) SessionClose(ctx context.Context, id string, at time.Time) error {
	const op = "session close"
	if at.IsZero() {
		at = s.now()
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`UPDATE sessions SET closed_at = ? WHERE id = ? AND closed_at IS NULL`, at.UnixMicro(), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return switchboard.Errorf(switchboard.CodeNotFound, "%s: no session %q", op, id)
		}
		return err
	})
}
