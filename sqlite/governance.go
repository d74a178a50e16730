package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The governance part of the store: agent tokens, approvals, jobs and
// idempotency keys, in tables created by migration 0007.

// --- agent tokens ---

const tokenCols = `id, agent, allow, deny, token_hash, created_at, revoked_at`

func scanToken(row interface{ Scan(...any) error }) (switchboard.AgentToken, error) {
	var (
		t              switchboard.AgentToken
		allow, deny    string
		created, revok sql.NullInt64
	)
	if err := row.Scan(&t.ID, &t.Agent, &allow, &deny, &t.Hash, &created, &revok); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(allow), &t.Allow); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(deny), &t.Deny); err != nil {
		return t, err
	}
	t.CreatedAt, t.RevokedAt = fromMicros(created), fromMicros(revok)
	return t, nil
}

func globList(g []string) string {
	if g == nil {
		g = []string{}
	}
	b, _ := json.Marshal(g) // []string: cannot fail
	return string(b)
}

// TokenCreate inserts a token; an existing ID is a CONFLICT.
func (s *Store) TokenCreate(ctx context.Context, t switchboard.AgentToken) error {
	const op = "token create"
	if t.ID == "" || t.Agent == "" || t.Hash == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, agent and hash are required", op)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO agent_tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Agent, globList(t.Allow), globList(t.Deny), t.Hash, micros(t.CreatedAt), micros(t.RevokedAt))
		return err
	})
}

// TokenGet returns one token, revoked or not.
func (s *Store) TokenGet(ctx context.Context, id string) (switchboard.AgentToken, error) {
	const op = "token get"
	if err := s.check(op); err != nil {
		return switchboard.AgentToken{}, err
	}
	t, err := scanToken(s.r.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM agent_tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, switchboard.Errorf(switchboard.CodeNotFound, "%s: no token %q", op, id)
	}
	return t, translate(ctx, op, err)
}

// TokenList returns every token, oldest first.
func (s *Store) TokenList(ctx context.Context) ([]switchboard.AgentToken, error) {
	const op = "token list"
	if err := s.check(op); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+tokenCols+` FROM agent_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, translate(ctx, op, err)
	}
	defer rows.Close()
	out := []switchboard.AgentToken{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, translate(ctx, op, err)
		}
		out = append(out, t)
	}
	return out, translate(ctx, op, rows.Err())
}

// TokenRevoke stamps revoked_at once.
func (s *Store) TokenRevoke(ctx context.Context, id string, at time.Time) (switchboard.AgentToken, error) {
	const op = "token revoke"
	if at.IsZero() {
		at = s.now()
	}
	var t switchboard.AgentToken
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		var err error
		t, err = scanToken(tx.QueryRowContext(ctx, `UPDATE agent_tokens SET revoked_at = coalesce(revoked_at, ?)
			WHERE id = ? RETURNING `+tokenCols, at.UnixMicro(), id))
		if errors.Is(err, sql.ErrNoRows) {
			return switchboard.Errorf(switchboard.CodeNotFound, "%s: no token %q", op, id)
		}
		return err
	})
	return t, err
}

// --- approvals ---

const approvalCols = `id, invocation_id, run_id, session_id, tool, tool_version, args_hash, input, summary,
	class, agent, status, reason, decided_by, channel, created_at, expires_at, decided_at, consumed_at`

func scanApproval(row interface{ Scan(...any) error }) (switchboard.ApprovalRequest, error) {
	var (
		a                                   switchboard.ApprovalRequest
		input                               sql.NullString
		class, status                       string
		created, expires, decided, consumed sql.NullInt64
	)
	err := row.Scan(&a.ID, &a.InvocationID, &a.RunID, &a.SessionID, &a.Tool, &a.ToolVersion, &a.ArgsHash, &input,
		&a.Summary, &class, &a.Agent, &status, &a.Reason, &a.DecidedBy, &a.Channel, &created, &expires, &decided, &consumed)
	a.Input, a.Class, a.Status = fromRawJSON(input), switchboard.Class(class), switchboard.ApprovalStatus(status)
	a.CreatedAt, a.ExpiresAt, a.DecidedAt, a.ConsumedAt = fromMicros(created), fromMicros(expires), fromMicros(decided), fromMicros(consumed)
	return a, err
}

// ApprovalCreate inserts a request; a second one for the same ID or
// invocation is a CONFLICT.
func (s *Store) ApprovalCreate(ctx context.Context, a switchboard.ApprovalRequest) error {
	const op = "approval create"
	if a.ID == "" || a.InvocationID == "" || a.Status == "" || a.CreatedAt.IsZero() || a.ExpiresAt.IsZero() {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, invocation, status and times are required", op)
	}
	input, err := rawJSON("input", a.Input)
	if err != nil {
		return err
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO approvals (`+approvalCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.InvocationID, a.RunID, a.SessionID, a.Tool, a.ToolVersion, a.ArgsHash, input, a.Summary,
			string(a.Class), a.Agent, string(a.Status), a.Reason, a.DecidedBy, a.Channel,
			micros(a.CreatedAt), micros(a.ExpiresAt), micros(a.DecidedAt), micros(a.ConsumedAt))
		return err
	})
}

