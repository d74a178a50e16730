package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

const invocationCols = `id, run_id, tool, tool_version, surface, session_id, caller, status,
	input, result, error, input_bytes, result_bytes, created_at, updated_at, finished_at, duration_ms`

// scanInvocation reads one row selected with invocationCols.
func scanInvocation(row pgx.Row) (switchboard.Invocation, error) {
	var (
		inv                        switchboard.Invocation
		surface, status            string
		input, result, errJSON     []byte
		created, updated, finished *time.Time
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
	inv.CreatedAt = fromStamp(created)
	inv.UpdatedAt = fromStamp(updated)
	inv.FinishedAt = fromStamp(finished)
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
	_, err = s.pool.Exec(ctx, `INSERT INTO invocations (`+invocationCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		inv.ID, inv.RunID, inv.Tool, inv.ToolVersion, string(inv.Surface), inv.SessionID, inv.Caller,
		string(inv.Status), input, result, errJSON, inv.InputBytes, inv.ResultBytes,
		stamp(inv.CreatedAt), stamp(inv.UpdatedAt), stamp(inv.FinishedAt), inv.DurationMs)
	if err != nil {
		err = translate(ctx, op, err)
		if switchboard.CodeOf(err) == switchboard.CodeConflict {
			return switchboard.Errorf(switchboard.CodeConflict, "%s: invocation %q already exists", op, inv.ID)
		}
		return err
	}
	return nil
}

// InvocationGet returns one record or NOT_FOUND.
func (s *Store) InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error) {
	const op = "invocation get"
	if err := s.check(op); err != nil {
		return switchboard.Invocation{}, err
	}
	inv, err := scanInvocation(s.pool.QueryRow(ctx, `SELECT `+invocationCols+` FROM invocations WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return inv, switchboard.Errorf(switchboard.CodeNotFound, "%s: no invocation %q", op, id)
	}
	return inv, translate(ctx, op, err)
}

// InvocationUpdate is one UPDATE ... WHERE status = ANY(from) RETURNING.
// Under READ COMMITTED a concurrent winner's row lock makes the loser
// re-check the status and match nothing; the loser then reads the current
// row and returns it with CONFLICT.
func (s *Store) InvocationUpdate(ctx context.Context, inv switchboard.Invocation, from ...switchboard.Status) (switchboard.Invocation, error) {
	const op = "invocation update"
	if err := s.check(op); err != nil {
		return switchboard.Invocation{}, err
	}
	c, err := newCAS(op, inv, from)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if err := c.run(ctx, s.pool); err != nil {
		return switchboard.Invocation{}, translate(ctx, op, err)
	}
	return c.outcome()
}

// InvocationFinish is InvocationUpdate and, only when its compare-and-swap
// succeeds, ActivityAppend of e, in one transaction. The
// invocation row is locked before the chain head, as no other transaction
// takes them the other way round. On a failed compare nothing is written, e
// is left as it was, and the current record comes back with CONFLICT.
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
	err = s.write(ctx, op, func(tx pgx.Tx) error {
		if err := c.run(ctx, tx); err != nil || c.conflict {
			return err
		}
		return p.append(ctx, tx)
	})
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if !c.conflict {
		*e = p.n
	}
	return c.outcome()
}

// querier is what a compare-and-swap runs on: the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
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

// newCAS checks and encodes the update before anything is sent.
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
	fromText := make([]string, len(from))
	for i, st := range from {
		fromText[i] = string(st)
	}
	return &cas{op: op, id: inv.ID, from: from, args: []any{
		string(inv.Status), inv.SessionID, result, errJSON, inv.InputBytes, inv.ResultBytes,
		stamp(inv.UpdatedAt), stamp(inv.FinishedAt), inv.DurationMs, inv.ID, fromText,
	}}, nil
}

// run makes the swap; when it matches nothing it reads the current row.
func (c *cas) run(ctx context.Context, q querier) error {
	var err error
	c.stored, err = scanInvocation(q.QueryRow(ctx, `UPDATE invocations SET
		status = $1, session_id = $2, result = $3, error = $4, input_bytes = $5, result_bytes = $6,
		updated_at = $7, finished_at = $8, duration_ms = $9
		WHERE id = $10 AND status = ANY($11)
		RETURNING `+invocationCols, c.args...))
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	c.stored, err = scanInvocation(q.QueryRow(ctx, `SELECT `+invocationCols+` FROM invocations WHERE id = $1`, c.id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	if err := s.check(op); err != nil {
		return 0, err
	}
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
	inFlight := make([]string, len(switchboard.InFlight))
	for i, st := range switchboard.InFlight {
		inFlight[i] = string(st)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE invocations SET
		status = $1, error = $2, updated_at = $3, finished_at = $3,
		duration_ms = CASE WHEN created_at IS NULL THEN 0
			ELSE (EXTRACT(EPOCH FROM ($3 - created_at)) * 1000)::double precision END
		WHERE status = ANY($4)`,
		string(switchboard.StatusFailed), errJSON, stamp(at), inFlight)
	if err != nil {
		return 0, translate(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
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
	_, err := s.pool.Exec(ctx,
		`INSERT INTO sessions (id, token_hash, principal, created_at, closed_at) VALUES ($1, $2, $3, $4, $5)`,
		sess.ID, sess.TokenHash, sess.Principal, stamp(sess.CreatedAt), stamp(sess.ClosedAt))
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
		created, closed *time.Time
	)
	err := s.pool.QueryRow(ctx,
		`SELECT id, token_hash, principal, created_at, closed_at FROM sessions WHERE id = $1`, id).
		Scan(&sess.ID, &sess.TokenHash, &sess.Principal, &created, &closed)
	if errors.Is(err, pgx.ErrNoRows) {
		return sess, switchboard.Errorf(switchboard.CodeNotFound, "%s: no session %q", op, id)
	}
	if err != nil {
		return sess, translate(ctx, op, err)
	}
	sess.CreatedAt = fromStamp(created)
	sess.ClosedAt = fromStamp(closed)
	return sess, nil
}

// SessionClose marks a session closed. Closing a closed session keeps its
// first close time and succeeds; an unknown session is NOT_FOUND.
func (s *Store) SessionClose(ctx context.Context, id string, at time.Time) error {
	const op = "session close"
	if err := s.check(op); err != nil {
		return err
	}
	if at.IsZero() {
		at = s.now()
	}
	// One statement: close it if open, and say whether it exists at all.
	var exists bool
	err := s.pool.QueryRow(ctx, `WITH closed AS (
			UPDATE sessions SET closed_at = $2 WHERE id = $1 AND closed_at IS NULL RETURNING id
		)
		SELECT EXISTS (SELECT 1 FROM closed) OR EXISTS (SELECT 1 FROM sessions WHERE id = $1)`,
		id, stamp(at)).Scan(&exists)
	if err != nil {
		return translate(ctx, op, err)
	}
	if !exists {
		return switchboard.Errorf(switchboard.CodeNotFound, "%s: no session %q", op, id)
	}
	return nil
}
