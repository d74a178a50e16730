package switchboard

import (
	"context"
	"encoding/json"
	"time"
)

// The workspace model's wire records: who is acting (agent sessions), what
// the user sees (the contexts their tabs report) and the digest every agent
// reads. Package workspace keeps them; httpapi, mcpserver, the agent loop
// and the typed client all read these shapes.

// AgentKind says what kind of actor an agent session is.
type AgentKind string

const (
	// AgentChat is the built-in assistant's run, bound to its tab.
	AgentChat AgentKind = "chat"
	// AgentVoice is a voice assistant a host registers.
	AgentVoice AgentKind = "voice"
	// AgentBackground is job-class work.
	AgentBackground AgentKind = "background"
	// AgentExternal is a principal with an agent token, over MCP or HTTP.
	AgentExternal AgentKind = "external"
)

// AgentStatus is an agent session's state. It moves idle → running →
// waiting_approval → done | cancelled (running and waiting_approval may
// alternate); done and cancelled are final.
type AgentStatus string

const (
	AgentIdle            AgentStatus = "idle"
	AgentRunning         AgentStatus = "running"
	AgentWaitingApproval AgentStatus = "waiting_approval"
	AgentDone            AgentStatus = "done"
	AgentCancelled       AgentStatus = "cancelled"
)

// Final reports whether s is an end state.
func (s AgentStatus) Final() bool { return s == AgentDone || s == AgentCancelled }

// AgentScope is what an agent session may touch: tool-name globs (the
// agent token's Allow and Deny) and the panels and page slots it may work
// on (PanelScope: panels, slots).
type AgentScope struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	PanelScope
}

// AgentSession is one actor at work (GET /agents/{id}).
type AgentSession struct {
	ID    string    `json:"id"`
	Kind  AgentKind `json:"kind"`
	Label string    `json:"label"`
	// Principal is the actor name the ledger records ("agent:assistant").
	Principal string `json:"principal"`
	// User is the person the agent acts for ("user:alice"; the operator,
	// user:admin, when nobody was named).
	User  string      `json:"user,omitempty"`
	Scope *AgentScope `json:"scope,omitempty"`
	// Transport is how the agent reaches the daemon: agui, aisdk, runs,
	// mcp, http, job or host (registered with POST /agents).
	Transport string      `json:"transport"`
	Status    AgentStatus `json:"status"`
	Task      string      `json:"task,omitempty"`
	// Progress is how far its work is (0..1), when the work reports it
	// (a background session's job).
	Progress *float64 `json:"progress,omitempty"`
	// Reason says why a session ended (done or cancelled).
	Reason string `json:"reason,omitempty"`
	// SessionID is the browser tab the agent is bound to, if any; RunID
	// the assistant run, JobID the job.
	SessionID string    `json:"sessionId,omitempty"`
	RunID     string    `json:"runId,omitempty"`
	JobID     string    `json:"jobId,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	LastSeen  time.Time `json:"lastSeen"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
}

// Attention is how much of the user's attention a context has.
type Attention string

const (
	// AttentionFocused: the selected or edited context or panel.
	AttentionFocused Attention = "focused"
	// AttentionVisible: in the viewport.
	AttentionVisible Attention = "visible"
	// AttentionBackground: open but out of sight.
	AttentionBackground Attention = "background"
)

// WorkspaceContext is one thing a tab shows (a page, a route, a record
// view), as the tab reports it (PUT /sessions/{id}/context) and as the
// digest carries it.
type WorkspaceContext struct {
	ID        string           `json:"id"`
	Kind      string           `json:"kind"`
	Label     string           `json:"label"`
	Attention Attention        `json:"attention"`
	Panels    []WorkspacePanel `json:"panels"`
	// Route is the tab's location for a page context (path and query).
	Route string `json:"route,omitempty"`
	// Selection is what the user has selected in the context, if anything.
	Selection *ContextSelection `json:"selection,omitempty"`
	// SessionID is the tab that reported the context (set by the daemon).
	SessionID string `json:"sessionId,omitempty"`
	// Provenance marks what was derived from page content: tabs report it,
	// so it is data, never instructions.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// ContextSelection is the user's selection in a context: a panel, a node
// of it, and the selected text (page content, so data).
type ContextSelection struct {
	PanelID string `json:"panelId,omitempty"`
	NodeID  string `json:"nodeId,omitempty"`
	Text    string `json:"text,omitempty"`
}

// WorkspacePanel is a panel mounted in a context.
type WorkspacePanel struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title"`
	Dirty     bool   `json:"dirty,omitempty"`
	Origin    string `json:"origin"` // "host" or "agent"
	Minimized bool   `json:"minimized,omitempty"`
}

