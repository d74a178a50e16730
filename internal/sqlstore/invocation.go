package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

const invocationCols = `id, run_id, tool, tool_version, surface, session_id, caller, status,
	input, result, error, input_bytes, result_bytes, created_at, updated_at, finished_at, duration_ms, agent_id, replica, user_name, approval_id`

// Statements of the call path, constant so statement caches hit them.
const (
	sqlInsertInvocation = `INSERT INTO invocations (` + invocationCols + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlSelectInvocation = `SELECT ` + invocationCols + ` FROM invocations WHERE id = ?`
)

// scanInvocation reads one row selected with invocationCols.
func scanInvocation(row Row) (switchboard.Invocation, error) {
	var (
		inv             switchboard.Invocation
		surface, status string
		errJSON         json.RawMessage
	)
	if err := row.Scan(&inv.ID, &inv.RunID, &inv.Tool, &inv.ToolVersion, &surface, &inv.SessionID,
		&inv.Caller, &status, scanJSON(&inv.Input), scanJSON(&inv.Result), scanJSON(&errJSON),
		&inv.InputBytes, &inv.ResultBytes, scanTime(&inv.CreatedAt), scanTime(&inv.UpdatedAt),
		scanTime(&inv.FinishedAt), &inv.DurationMs, &inv.AgentID, &inv.Replica, &inv.User, &inv.ApprovalID); err != nil {
		return inv, err
	}
	inv.Surface = switchboard.Surface(surface)
	inv.Status = switchboard.Status(status)
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
	args, err := s.invocationArgs(inv)
	if err != nil {
		return err
	}
	err = s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(sqlInsertInvocation), args...)
		return err
	})
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		return switchboard.Errorf(switchboard.CodeConflict, "%s: invocation %q already exists", op, inv.ID)
	}
	return err
}

// InvocationCreateFinished inserts a terminal record and appends its
// ledger entry in one transaction; an existing ID is a CONFLICT and
// appends nothing.
func (s *Store) InvocationCreateFinished(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry) error {
	const op = "invocation create finished"
	if err := s.check(op); err != nil {
		return err
	}
	if inv.ID == "" || !inv.Status.Terminal() {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: an id and a terminal status are required, not %q", op, inv.Status)
	}
	args, err := s.invocationArgs(inv)
	if err != nil {
		return err
	}
	p, err := s.newEntry(op, e)
	if err != nil {
		return err
	}
	var exists bool
	err = s.txKeyed(ctx, op, inv.ID, func(tx Tx) error {
		if _, err := tx.Exec(ctx, s.sql(sqlInsertInvocation), args...); err != nil {
			exists = switchboard.CodeOf(s.d.Translate(ctx, op, err)) == switchboard.CodeConflict
			return err
		}
		return tx.Append(ctx, p)
	})
	if exists {
		return switchboard.Errorf(switchboard.CodeConflict, "%s: invocation %q already exists", op, inv.ID)
	}
	if err != nil {
		return err
	}
	*e = p.N
	return nil
}

// invocationArgs encodes inv for sqlInsertInvocation.
func (s *Store) invocationArgs(inv switchboard.Invocation) ([]any, error) {
	input, err := rawJSON("input", inv.Input)
	if err != nil {
		return nil, err
	}
	result, err := rawJSON("result", inv.Result)
	if err != nil {
		return nil, err
	}
	errJSON, err := encodeError(inv.Error)
	if err != nil {
		return nil, err
	}
	return []any{inv.ID, inv.RunID, inv.Tool, inv.ToolVersion, string(inv.Surface), inv.SessionID, inv.Caller,
		string(inv.Status), input, result, errJSON, inv.InputBytes, inv.ResultBytes,
		s.time(inv.CreatedAt), s.time(inv.UpdatedAt), s.time(inv.FinishedAt), inv.DurationMs, inv.AgentID, inv.Replica, inv.User, inv.ApprovalID}, nil
}

// InvocationGet returns one record or NOT_FOUND.
func (s *Store) InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error) {
	return get(ctx, s, "invocation get", "invocation", id, scanInvocation, sqlSelectInvocation)
}

// InvocationUpdate is one UPDATE ... WHERE status IN (from) RETURNING; when
// it matches nothing, the current row comes back with CONFLICT (swap).
func (s *Store) InvocationUpdate(ctx context.Context, inv switchboard.Invocation, from ...switchboard.Status) (switchboard.Invocation, error) {
	const op = "invocation update"
	c, err := s.newCAS(op, inv, from)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if err := s.db.Write(ctx, op, func(q Querier) error { return c.run(ctx, q) }); err != nil {
		return switchboard.Invocation{}, err
	}
	return c.outcome()
}

// InvocationFinish is InvocationUpdate and, only when its compare-and-swap
// succeeds, ActivityAppend of e, in one transaction. The invocation row is
// locked before the chain head, as no other transaction takes them the
// other way round. On a failed compare nothing is written, e is left as it
// was, and the current record comes back with CONFLICT.
func (s *Store) InvocationFinish(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error) {
	const op = "invocation finish"
	c, err := s.newCAS(op, inv, from)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	p, err := s.newEntry(op, e)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	err = s.txKeyed(ctx, op, inv.ID, func(tx Tx) error {
		if err := c.run(ctx, tx); err != nil || c.conflict {
			return err
		}
		return tx.Append(ctx, p)
	})
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if !c.conflict {
		*e = p.N
	}
	return c.outcome()
}

