package switchboard

import (
	"encoding/json"
	"time"
)

// Status is an invocation's lifecycle state:
// pending → (awaiting_approval) → dispatched → succeeded | failed | denied |
// timed_out | cancelled.
type Status string

const (
	StatusPending          Status = "pending"
	StatusAwaitingApproval Status = "awaiting_approval"
	StatusDispatched       Status = "dispatched"
	StatusSucceeded        Status = "succeeded"
	StatusFailed           Status = "failed"
	StatusDenied           Status = "denied"
	StatusTimedOut         Status = "timed_out"
	StatusCancelled        Status = "cancelled"
)

// InFlight lists the non-terminal states.
var InFlight = []Status{StatusPending, StatusAwaitingApproval, StatusDispatched}

// Terminal reports whether s is a final state.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusDenied, StatusTimedOut, StatusCancelled:
		return true
	}
	return false
}

// StatusFor maps a failure code to the terminal status that records it.
func StatusFor(code Code) Status {
	switch code {
	case "":
		return StatusSucceeded
	case CodeTimeout:
		return StatusTimedOut
	case CodeCancelled:
		return StatusCancelled
	case CodeUserDenied:
		return StatusDenied
	}
	return StatusFailed
}

// Invocation is the persisted record of one tool call. Its identity is the
// daemon-minted ID; provider or JSON-RPC ids never enter the contract.
type Invocation struct {
	ID          string  `json:"invocationId"`
	RunID       string  `json:"runId,omitempty"`
	Tool        string  `json:"tool"`
	ToolVersion int64   `json:"toolVersion,omitempty"`
	Surface     Surface `json:"surface"`
	SessionID   string  `json:"sessionId,omitempty"`
	Caller      string  `json:"caller,omitempty"`
	// AgentID is the agent session that made the call (WithAgentSession).
	AgentID string `json:"agentId,omitempty"`
	// User is the person the call was made for ("user:alice": the
	// caller's Principal.ActsFor); empty when the call had no caller.
	// Who may read the record is decided from it with Caller.
	User string `json:"user,omitempty"`
	// ApprovalID is the approval request the call waits or waited on;
	// empty for a call that needed none.
	ApprovalID string `json:"approvalId,omitempty"`
	// Replica is the serve process that owns the call while it is in
	// flight (Replica.ID); a survivor resolves it if that process dies.
	Replica     string          `json:"replica,omitempty"`
	Status      Status          `json:"status"`
	Input       json.RawMessage `json:"input,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       *Error          `json:"error,omitempty"`
	InputBytes  int             `json:"inputBytes"`
	ResultBytes int             `json:"resultBytes"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
	FinishedAt  time.Time       `json:"finishedAt,omitzero"`
	// DurationMs is FinishedAt - CreatedAt, for readers that want one number.
	DurationMs float64 `json:"durationMs,omitempty"`
}

// CallResponse is the answer of POST /tools/{name}/call.
type CallResponse struct {
	InvocationID string          `json:"invocationId"`
	Status       Status          `json:"status"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        *Error          `json:"error,omitempty"`
}

// InvocationFilter selects invocation records (Store.InvocationList). Empty
// fields do not filter; Limit defaults to 100 and is capped at 1000.
type InvocationFilter struct {
	Status Status
	// Caller is the caller's principal as recorded ("agent:bot").
	Caller string
	RunID  string
	// SessionID keeps the calls dispatched to one tab's session.
	SessionID string
	// User keeps the calls made for that user ("user:alice").
	User  string
	Limit int
}