// Provenance says where a piece of data came from.
type Provenance struct {
	DerivedFrom string `json:"derivedFrom"` // "site-html" for page content
}

// WorkspaceDigest is the token-budgeted summary of the user's workspace an
// agent sees (GET /digest), scoped to what that agent may see.
type WorkspaceDigest struct {
	User             string             `json:"user"`
	Contexts         []WorkspaceContext `json:"contexts"`
	Agents           []DigestAgent      `json:"agents"`
	Jobs             []DigestJob        `json:"jobs"`
	PendingApprovals []DigestApproval   `json:"pendingApprovals"`
	RecentActivity   []DigestActivity   `json:"recentActivity"`
	// Handoffs are the newest tasks other agents handed to the reading
	// agent session (agents.handoff); absent when none.
	Handoffs []DigestHandoff `json:"handoffs,omitempty"`
	// Tasks are the open delegated tasks of the reader's user (the
	// newest few); absent when none.
	Tasks []DigestTask `json:"tasks,omitempty"`
	// Quotas are the reader's daily quotas, used and limit, when the
	// daemon has any (an agent's own, and its user's); absent otherwise.
	Quotas []DigestQuota `json:"quotas,omitempty"`
	// Tokens is the digest's size in model tokens.
	Tokens  int            `json:"tokens"`
	Dropped *DigestDropped `json:"dropped,omitempty"`
}

// DigestQuota is one daily quota of the reader: its subject
// ("agent:planner", "user:alice"), what it used today (UTC) and its
// limit (a zero field is no limit).
type DigestQuota struct {
	Subject string     `json:"subject"`
	Used    QuotaUsage `json:"used"`
	Limit   QuotaUsage `json:"limit"`
}

// DigestAgent is an agent session as the digest shows it.
type DigestAgent struct {
	ID   string    `json:"id"`
	Kind AgentKind `json:"kind"`
	// Label is what the registrant chose; Principal is who acts, as the
	// daemon knows it ("agent:planner", "assistant"): a label can say
	// anything, the principal cannot be chosen.
	Label     string      `json:"label"`
	Principal string      `json:"principal"`
	Scope     *AgentScope `json:"scope,omitempty"`
	Status    AgentStatus `json:"status"`
	Task      string      `json:"task,omitempty"`
}

// DigestJob is a running or recent job.
type DigestJob struct {
	ID         string   `json:"id"`
	Capability string   `json:"capability"`
	Scope      string   `json:"scope,omitempty"`
	Status     string   `json:"status"`
	Progress   *float64 `json:"progress,omitempty"`
}

// DigestApproval is an approval waiting for the user.
type DigestApproval struct {
	ID string `json:"id"`
	// AgentID is the agent session whose call waits (the principal, for a
	// call made outside any session).
	AgentID string `json:"agentId"`
	// PanelID is the panel instance whose action made the call, if one did.
	PanelID string `json:"panelId,omitempty"`
	Summary string `json:"summary"`
	// Escalated: a background or external agent waits on it; the user's
	// focused assistant and tab surface it.
	Escalated bool `json:"escalated,omitempty"`
}

