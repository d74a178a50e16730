package switchboard

import (
	"context"
	"encoding/json"
	"time"
)

// AgentToken is a bearer token minted for an agent, with the tool-name
// scopes its principal carries. Only the SHA-256 of the secret is stored
// (Hash, never serialized); the secret itself is shown once, at creation.
type AgentToken struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Allow     []string  `json:"allow,omitempty"`
	Deny      []string  `json:"deny,omitempty"`
	Hash      string    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Principal is who a token stands for.
func (t AgentToken) Principal() Principal {
	return Principal{Kind: PrincipalAgent, ID: t.Agent, Allow: t.Allow, Deny: t.Deny}
}

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
	Status       ApprovalStatus  `json:"status"`
	Reason       string          `json:"reason,omitempty"`
	DecidedBy    string          `json:"decidedBy,omitempty"`
	Channel      string          `json:"channel,omitempty"`
	CreatedAt    time.Time       `json:"createdAt"`
	ExpiresAt    time.Time       `json:"expiresAt"`
	DecidedAt    time.Time       `json:"decidedAt,omitzero"`
	ConsumedAt   time.Time       `json:"consumedAt,omitzero"`
}

// ApprovalFilter selects approval requests (oldest first). Empty fields
// match everything.
type ApprovalFilter struct {
	Status       ApprovalStatus
	Agent        string
	InvocationID string
	Limit        int
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
	ID           string          `json:"jobId"`
	InvocationID string          `json:"invocationId"`
	RunID        string          `json:"runId,omitempty"`
	Tool         string          `json:"tool"`
	Caller       string          `json:"caller,omitempty"`
	Status       JobStatus       `json:"status"`
	Progress     float64         `json:"progress"`
	Message      string          `json:"message,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        *Error          `json:"error,omitempty"`
	CreatedAt    time.Time       `json:"createdAt"`
	UpdatedAt    time.Time       `json:"updatedAt"`
	FinishedAt   time.Time       `json:"finishedAt,omitzero"`
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

// GovernanceStore is the persistence of issue 7's governance: agent
// tokens, approvals, jobs and idempotency keys. Both bundled drivers
// implement it beside Store and pass storetest's governance suite; errors
// follow the Store conventions (NOT_FOUND, CONFLICT with the current
// record for a failed compare-and-swap, UNAVAILABLE for busy storage).
type GovernanceStore interface {
	// TokenCreate inserts a token (CONFLICT if the ID exists).
	TokenCreate(ctx context.Context, t AgentToken) error
	// TokenGet returns one token, revoked or not, or NOT_FOUND.
	TokenGet(ctx context.Context, id string) (AgentToken, error)
	// TokenList returns every token, oldest first.
	TokenList(ctx context.Context) ([]AgentToken, error)
	// TokenRevoke stamps RevokedAt (a second revoke keeps the first time)
	// and returns the token, or NOT_FOUND.
	TokenRevoke(ctx context.Context, id string, at time.Time) (AgentToken, error)

	// ApprovalCreate inserts a request (CONFLICT if its ID or invocation
	// already has one).
	ApprovalCreate(ctx context.Context, a ApprovalRequest) error
	// ApprovalGet returns one request or NOT_FOUND.
	ApprovalGet(ctx context.Context, id string) (ApprovalRequest, error)
	// ApprovalList returns requests matching f, oldest first.
	ApprovalList(ctx context.Context, f ApprovalFilter) ([]ApprovalRequest, error)
	// ApprovalDecide is a compare-and-swap from pending: it stores a's
	// Status, Reason, DecidedBy, Channel and DecidedAt only if the stored
	// request is still pending and returns the stored request; otherwise it
	// changes nothing and returns the current request with CONFLICT.
	ApprovalDecide(ctx context.Context, a ApprovalRequest) (ApprovalRequest, error)
	// ApprovalConsume marks an approved request used, once: CONFLICT with
	// the current request if it is not approved or already consumed.
	ApprovalConsume(ctx context.Context, id string, at time.Time) (ApprovalRequest, error)
	// ApprovalCancelPending moves every pending request to cancelled with
	// reason (at start: nobody waits for them any more).
	ApprovalCancelPending(ctx context.Context, at time.Time, reason string) (int, error)

	// JobCreate inserts a job (CONFLICT if the ID exists).
	JobCreate(ctx context.Context, j Job) error
	// JobGet returns one job or NOT_FOUND.
	JobGet(ctx context.Context, id string) (Job, error)
	// JobUpdate is a compare-and-swap like InvocationUpdate: it stores j's
	// status, progress, message, result, error and times only if the
	// stored status is one of from.
	JobUpdate(ctx context.Context, j Job, from ...JobStatus) (Job, error)
	// JobFailRunning moves every running job to failed with cause (at
	// start: a job the daemon lost is never left running).
	JobFailRunning(ctx context.Context, at time.Time, cause *Error) (int, error)

	// IdempotencyClaim stores r unless a record for (r.Scope, r.Key)
	// created at or after notBefore exists; it returns the record now
	// stored and whether it is r. An older record is replaced.
	IdempotencyClaim(ctx context.Context, r IdempotencyRecord, notBefore time.Time) (IdempotencyRecord, bool, error)
	// IdempotencyRelease deletes the claim of (scope, key) if it still
	// names invocationID (a call refused before it was recorded).
	IdempotencyRelease(ctx context.Context, scope, key, invocationID string) error

	// ActivityHead returns the ID of the last ledger entry (0 when empty).
	ActivityHead(ctx context.Context) (int64, error)
}
