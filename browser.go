package switchboard

import (
	"encoding/json"
	"time"
)

// BrowserActionRequest is dispatched to a live tab on its event stream.
type BrowserActionRequest struct {
	ProtocolVersion string          `json:"protocolVersion"`
	InvocationID    string          `json:"invocationId"`
	RunID           string          `json:"runId"`
	Tool            string          `json:"tool"`
	Input           json.RawMessage `json:"input"`
	// TimeoutMs tells the tab how long the daemon will wait.
	TimeoutMs int `json:"timeoutMs,omitempty"`
}

// BrowserActionResult is POSTed back by the tab to
// /api/v1/runs/{runId}/actions/{invocationId}/result.
type BrowserActionResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	InvocationID    string          `json:"invocationId"`
	OK              bool            `json:"ok"`
	Result          json.RawMessage `json:"result,omitempty"`
	Error           *Error          `json:"error,omitempty"`
}

// Session is one browser tab connected to the daemon. The session token is
// shown once at creation; only its hash is stored.
type Session struct {
	ID        string `json:"sessionId"`
	TokenHash string `json:"-"`
	// Principal names who opened the session (the user the app signed in).
	Principal string `json:"principal,omitempty"`
	// Scope is what the app let that user's assistant do in this session.
	Scope     SessionScope `json:"scope,omitzero"`
	CreatedAt time.Time    `json:"createdAt"`
	ClosedAt  time.Time    `json:"closedAt,omitzero"`
}

// SessionScope is the scope an app's backend assigns to the user it opens
// a browser session for (POST /sessions {allow, deny, panels, slots}): the
// built-in assistant of a run the tab starts calls tools as an agent
// limited to it, in the same language as an agent token's scope (package
// scope). The zero value limits nothing beyond what every agent gets (no
// user-only tool; mutations wait for approval under the default floor).
type SessionScope struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	PanelScope
}

// Limited reports whether sc limits anything.
func (sc SessionScope) Limited() bool {
	return len(sc.Allow) > 0 || len(sc.Deny) > 0 || sc.PanelScope.Limited()
}
