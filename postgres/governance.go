package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

// The governance part of the store: agent tokens, approvals, jobs and
// idempotency keys, in tables created by migration 0007. Compare-and-swaps are single statements, so replicas
// agree on one winner.

// --- agent tokens ---

const tokenCols = `id, agent, allow, deny, token_hash, created_at, revoked_at`

func scanToken(row pgx.Row) (switchboard.AgentToken, error) {
	var (
		t              switchboard.AgentToken
		allow, deny    []byte
		created, revok *time.Time
	)
	if err := row.Scan(&t.ID, &t.Agent, &allow, &deny, &t.Hash, &created, &revok); err != nil {
		return t, err
	}
	if err := json.Unmarshal(allow, &t.Allow); err != nil {
		return t, err
	}
	if err := json.Unmarshal(deny, &t.Deny); err != nil {
		return t, err
	}
	t.CreatedAt, t.RevokedAt = fromStamp(created), fromStamp(revok)
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
	if err := s.check(op); err != nil {
		return err
	}
	if t.ID == "" || t.Agent == "" || t.Hash == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, agent and hash are required", op)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO agent_tokens (`+tokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		t.ID, t.Agent, globList(t.Allow), globList(t.Deny), t.Hash, stamp(t.CreatedAt), stamp(t.RevokedAt))
	return translate(ctx, op, err)
}

// TokenGet returns one token, revoked or not.
func (s *Store) TokenGet(ctx context.Context, id string) (switchboard.AgentToken, error) {
	const op = "token get"
	if err := s.check(op); err != nil {
		return switchboard.AgentToken{}, err
	}
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM agent_tokens WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := s.pool.Query(ctx, `SELECT `+tokenCols+` FROM agent_tokens ORDER BY created_at, id`)
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
	if err := s.check(op); err != nil {
		return switchboard.AgentToken{}, err
	}
	if at.IsZero() {
		at = s.now()
	}
	t, err := scanToken(s.pool.QueryRow(ctx, `UPDATE agent_tokens SET revoked_at = coalesce(revoked_at, $1)
		WHERE id = $2 RETURNING `+tokenCols, stamp(at), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, switchboard.Errorf(switchboard.CodeNotFound, "%s: no token %q", op, id)
	}
	return t, translate(ctx, op, err)
}

// --- approvals ---

const approvalCols = `id, invocation_id, run_id, session_id, tool, tool_version, args_hash, input, summary,
	class, agent, status, reason, decided_by, channel, created_at, expires_at, decided_at, consumed_at`

func scanApproval(row pgx.Row) (switchboard.ApprovalRequest, error) {
	var (
		a                                   switchboard.ApprovalRequest
		input                               []byte
		class, status                       string
		created, expires, decided, consumed *time.Time
	)
	err := row.Scan(&a.ID, &a.InvocationID, &a.RunID, &a.SessionID, &a.Tool, &a.ToolVersion, &a.ArgsHash, &input,
		&a.Summary, &class, &a.Agent, &status, &a.Reason, &a.DecidedBy, &a.Channel, &created, &expires, &decided, &consumed)
	a.Input, a.Class, a.Status = fromRawJSON(input), switchboard.Class(class), switchboard.ApprovalStatus(status)
	a.CreatedAt, a.ExpiresAt, a.DecidedAt, a.ConsumedAt = fromStamp(created), fromStamp(expires), fromStamp(decided), fromStamp(consumed)
	return a, err
}

// ApprovalCreate inserts a request; a second one for the same ID or
// invocation is a CONFLICT.
func (s *Store) ApprovalCreate(ctx context.Context, a switchboard.ApprovalRequest) error {
	const op = "approval create"
	if err := s.check(op); err != nil {
		return err
	}
	if a.ID == "" || a.InvocationID == "" || a.Status == "" || a.CreatedAt.IsZero() || a.ExpiresAt.IsZero() {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, invocation, status and times are required", op)
	}
	input, err := rawJSON("input", a.Input)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO approvals (`+approvalCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		a.ID, a.InvocationID, a.RunID, a.SessionID, a.Tool, a.ToolVersion, a.ArgsHash, input, a.Summary,
		string(a.Class), a.Agent, string(a.Status), a.Reason, a.DecidedBy, a.Channel,
		stamp(a.CreatedAt), stamp(a.ExpiresAt), stamp(a.DecidedAt), stamp(a.ConsumedAt))
	return translate(ctx, op, err)
}

// ApprovalGet returns one request.
func (s *Store) ApprovalGet(ctx context.Context, id string) (switchboard.ApprovalRequest, error) {
	const op = "approval get"
	if err := s.check(op); err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	a, err := scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	where, args := []string{"true"}, []any{}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	if f.Status != "" {
		add("status =", string(f.Status))
	}
	if f.Agent != "" {
		add("agent =", f.Agent)
	}
	if f.InvocationID != "" {
		add("invocation_id =", f.InvocationID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultActivityLimit
	}
	args = append(args, min(limit, MaxActivityLimit))
	rows, err := s.pool.Query(ctx, `SELECT `+approvalCols+` FROM approvals WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at, id LIMIT $`+strconv.Itoa(len(args)), args...)
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
	return s.approvalCAS(ctx, op, a.ID, `status = $2, reason = $3, decided_by = $4, channel = $5, decided_at = $6`,
		`status = 'pending'`, string(a.Status), a.Reason, a.DecidedBy, a.Channel, stamp(a.DecidedAt))
}

// ApprovalConsume uses an approved request once.
func (s *Store) ApprovalConsume(ctx context.Context, id string, at time.Time) (switchboard.ApprovalRequest, error) {
	if at.IsZero() {
		at = s.now()
	}
	return s.approvalCAS(ctx, "approval consume", id, `consumed_at = $2`,
		`status = 'approved' AND consumed_at IS NULL`, stamp(at))
}

// approvalCAS updates request id ($1) if cond holds; otherwise it returns
// the current row with CONFLICT (under READ COMMITTED a concurrent winner
// makes the loser re-check cond and match nothing).
func (s *Store) approvalCAS(ctx context.Context, op, id, set, cond string, args ...any) (switchboard.ApprovalRequest, error) {
	if err := s.check(op); err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	stored, err := scanApproval(s.pool.QueryRow(ctx, `UPDATE approvals SET `+set+` WHERE id = $1 AND `+cond+
		` RETURNING `+approvalCols, append([]any{id}, args...)...))
	if err == nil {
		return stored, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return switchboard.ApprovalRequest{}, translate(ctx, op, err)
	}
	current, err := s.ApprovalGet(ctx, id)
	if err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	return current, switchboard.Errorf(switchboard.CodeConflict, "%s: approval %q is already %s", op, id, current.Status)
}

// ApprovalCancelPending cancels every pending request.
func (s *Store) ApprovalCancelPending(ctx context.Context, at time.Time, reason string) (int, error) {
	const op = "approval cancel pending"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if at.IsZero() {
		at = s.now()
	}
	tag, err := s.pool.Exec(ctx, `UPDATE approvals SET status = 'cancelled', reason = $1, decided_by = 'system',
		channel = 'restart', decided_at = $2 WHERE status = 'pending'`, reason, stamp(at))
	if err != nil {
		return 0, translate(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}
