package switchboard

import (
	"encoding/json"
	"strings"
	"time"
)

// A delegated task is work a person hands to an agent: a goal, the
// projects it spans, and a permission envelope (which tools it may call,
// how many calls, tokens and dollars it may spend, by when). Its record
// lives in the store, so any replica answers for it and a working task
// survives a restart (internal/task runs it; docs/tasks.md).

// TaskStatus is a task's lifecycle state: submitted → working ⇄
// input_required → completed / failed / cancelled.
type TaskStatus string

const (
	TaskSubmitted     TaskStatus = "submitted"
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether a task in status s is over.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// TaskEnvelope is what a task may touch and spend. Projects scope the
// tools of each project the task spans (ProjectScope); Allow and Deny are
// tool globs as in an agent scope for the tools of no listed project (an
// empty Allow allows every tool the assignee may call), and Deny holds
// for every tool. A tool outside the envelope is TOOL_NOT_FOUND to the
// assignee. The budgets (zero: none beyond the daemon's) and the deadline
// stop the task with BUDGET_EXCEEDED or TIMEOUT.
type TaskEnvelope struct {
	Projects  []ProjectScope `json:"projects,omitempty"`
	Allow     []string       `json:"allow,omitempty"`
	Deny      []string       `json:"deny,omitempty"`
	MaxCalls  int            `json:"maxCalls,omitempty"`
	MaxTokens int64          `json:"maxTokens,omitempty"`
	MaxCost   float64        `json:"maxCost,omitempty"`
	Deadline  time.Time      `json:"deadline,omitzero"`
}

// TaskScope is a tool-glob scope checked before the caller's own (the
// envelope of the task a call is made under): Principal.Task.
type TaskScope struct {
	ID       string         `json:"id"`
	Projects []ProjectScope `json:"projects,omitempty"`
	Allow    []string       `json:"allow,omitempty"`
	Deny     []string       `json:"deny,omitempty"`
}

// ProjectAccess is what a task may do in a project: read it, or also
// change it.
type ProjectAccess string

const (
	// ProjectRead admits the project's tools whose class is read (and
	// the view-only ui tools): nothing that changes state.
	ProjectRead ProjectAccess = "read"
	// ProjectWrite admits every tool of the project.
	ProjectWrite ProjectAccess = "write"
	// DefaultProjectAccess is the access of a project named without one
	// (the bare-string form). It is write because that form predates
	// project scopes: it is limited to the envelope's allow globs
	// instead, so it admits exactly what such a task could call before.
	DefaultProjectAccess = ProjectWrite
)

// ProjectScope is one project a task spans and what it may do there.
// The project's tools are those its Allow globs match, by default its
// namespace (Name + ".*"). In JSON a bare string names a project with the
// default access.
type ProjectScope struct {
	Name   string        `json:"name"`
	Access ProjectAccess `json:"access,omitempty"`
	Allow  []string      `json:"allow,omitempty"`
}

// UnmarshalJSON takes {name, access?, allow?} or a bare project name.
func (p *ProjectScope) UnmarshalJSON(b []byte) error {
	var name string
	if json.Unmarshal(b, &name) == nil {
		*p = ProjectScope{Name: name}
		return nil
	}
	type plain ProjectScope
	return json.Unmarshal(b, (*plain)(p))
}

// Globs are the tool globs of the project's tools: Allow, or its
// namespace. A name that cannot be a tool namespace and no Allow names
// no tools (the project is only told to the assignee).
func (p ProjectScope) Globs() []string {
	if len(p.Allow) > 0 {
		return p.Allow
	}
	if ns := p.Name; ns != "" && strings.Trim(ns, "abcdefghijklmnopqrstuvwxyz0123456789_-.") == "" {
		return []string{ns + ".*"}
	}
	return nil
}

// Admits reports whether the project's access admits a tool of class c:
// write admits any; read only reads and view-only ui tools. An access
// left empty is DefaultProjectAccess.
func (p ProjectScope) Admits(c Class) bool {
	switch p.Access {
	case ProjectRead:
		return c == ClassRead || c == ClassUI
	case "", ProjectWrite:
		return true
	}
	return false
}

// TaskStep is one thing a task caused: a call (its invocation, whose
// ledger entries carry the same id), the approval it waited on, a
// handoff.
type TaskStep struct {
	Kind         string `json:"kind"` // "call", "approval" or "handoff"
	InvocationID string `json:"invocationId,omitempty"`
	Tool         string `json:"tool,omitempty"`
	Status       string `json:"status,omitempty"`
	ApprovalID   string `json:"approvalId,omitempty"`
	RunID        string `json:"runId,omitempty"`
	// Remote is the task an A2A peer made of a handoff step: the daemon
	// follows it there until it ends, and Status is its state here.
	Remote *TaskRemote `json:"remote,omitempty"`
	At     time.Time   `json:"at"`
}

// TaskRemote is a task handed to an A2A peer: where it is and what the
// peer last said of it. It is stored on the handing task's step, so a
// restarted daemon goes on following it.
type TaskRemote struct {
	// Peer is the configured peer's URL (its token is found by it).
	Peer      string `json:"peer"`
	Agent     string `json:"agent,omitempty"`
	Endpoint  string `json:"endpoint"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId,omitempty"`
	// State is the peer's A2A state of the task (TASK_STATE_…).
	State string `json:"state"`
	// Message is the peer's last status message (why it failed or waits).
	Message string `json:"message,omitempty"`
}

// TaskArtifact is something a task produced: the assistant's answer, a
// document a job exported.
type TaskArtifact struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// TaskUsage is what a task spent so far, over all its runs.
type TaskUsage struct {
	Calls  int     `json:"calls"`
	Tokens int64   `json:"tokens"`
	Cost   float64 `json:"cost,omitempty"`
}

// Task is a delegated task's record (GET /api/v1/tasks/{id}).
type Task struct {
	ID string `json:"id"`
	// Owner is the user the task works for ("user:alice"); Creator is who
	// created it (that user's agent token, or the admin).
	Owner   string `json:"owner"`
	Creator string `json:"creator"`
	// Assignee is who works on it: "agent:assistant", the built-in
	// assistant (the daemon runs it), or "agent:<name>", an agent acting
	// for the owner that works it through its own calls (it declares them
	// with the task's id and ends it with complete or fail).
	Assignee string       `json:"assignee"`
	Goal     string       `json:"goal"`
	Projects []string     `json:"projects,omitempty"`
	Envelope TaskEnvelope `json:"envelope"`
	// Rights are the creator's own tool scope, which the envelope never
	// widens (checked with it at every call); Narrowed says how the
	// envelope asked for was narrowed to the owner's rights.
	Rights   TaskScope  `json:"rights"`
	Narrowed []string   `json:"narrowed,omitempty"`
	Status   TaskStatus `json:"status"`
	// Context and Message are the A2A context id and message id of a task
	// created over A2A (the same message sent again finds this task).
	Context   string         `json:"contextId,omitempty"`
	Message   string         `json:"messageId,omitempty"`
	Error     *Error         `json:"error,omitempty"`
	Steps     []TaskStep     `json:"steps"`
	Artifacts []TaskArtifact `json:"artifacts"`
	Usage     TaskUsage      `json:"usage"`
	// Runs are the assistant runs that worked on it, oldest first; a
	// resume after a restart adds one.
	Runs []string `json:"runs,omitempty"`
	// Replica is the replica working on it (switchboard.Replica).
	Replica string `json:"-"`
	// Revision grows with every stored change (Store.TaskUpdate's
	// compare-and-swap).
	Revision   int64     `json:"revision"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// TaskFilter selects tasks (Store.TaskList), newest first.
type TaskFilter struct {
	// Owner and Creator, if set, keep that user's tasks and that
	// creator's.
	Owner   string
	Creator string
	// Assignee, if set, keeps the tasks assigned to that agent
	// ("agent:planner").
	Assignee string
	// Status, if set, keeps tasks in one of these statuses.
	Status []TaskStatus
	// Limit bounds the answer; 0 means 100.
	Limit int
}
