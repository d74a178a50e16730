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
	Scope SessionScope `json:"scope,omitzero"`
	// Canvas is the session's narrowing of the canvas policy (the
	// canvasPolicy of POST /sessions, a JSON object; empty for none). It is
	// written with the session, so no replica sees the session without it;
	// package panel decodes and enforces it.
	Canvas json.RawMessage `json:"canvasPolicy,omitempty"`
	// Replica is the serve process that opened the session (Replica.ID).
	Replica   string    `json:"replica,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ClosedAt  time.Time `json:"closedAt,omitzero"`

	// What the tab sent, kept with the session so any replica serves it
	// (a round-robin load balancer may send each request elsewhere).
	// Tools is its latest advertisement (PUT /sessions/{id}/tools), as
	// declared (no Origin); Report its latest workspace report (PUT
	// /sessions/{id}/context).
	Tools  []Tool    `json:"tools,omitempty"`
	Report TabReport `json:"report,omitzero"`
	// Stream is the replica holding the tab's event stream ("" none);
	// StreamAt is when a stream last attached or detached (zero: the tab
	// never attached). SeenAt is when the tab last advertised, reported,
	// attached or detached.
	Stream   string    `json:"stream,omitempty"`
	StreamAt time.Time `json:"streamAt,omitzero"`
	SeenAt   time.Time `json:"seenAt,omitzero"`
}

// TabReport is what a tab last reported of its workspace, as kept within
// the workspace's bounds (package workspace): its contexts and how many
// contexts and panels past the bounds were dropped.
type TabReport struct {
	Contexts        []WorkspaceContext `json:"contexts,omitempty"`
	DroppedContexts int                `json:"droppedContexts,omitempty"`
	DroppedPanels   int                `json:"droppedPanels,omitempty"`
	At              time.Time          `json:"at,omitzero"`
}

// SessionFilter selects open sessions for SessionList.
type SessionFilter struct {
	// SeenSince keeps the sessions whose tab was heard from (SeenAt) at
	// or after it, or whose stream is attached (Stream set); zero keeps
	// every open session.
	SeenSince time.Time
	// Limit caps the answer; zero means 1000.
	Limit int
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

// TabState says whether a session's tab can take browser calls now.
type TabState string

const (
	// TabConnected: the tab's event stream is attached; calls go to it.
	TabConnected TabState = "connected"
	// TabConnecting: the tab advertised tools but has not attached its
	// stream yet; it is not offered for calls.
	TabConnecting TabState = "connecting"
	// TabReconnecting: the stream dropped less than the reconnect window
	// ago. The tab is not offered for new calls, but a call named to it
	// waits for the stream (at most the rest of the window).
	TabReconnecting TabState = "reconnecting"
	// TabDisconnected: the stream has been down longer than the reconnect
	// window: calls to the tab fail with SESSION_GONE. The session is kept
	// until ExpiresAt so a reload resumes it.
	TabDisconnected TabState = "disconnected"
	// TabGone: the session is open but no tab is attached to this daemon
	// (its keep window passed, or it never connected here).
	TabGone TabState = "gone"
	// TabClosed: the session was ended for good (DELETE).
	TabClosed TabState = "closed"
)

// SessionInfo is one browser session as GET /sessions and GET
// /sessions/{id} show it: who it is for, whether its tab is connected,
// the browser tools it offers and the contexts it last reported.
type SessionInfo struct {
	ID string `json:"id"`
	// User is the principal the app's backend opened the session for.
	User  string   `json:"user,omitempty"`
	State TabState `json:"state"`
	// Connected is State == connected: the tab takes calls now.
	Connected bool      `json:"connected"`
	CreatedAt time.Time `json:"createdAt"`
	// LastSeen is when the daemon last heard from the tab: now while its
	// stream is attached, else when the stream dropped (or when it last
	// advertised, if it never attached).
	LastSeen time.Time `json:"lastSeen,omitzero"`
	// ExpiresAt, for a tab whose stream is down, is when the daemon drops
	// it (its tools, its pending requests) unless the stream comes back.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	ClosedAt  time.Time `json:"closedAt,omitzero"`
	// Pending counts the browser calls dispatched to the tab and not yet
	// answered.
	Pending int `json:"pending"`
	// Replica is the replica holding the tab's stream (Replica.ID), when
	// the daemon runs several; empty while no stream is attached.
	Replica string `json:"replica,omitempty"`
	// Tools are the browser tools the tab advertises (each with its origin
	// naming the session); Contexts what it last reported with PUT
	// /sessions/{id}/context. Both are empty, never null.
	Tools    []Tool             `json:"tools"`
	Contexts []WorkspaceContext `json:"contexts"`
}
