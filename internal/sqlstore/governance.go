package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The governance part of the store: agent tokens and approvals (here), jobs
// and idempotency keys (jobs.go), in tables created by migration 0007
// (0008 adds a token's panel scope, 0032 the user a token's agent and an
// approval's call act for).
// Compare-and-swaps are single statements, so replicas agree on one winner.

// --- agent tokens ---

const tokenCols = `id, agent, allow, deny, panel_scope, token_hash, created_at, revoked_at, user_name`

func scanToken(row Row) (switchboard.AgentToken, error) {
	var (
		t                  switchboard.AgentToken
		allow, deny, panel json.RawMessage
	)
	if err := row.Scan(&t.ID, &t.Agent, scanJSON(&allow), scanJSON(&deny), scanJSON(&panel), &t.Hash,
		scanTime(&t.CreatedAt), scanTime(&t.RevokedAt), &t.User); err != nil {
		return t, err
	}
	if err := json.Unmarshal(panel, &t.PanelScope); err != nil {
		return t, err
	}
	if err := json.Unmarshal(allow, &t.Allow); err != nil {
		return t, err
	}
	if err := json.Unmarshal(deny, &t.Deny); err != nil {
		return t, err
	}
	return t, nil
}

// TokenCreate inserts a token; an existing ID is a CONFLICT.
func (s *Store) TokenCreate(ctx context.Context, t switchboard.AgentToken) error {
	const op = "token create"
	if t.ID == "" || t.Agent == "" || t.Hash == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, agent and hash are required", op)
	}
	t.CreatedAt = s.stamp(t.CreatedAt)
	return s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO agent_tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			t.ID, t.Agent, globList(t.Allow), globList(t.Deny), panelScope(t.PanelScope), t.Hash, s.time(t.CreatedAt), s.time(t.RevokedAt), t.User)
		return err
	})
}

// TokenGet returns one token, revoked or not.
func (s *Store) TokenGet(ctx context.Context, id string) (switchboard.AgentToken, error) {
	return get(ctx, s, "token get", "token", id, scanToken, `SELECT `+tokenCols+` FROM agent_tokens WHERE id = ?`)
}

// TokenList returns every token, oldest first.
func (s *Store) TokenList(ctx context.Context) ([]switchboard.AgentToken, error) {
	out := []switchboard.AgentToken{}
	err := s.read(ctx, "token list", func(q Reader) error {
		rows, err := q.Query(ctx, `SELECT `+tokenCols+` FROM agent_tokens ORDER BY created_at, id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanToken(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TokenRevoke stamps revoked_at once.
func (s *Store) TokenRevoke(ctx context.Context, id string, at time.Time) (switchboard.AgentToken, error) {
	const op = "token revoke"
	at = s.stamp(at)
	var t switchboard.AgentToken
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		t, err = scanToken(q.QueryRow(ctx, s.sql(`UPDATE agent_tokens SET revoked_at = coalesce(revoked_at, ?)
			WHERE id = ? RETURNING `+tokenCols), s.time(at), id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("token", id)
		}
		return err
	})
	return t, err
}

// --- approvals ---

const approvalCols = `id, invocation_id, run_id, session_id, tool, tool_version, args_hash, input, summary,
	class, agent, status, reason, decided_by, channel, created_at, expires_at, decided_at, consumed_at, agent_id, user_name`

func scanApproval(row Row) (switchboard.ApprovalRequest, error) {
	var (
		a             switchboard.ApprovalRequest
		class, status string
	)
	err := row.Scan(&a.ID, &a.InvocationID, &a.RunID, &a.SessionID, &a.Tool, &a.ToolVersion, &a.ArgsHash, scanJSON(&a.Input),
		&a.Summary, &class, &a.Agent, &status, &a.Reason, &a.DecidedBy, &a.Channel,
		scanTime(&a.CreatedAt), scanTime(&a.ExpiresAt), scanTime(&a.DecidedAt), scanTime(&a.ConsumedAt), &a.AgentID, &a.User)
	a.Class, a.Status = switchboard.Class(class), switchboard.ApprovalStatus(status)
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
	return s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO approvals (`+approvalCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			a.ID, a.InvocationID, a.RunID, a.SessionID, a.Tool, a.ToolVersion, a.ArgsHash, input, a.Summary,
			string(a.Class), a.Agent, string(a.Status), a.Reason, a.DecidedBy, a.Channel,
			s.time(a.CreatedAt), s.time(a.ExpiresAt), s.time(a.DecidedAt), s.time(a.ConsumedAt), a.AgentID, a.User)
		return err
	})
}