// ApprovalGet returns one request.
func (s *Store) ApprovalGet(ctx context.Context, id string) (switchboard.ApprovalRequest, error) {
	const op = "approval get"
	if err := s.check(op); err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	a, err := scanApproval(s.r.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, switchboard.Errorf(switchboard.CodeNotFound, "%s: no approval %q", op, id)
	}
	return a, translate(ctx, op, err)
}

// ApprovalList returns matching requests, oldest first.
func (s *Store) ApprovalList(ctx context.Context, f switchboard.ApprovalFilter) ([]switchboard.ApprovalRequest, error) {
	const op = "approval list"
	if err := s.check(op); err != nil {
		return nil, err
	}
	where, args := []string{"1 = 1"}, []any{}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Agent != "" {
		where, args = append(where, "agent = ?"), append(args, f.Agent)
	}
	if f.InvocationID != "" {
		where, args = append(where, "invocation_id = ?"), append(args, f.InvocationID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultActivityLimit
	}
	args = append(args, min(limit, MaxActivityLimit))
	rows, err := s.r.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at, id LIMIT ?`, args...)
	if err != nil {
		return nil, translate(ctx, op, err)
	}
	defer rows.Close()
	out := []switchboard.ApprovalRequest{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, translate(ctx, op, err)
		}
		out = append(out, a)
	}
	return out, translate(ctx, op, rows.Err())
}

// ApprovalDecide is one UPDATE ... WHERE status = 'pending' RETURNING.
func (s *Store) ApprovalDecide(ctx context.Context, a switchboard.ApprovalRequest) (switchboard.ApprovalRequest, error) {
	const op = "approval decide"
	switch a.Status {
	case switchboard.ApprovalApproved, switchboard.ApprovalDenied, switchboard.ApprovalExpired, switchboard.ApprovalCancelled:
	default:
		return switchboard.ApprovalRequest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %q is not a decision", op, a.Status)
	}
	if a.DecidedAt.IsZero() {
		a.DecidedAt = s.now()
	}
	return s.approvalCAS(ctx, op, a.ID, `status = ?, reason = ?, decided_by = ?, channel = ?, decided_at = ?`,
		`status = 'pending'`, string(a.Status), a.Reason, a.DecidedBy, a.Channel, a.DecidedAt.UnixMicro())
}

// ApprovalConsume uses an approved request once.
func (s *Store) ApprovalConsume(ctx context.Context, id string, at time.Time) (switchboard.ApprovalRequest, error) {
	if at.IsZero() {
		at = s.now()
	}
	return s.approvalCAS(ctx, "approval consume", id, `consumed_at = ?`,
		`status = 'approved' AND consumed_at IS NULL`, at.UnixMicro())
}

// approvalCAS updates one request if cond holds, else returns the current
// row with CONFLICT, read in the same transaction.
func (s *Store) approvalCAS(ctx context.Context, op, id, set, cond string, args ...any) (switchboard.ApprovalRequest, error) {
	var (
		stored   switchboard.ApprovalRequest
		conflict bool
	)
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		var err error
		stored, err = scanApproval(tx.QueryRowContext(ctx, `UPDATE approvals SET `+set+` WHERE id = ? AND `+cond+
			` RETURNING `+approvalCols, append(args, id)...))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		stored, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return switchboard.Errorf(switchboard.CodeNotFound, "%s: no approval %q", op, id)
		}
		conflict = err == nil
		return err
	})
	if err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	if conflict {
		return stored, switchboard.Errorf(switchboard.CodeConflict, "%s: approval %q is already %s", op, id, stored.Status)
	}
	return stored, nil
}

// ApprovalCancelPending cancels every pending request.
func (s *Store) ApprovalCancelPending(ctx context.Context, at time.Time, reason string) (int, error) {
	const op = "approval cancel pending"
	if at.IsZero() {
		at = s.now()
	}
	var n int64
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = 'cancelled', reason = ?, decided_by = 'system',
			channel = 'restart', decided_at = ? WHERE status = 'pending'`, reason, at.UnixMicro())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