// casSQLs holds the compare-and-swap UPDATE for 1 to 8 from-statuses, so
// statement caches see the same text every call.
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
		WHERE id = ? AND status ` + in(n) + `
		RETURNING ` + invocationCols
}

// cas is one compare-and-swap of an invocation record.
type cas struct {
	s        *Store
	op       string
	id       string
	from     []switchboard.Status
	args     []any
	stored   switchboard.Invocation
	conflict bool
}

// newCAS checks and encodes the update before anything is sent.
func (s *Store) newCAS(op string, inv switchboard.Invocation, from []switchboard.Status) (*cas, error) {
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
		s.time(inv.UpdatedAt), s.time(inv.FinishedAt), inv.DurationMs, inv.ID)
	for _, st := range from {
		args = append(args, string(st))
	}
	return &cas{s: s, op: op, id: inv.ID, from: from, args: args}, nil
}

// run makes the swap on q.
func (c *cas) run(ctx context.Context, q Querier) error {
	var err error
	c.stored, c.conflict, err = swap(ctx, c.s, q, "invocation", c.id, scanInvocation,
		casSQL(len(c.from)), c.args, sqlSelectInvocation)
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

// sqlNextInFlight reads the next non-terminal record after an id (the
// sweep's cursor).
var sqlNextInFlight = `SELECT ` + invocationCols + ` FROM invocations
	WHERE status ` + in(len(switchboard.InFlight)) + ` AND id > ? ORDER BY id LIMIT 1`

// InvocationFailInFlight ends the non-terminal records resolve gives a
// cause, one InvocationFinish each, so each ending lands with its ledger
// entry and a record finished meanwhile by someone else is left alone.
func (s *Store) InvocationFailInFlight(ctx context.Context, at time.Time, resolve func(switchboard.Invocation) (*switchboard.Error, *switchboard.ActivityEntry)) (int, error) {
	const op = "invocation fail in flight"
	if resolve == nil {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a resolve function is required", op)
	}
	t := normTime(s.stamp(at))
	n, after := 0, ""
	for {
		args := make([]any, 0, len(switchboard.InFlight)+1)
		for _, st := range switchboard.InFlight {
			args = append(args, string(st))
		}
		var inv switchboard.Invocation
		err := s.read(ctx, op, func(q Reader) error {
			var err error
			inv, err = scanInvocation(q.QueryRow(ctx, s.sql(sqlNextInFlight), append(args, after)...))
			return err
		})
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		after = inv.ID
		cause, e := resolve(inv)
		if cause == nil {
			continue
		}
		done := inv
		done.Status, done.Error, done.Result, done.ResultBytes = switchboard.StatusFor(cause.Code), cause, nil, 0
		done.UpdatedAt, done.FinishedAt = t, t
		if !inv.CreatedAt.IsZero() {
			done.DurationMs = float64(t.Sub(inv.CreatedAt).Microseconds()) / 1000
		}
		if e == nil {
			_, err = s.InvocationUpdate(ctx, done, inv.Status)
		} else {
			_, err = s.InvocationFinish(ctx, done, e, inv.Status)
		}
		switch {
		case err == nil:
			n++
		case switchboard.CodeOf(err) != switchboard.CodeConflict:
			return n, err
		}
	}
}

// InvocationList returns matching records, newest first; the index on
// (created_at, id) serves the order.
func (s *Store) InvocationList(ctx context.Context, f switchboard.InvocationFilter) ([]switchboard.Invocation, error) {
	where, args := []string{"1 = 1"}, []any{}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Caller != "" {
		where, args = append(where, "caller = ?"), append(args, f.Caller)
	}
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, f.SessionID)
	}
	if f.User != "" {
		where, args = append(where, "user_name = ?"), append(args, f.User)
	}
	return list(ctx, s, "invocation list", `SELECT `+invocationCols+` FROM invocations WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit(f.Limit)), scanInvocation)
}

// list runs a query and scans every row with scan.
func list[T any](ctx context.Context, s *Store, op, query string, args []any, scan func(Row) (T, error)) ([]T, error) {
	out := []T{}
	err := s.read(ctx, op, func(q Reader) error {
		rows, err := q.Query(ctx, s.sql(query), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// InvocationAdopt moves the in-flight invocations of replica from to
// replica to, in one statement.
func (s *Store) InvocationAdopt(ctx context.Context, from, to string) (int, error) {
	const op = "invocation adopt"
	if err := s.check(op); err != nil {
		return 0, err
	}
	args := []any{to, from}
	for _, st := range switchboard.InFlight {
		args = append(args, string(st))
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(`UPDATE invocations SET replica = ? WHERE replica = ? AND status `+in(len(switchboard.InFlight))), args...)
		return err
	})
	return int(n), err
}
