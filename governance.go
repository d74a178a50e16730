package switchboard

import (
	"encoding/json"
	"time"
)

// AgentToken is a bearer token minted for an agent, with the tool-name
// and panel scopes its principal carries. Only the SHA-256 of the secret
// is stored (Hash, never serialized); the secret itself is shown once, at
// creation.
type AgentToken struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	// User is the person the agent acts for ("user:alice"); empty means
	// the operator (Operator), as every token minted before users was.
	User string `json:"user,omitempty"`
	// ActsFor is User, or the operator when none is named: always set on
	// what the API returns, so a reader need not know the default. It is
	// derived, never stored.
	ActsFor string   `json:"actsFor,omitempty"`
	Allow   []string `json:"allow,omitempty"`
	Deny    []string `json:"deny,omitempty"`
	PanelScope
	Hash      string    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Principal is who a token stands for.
func (t AgentToken) Principal() Principal {
	return Principal{Kind: PrincipalAgent, ID: t.Agent, Allow: t.Allow, Deny: t.Deny, PanelScope: t.PanelScope, User: t.User}
}

// PanelScope limits an agent to some panels and page slots, beside the
// tool names its Allow and Deny limit it to (issue 18, role scopes on
// panels). Panels are globs over registered panel ids ("project.*"); Slots
// globs over the page slots panels are shown in ("sidebar"). An empty list
// does not limit. Package scope says what each admits (scope.AllowsPanel);
// the panel tools enforce it before they act and filter their listings
// with it.
type PanelScope struct {
	Panels []string `json:"panels,omitempty"`
	Slots  []string `json:"slots,omitempty"`
}

// Limited reports whether ps limits anything.
func (ps PanelScope) Limited() bool { return len(ps.Panels) > 0 || len(ps.Slots) > 0 }

// ApprovalStatus is where a human decision stands:
// pending → approved | denied | expired | cancelled.
type ApprovalStatus string

const (
	ApprovalPending   ApprovalStatus = "pending"
	ApprovalApproved  ApprovalStatus = "approved"
	ApprovalDenied    ApprovalStatus = "denied"
	ApprovalExpired   ApprovalStatus = "expired"
	ApprovalCancelled ApprovalStatus = "cancelled" // the caller went away
)

// ApprovalRequest is a pending or decided human decision on one
// invocation. It binds to that invocation's tool, tool version and argument
// hash, and is consumed at most once (ConsumedAt) when the call proceeds.
// Input is the call's input with secrets redacted, for the approval card.
type ApprovalRequest struct {
	ID           string          `json:"approvalId"`
	InvocationID string          `json:"invocationId"`
	RunID        string          `json:"runId,omitempty"`
	SessionID    string          `json:"sessionId,omitempty"`
	Tool         string          `json:"tool"`
	ToolVersion  int64           `json:"toolVersion,omitempty"`
	ArgsHash     string          `json:"argsHash"`
	Input        json.RawMessage `json:"input,omitempty"`
	Summary      string          `json:"summary"`
	Class        Class           `json:"class"`
	Agent        string          `json:"agent"`
	// AgentID is the agent session whose call waits on it.
	AgentID string `json:"agentId,omitempty"`
	// User is the person the call was made for ("user:alice"): the one,
	// beside the operator, who may see and decide it. Empty on requests
	// recorded before users were: the operator's.
	User       string         `json:"user,omitempty"`
	Status     ApprovalStatus `json:"status"`
	Reason     string         `json:"reason,omitempty"`
	DecidedBy  string         `json:"decidedBy,omitempty"`
	Channel    string         `json:"channel,omitempty"`
	CreatedAt  time.Time      `json:"createdAt"`
	ExpiresAt  time.Time      `json:"expiresAt"`
	DecidedAt  time.Time      `json:"decidedAt,omitzero"`
	ConsumedAt time.Time      `json:"consumedAt,omitzero"`
}

// ApprovalFilter selects approval requests (oldest first). Empty fields
// match everything.
type ApprovalFilter struct {
	Status       ApprovalStatus
	Agent        string
	InvocationID string
	// User selects the requests made for that user ("user:alice");
	// Operator also matches requests that name nobody.
	User  string
	Limit int
}

// JobFilter selects jobs (Store.JobList). Empty fields do not filter;
// Limit defaults to 100 and is capped at 1000.
type JobFilter struct {
	Status JobStatus
	Caller string
	// User keeps the jobs of calls made for that user ("user:alice").
	User  string
	Limit int
}

// JobStatus is a job's state: running → succeeded | failed | cancelled.
type JobStatus string

const (
	JobRunning   JobStatus = "running"
	JobSucceeded JobStatus = "succeeded"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
)

// Terminal reports whether s is a final state.
func (s JobStatus) Terminal() bool { return s != JobRunning && s != "" }

// Job is the record of a long-running call of a `job` tool: the call
// itself returns the job id at once, the work goes on, and its progress
// (0..1 and a message) and outcome are read here.
type Job struct {
	ID           string `json:"jobId"`
	InvocationID string `json:"invocationId"`
	RunID        string `json:"runId,omitempty"`
	Tool         string `json:"tool"`
	Caller       string `json:"caller,omitempty"`
	// User is the person the job's call was made for (Invocation.User).
	User       string          `json:"user,omitempty"`
	Status     JobStatus       `json:"status"`
	Progress   float64         `json:"progress"`
	Message    string          `json:"message,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *Error          `json:"error,omitempty"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
	FinishedAt time.Time       `json:"finishedAt,omitzero"`
	// Replica is the serve process running the job (Replica.ID).
	Replica string `json:"replica,omitempty"`
}

// IdempotencyRecord ties a caller's idempotency key to the invocation it
// started. Digest fingerprints the call (tool, session, arguments), so a
// reuse of the key for another call is told apart from a retry.
type IdempotencyRecord struct {
	Scope        string    `json:"scope"`
	Key          string    `json:"key"`
	Digest       string    `json:"digest"`
	InvocationID string    `json:"invocationId"`
	CreatedAt    time.Time `json:"createdAt"`
}