// ApprovalGet returns one request.
func (s *Store) ApprovalGet(ctx context.Context, id string) (switchboard.ApprovalRequest, error) {
	return get(ctx, s, "approval get", "approval", id, scanApproval, sqlSelectApproval)
}

const sqlSelectApproval = `SELECT ` + approvalCols + ` FROM approvals WHERE id = ?`

// ApprovalList returns matching requests, oldest first.
func (s *Store) ApprovalList(ctx context.Context, f switchboard.ApprovalFilter) ([]switchboard.ApprovalRequest, error) {
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
	if f.User == switchboard.Operator {
		// Requests from before users were recorded ('') were the operator's.
		where, args = append(where, "(user_name = ? OR user_name = '')"), append(args, f.User)
	} else if f.User != "" {
		where, args = append(where, "user_name = ?"), append(args, f.User)
	}
	args = append(args, limit(f.Limit))
	out := []switchboard.ApprovalRequest{}
	err := s.read(ctx, "approval list", func(q Reader) error {
		rows, err := q.Query(ctx, s.sql(`SELECT `+approvalCols+` FROM approvals WHERE `+strings.Join(where, " AND ")+
			` ORDER BY created_at, id LIMIT ?`), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanApproval(rows)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ApprovalDecide is one UPDATE ... WHERE status = 'pending' RETURNING.
func (s *Store) ApprovalDecide(ctx context.Context, a switchboard.ApprovalRequest) (switchboard.ApprovalRequest, error) {
	const op = "approval decide"
	switch a.Status {
	case switchboard.ApprovalApproved, switchboard.ApprovalDenied, switchboard.ApprovalExpired, switchboard.ApprovalCancelled:
	default:
		return switchboard.ApprovalRequest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %q is not a decision", op, a.Status)
	}
	return s.approvalCAS(ctx, op, a.ID, `status = ?, reason = ?, decided_by = ?, channel = ?, decided_at = ?`,
		`status = 'pending'`, string(a.Status), a.Reason, a.DecidedBy, a.Channel, s.time(s.stamp(a.DecidedAt)))
}

// ApprovalConsume uses an approved request once.
func (s *Store) ApprovalConsume(ctx context.Context, id string, at time.Time) (switchboard.ApprovalRequest, error) {
	return s.approvalCAS(ctx, "approval consume", id, `consumed_at = ?`,
		`status = 'approved' AND consumed_at IS NULL`, s.time(s.stamp(at)))
}

// approvalCAS sets set (binding args) on request id if cond holds;
// otherwise it returns the current row with CONFLICT.
func (s *Store) approvalCAS(ctx context.Context, op, id, set, cond string, args ...any) (switchboard.ApprovalRequest, error) {
	var (
		stored   switchboard.ApprovalRequest
		conflict bool
	)
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		stored, conflict, err = swap(ctx, s, q, "approval", id, scanApproval,
			`UPDATE approvals SET `+set+` WHERE id = ? AND `+cond+` RETURNING `+approvalCols, append(args, id), sqlSelectApproval)
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
	var n int64
	err := s.db.Write(ctx, "approval cancel pending", func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(`UPDATE approvals SET status = 'cancelled', reason = ?, decided_by = 'system',
			channel = 'restart', decided_at = ? WHERE status = 'pending'`), reason, s.time(s.stamp(at)))
		return err
	})
	return int(n), err
}