// DigestHandoff is a handoff as the digest shows it: the task clipped,
// the artifacts counted (agents.list {agentId} shows them in full).
type DigestHandoff struct {
	ID        string    `json:"id"`
	From      string    `json:"from,omitempty"`
	FromActor string    `json:"fromActor"`
	Task      string    `json:"task"`
	ReturnTo  string    `json:"returnTo,omitempty"`
	Artifacts int       `json:"artifacts,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// DigestTask is an open delegated task as the digest shows it: the goal
// clipped, what it spent (GET /api/v1/tasks/{id} has the rest).
type DigestTask struct {
	ID     string     `json:"id"`
	Goal   string     `json:"goal"`
	Status TaskStatus `json:"status"`
	Calls  int        `json:"calls"`
	Owner  string     `json:"owner"`
	// Assignee is who works on it ("agent:assistant", "agent:planner").
	Assignee string `json:"assignee,omitempty"`
}

// DigestActivity is one recent ledger entry.
type DigestActivity struct {
	Ts     time.Time `json:"ts"`
	Actor  string    `json:"actor"`
	Verb   string    `json:"verb"`
	Target string    `json:"target"`
}

// DigestDropped counts what the token budget left out.
type DigestDropped struct {
	RecentActivity     int `json:"recentActivity,omitempty"`
	BackgroundContexts int `json:"backgroundContexts,omitempty"`
	Panels             int `json:"panels,omitempty"`
	Agents             int `json:"agents,omitempty"`
	Jobs               int `json:"jobs,omitempty"`
	// Contexts counts focused and visible contexts left out to stay under
	// the hard cap (background ones are BackgroundContexts).
	Contexts         int `json:"contexts,omitempty"`
	PendingApprovals int `json:"pendingApprovals,omitempty"`
}

type agentSessionKey struct{}

// WithAgentSession returns ctx carrying the id of the agent session acting
// in it. Transports and the agent loop set it; the broker records it on the
// invocation, the ledger entry and the approval.
func WithAgentSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, agentSessionKey{}, id)
}

// AgentSessionFrom returns the acting agent session's id in ctx, if any.
func AgentSessionFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(agentSessionKey{}).(string)
	return id, ok && id != ""
}

// AgentHandoff is one agent handing work to another (agents.handoff), in
// the shape of an A2A message: who hands off, to whom, the task, the scope
// it may use, the artifacts it carries (A2A artifacts: {name?,
// description?, parts: [{kind: text|data|file, ...}]}) and where to report
// back. It is data for the receiving agent, never instructions.
type AgentHandoff struct {
	ID string `json:"id"`
	// From is the handing agent session ("" when a user handed off);
	// FromActor its ledger actor ("agent:claude").
	From      string            `json:"from,omitempty"`
	FromActor string            `json:"fromActor"`
	To        string            `json:"to"`
	Task      string            `json:"task"`
	Scope     *AgentScope       `json:"scope,omitempty"`
	Artifacts []json.RawMessage `json:"artifacts,omitempty"`
	// ReturnTo is the agent session to report back to (default: From).
	ReturnTo   string      `json:"returnTo,omitempty"`
	CreatedAt  time.Time   `json:"createdAt"`
	Provenance *Provenance `json:"provenance,omitempty"`
	// Remote is the task an external A2A agent made of a handoff to its
	// URL: {agent, endpoint, taskId, contextId, state}.
	Remote json.RawMessage `json:"remote,omitempty"`
}

// AgentRegistration is the answer of POST /agents and of a heartbeat: the
// session, and how often it must send POST /agents/{id}/heartbeat (a
// session silent for three intervals ends done, reason "missed
// heartbeats").
type AgentRegistration struct {
	AgentSession
	HeartbeatIntervalMs int64 `json:"heartbeatIntervalMs"`
}

// AgentRecord is an agent session as the store keeps it, so that every
// replica sharing the store lists it, reads it and reaches it: the
// session as GET /agents/{id} shows it, the user it acts for and the
// replica that owns its work (whose memory holds what stops it: a run's or
// a job's cancel, the calls in flight on its behalf).
type AgentRecord struct {
	Session AgentSession
	// User is the user the session acts for ("user:alice"): who may see
	// and stop it (package workspace, access.go).
	User string
	// Replica owns the session's work (switchboard.Replica): interrupts
	// reach it there, and a survivor that takes over a dead replica ends
	// the sessions it owned.
	Replica string
	// Heartbeat marks a registered session (POST /agents): it ends when
	// its heartbeats stop, and a heartbeat may reach any replica
	// (Store.AgentTouch).
	Heartbeat bool
}

// AgentFilter selects agent records; empty fields match all.
type AgentFilter struct {
	// Active leaves out ended sessions.
	Active bool
	// Replicas keeps the sessions these replicas own.
	Replicas []string
}
