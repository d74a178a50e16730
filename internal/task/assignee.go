package task

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// A task is worked either by the built-in assistant, whose runs this
// package starts and follows, or by an agent acting for the task's owner
// (an agent token with that agent's name and that user), which works it
// through its own calls: it declares each call it makes for the task
// (Enter, then Call.Done), and ends the task itself (Complete, Fail).
// Each such call goes through the broker's one check with the task's
// envelope in the caller's principal (Principal.Task), exactly as the
// assistant's calls do, so a tool outside the envelope is TOOL_NOT_FOUND.

// Bounds of what an assigned agent reports.
const (
	MaxResultBytes = 256 << 10
	MaxErrorBytes  = 4 << 10
)

// external reports whether t is worked by an agent other than the
// built-in assistant: the daemon starts no run for it, and a restart
// leaves it as it is (its agent resumes it).
func external(t switchboard.Task) bool {
	return t.Assignee != "" && t.Assignee != switchboard.Assistant().String()
}

// assignee resolves the assignee a request names for a task of owner:
// the built-in assistant by default, else an agent holding an unrevoked
// token that acts for owner. An agent that does not exist and one that
// acts for someone else get the same AGENT_NOT_FOUND, so no one learns of
// another user's agents.
func (s *Service) assignee(ctx context.Context, owner, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch name {
	case "", switchboard.AssistantID, switchboard.Assistant().String():
		return switchboard.Assistant().String(), nil
	}
	if kind, _, ok := strings.Cut(name, ":"); ok && kind != string(switchboard.PrincipalAgent) {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput,
			"assignee %q: a task is assigned to an agent, \"agent:<name>\", or to the built-in assistant (\"assistant\")", name)
	}
	agent := strings.TrimPrefix(name, string(switchboard.PrincipalAgent)+":")
	if agent == "" || len(agent) > 200 {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "assignee %q: name an agent, \"agent:<name>\"", name)
	}
	toks, err := s.st.TokenList(ctx)
	if err != nil {
		return "", err
	}
	for _, tk := range toks {
		if tk.Agent == agent && tk.RevokedAt.IsZero() && tk.Principal().ActsFor() == owner {
			return tk.Principal().String(), nil
		}
	}
	return "", switchboard.Errorf(switchboard.CodeAgentNotFound,
		"no agent %q acts for %s: a task goes to an agent holding a token minted for that user (switchboard token create --agent %s --user %s)",
		agent, owner, agent, owner).WithDetails(map[string]any{"field": "assignee"})
}

// assigned reports whether p is t's assignee: the agent it names, acting
// for its owner (two tokens of one agent name for two users are two
// agents).
func assigned(p switchboard.Principal, t switchboard.Task) bool {
	return external(t) && p.Kind == switchboard.PrincipalAgent && p.String() == t.Assignee && p.ActsFor() == t.Owner
}

// sees is the record rule for tasks: workspace's (the owner, the creator
// agent, the admin), the assignee, and a tab for its own user's tasks
// (tab.go).
func sees(v switchboard.Principal, t switchboard.Task) bool {
	switch {
	case v.Kind == switchboard.PrincipalSession:
		return t.Owner == v.ActsFor()
	case assigned(v, t):
		return true
	}
	return workspace.SeesRecord(workspace.ViewerOf(v), t.Creator, t.Owner)
}

// assignedTo returns task id if p is its assignee; a caller who may see
// the task but does not work it is FORBIDDEN, anyone else NOT_FOUND as
// for an unknown id.
func (s *Service) assignedTo(ctx context.Context, p switchboard.Principal, id, what string) (switchboard.Task, error) {
	t, err := s.st.TaskGet(ctx, id)
	if err != nil {
		return t, err
	}
	switch {
	case assigned(p, t):
		return t, nil
	case sees(p, t):
		return t, switchboard.Errorf(switchboard.CodeForbidden, "task %s is assigned to %s: only it %s", t.ID, t.Assignee, what)
	}
	return switchboard.Task{}, switchboard.Errorf(switchboard.CodeNotFound, "no task %q", id)
}

// Call is one call an assigned agent makes for a task, between Enter and
// Done.
type Call struct {
	s  *Service
	id string
}

// Enter admits a call that agent p makes for task id and returns the
// principal the call runs as: p with the task's envelope
// (Principal.Task), which the broker checks before p's own scope. It
// counts the call against the task's budget before it runs, and marks
// the task working (picked up). A task past its call budget or its
// deadline fails there, with BUDGET_EXCEEDED or TIMEOUT, and the call is
// refused with that code; a finished task is CONFLICT. The caller must
// call Done with the call's record once it has one.
func (s *Service) Enter(ctx context.Context, p switchboard.Principal, id string) (switchboard.Principal, *Call, error) {
	t, err := s.assignedTo(ctx, p, id, "calls under it")
	if err != nil {
		return p, nil, err
	}
	var refused error
	t, err = s.update(ctx, t, func(t *switchboard.Task) error {
		refused = nil
		if t.Status.Terminal() {
			return switchboard.Errorf(switchboard.CodeConflict, "task %s is already %s", t.ID, t.Status)
		}
		if _, refused = s.limits(*t); refused != nil {
			t.Status, t.Error, t.FinishedAt = switchboard.TaskFailed, switchboard.AsError(refused), s.now()
			return nil
		}
		t.Usage.Calls++
		t.Status = switchboard.TaskWorking
		return nil
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return p, nil, err
	}
	p.Task = scopeOf(t)
	return p, &Call{s: s, id: t.ID}, nil
}

// Done records the call's end as a step of the task (with its
// invocation, which the ledger's entries name). A call refused before it
// was recorded (inv has no id: outside the envelope, bad input) ran
// nothing and gives its budget back; a replay of a call already recorded
// adds no second step.
func (c *Call) Done(inv switchboard.Invocation) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_, err := c.s.update(ctx, switchboard.Task{ID: c.id}, func(t *switchboard.Task) error {
		if inv.ID == "" || slices.ContainsFunc(t.Steps, func(st switchboard.TaskStep) bool { return st.InvocationID == inv.ID }) {
			t.Usage.Calls = max(0, t.Usage.Calls-1)
			return nil
		}
		t.Steps = append(t.Steps, switchboard.TaskStep{Kind: "call", InvocationID: inv.ID, Tool: inv.Tool,
			Status: string(inv.Status), At: c.s.now()})
		return nil
	})
	if err != nil {
		c.s.log.Warn("could not record a task's step", "task", c.id, "invocation", inv.ID, "err", err)
	}
}

// Complete ends task id completed with its assignee's result, kept as the
// artifact "result" (a JSON string as its text, anything else as its
// data). Only the assignee completes its task; past the deadline the task
// fails with TIMEOUT instead.
func (s *Service) Complete(ctx context.Context, p switchboard.Principal, id string, result json.RawMessage) (switchboard.Task, error) {
	result = bytes.TrimSpace(result)
	switch {
	case len(result) == 0 || bytes.Equal(result, []byte("null")):
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "a completed task needs its result: {\"result\": \"what was done\"} (text or any JSON)")
	case len(result) > MaxResultBytes:
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodePayloadTooLarge, "a task's result is at most %d bytes; keep large outputs where the tools put them and name them", MaxResultBytes)
	}
	art := switchboard.TaskArtifact{ID: "result-" + newID()[:12], Name: "result"}
	if err := json.Unmarshal(result, &art.Text); err != nil {
		art.Data = result
	}
	return s.end(ctx, p, id, "completes it", func(t *switchboard.Task) {
		t.Status = switchboard.TaskCompleted
		t.Artifacts = append(t.Artifacts, art)
	})
}

// Fail ends task id failed with its assignee's error (its code one of the
// frozen codes, UPSTREAM_ERROR when it names none: the work failed at the
// agent, upstream of the daemon).
func (s *Service) Fail(ctx context.Context, p switchboard.Principal, id string, e switchboard.Error) (switchboard.Task, error) {
	e.Message = strings.TrimSpace(e.Message)
	if e.Code == "" {
		e.Code = switchboard.CodeUpstreamError
	}
	switch {
	case e.Message == "" || len(e.Message) > MaxErrorBytes || !utf8.ValidString(e.Message):
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "a failed task needs its error: {\"error\": \"why\"} or {\"error\": {\"code\": \"UPSTREAM_ERROR\", \"message\": \"why\"}}, at most %d bytes", MaxErrorBytes)
	case !slices.Contains(switchboard.Codes, e.Code):
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "error code %q is not one of switchboard's error codes", e.Code)
	}
	fail := switchboard.Errorf(e.Code, "%s", e.Message).WithDetails(e.Details)
	return s.end(ctx, p, id, "fails it", func(t *switchboard.Task) {
		t.Status, t.Error = switchboard.TaskFailed, fail
	})
}

// end applies how the assignee ends task id: a finished task is
// CONFLICT, one past its deadline fails with TIMEOUT.
func (s *Service) end(ctx context.Context, p switchboard.Principal, id, what string, fn func(*switchboard.Task)) (switchboard.Task, error) {
	t, err := s.assignedTo(ctx, p, id, what)
	if err != nil {
		return t, err
	}
	var late error
	t, err = s.update(ctx, t, func(t *switchboard.Task) error {
		late = nil
		if t.Status.Terminal() {
			return switchboard.Errorf(switchboard.CodeConflict, "task %s is already %s", t.ID, t.Status)
		}
		t.FinishedAt = s.now()
		if dl := t.Envelope.Deadline; !dl.IsZero() && !dl.After(t.FinishedAt) {
			late = switchboard.Errorf(switchboard.CodeTimeout, "task %s passed its deadline %s", t.ID, dl.UTC().Format(time.RFC3339))
			t.Status, t.Error = switchboard.TaskFailed, switchboard.AsError(late)
			return nil
		}
		fn(t)
		return nil
	})
	if err == nil && late != nil {
		return t, late
	}
	return t, err
}

// reopen puts a stopped task of an agent back as submitted, for its agent
// to pick up again: the daemon has no run of its to start.
func (s *Service) reopen(ctx context.Context, t switchboard.Task) (switchboard.Task, error) {
	return s.update(ctx, t, func(t *switchboard.Task) error {
		if !t.Status.Terminal() || t.Status == switchboard.TaskCompleted {
			return switchboard.Errorf(switchboard.CodeConflict, "task %s is %s", t.ID, t.Status)
		}
		t.Status, t.Error, t.FinishedAt = switchboard.TaskSubmitted, nil, time.Time{}
		return nil
	})
}

// Assigned returns the tasks assigned to agent p (GET /tasks?assignee=me),
// newest first; INVALID_INPUT for a caller that is not an agent.
func (s *Service) Assigned(ctx context.Context, p switchboard.Principal, status []switchboard.TaskStatus, limit int) ([]switchboard.Task, error) {
	if p.Kind != switchboard.PrincipalAgent {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "assignee=me lists the tasks assigned to an agent: use an agent token")
	}
	return s.st.TaskList(ctx, switchboard.TaskFilter{Owner: p.ActsFor(), Assignee: p.String(), Status: status, Limit: limit})
}

// scopeOf is the scope every call made for t is checked against, whoever
// makes it (the assistant's runs, an assigned agent): the whole envelope,
// its projects' access included.
func scopeOf(t switchboard.Task) *switchboard.TaskScope {
	return &switchboard.TaskScope{ID: t.ID, Projects: t.Envelope.Projects, Allow: t.Envelope.Allow, Deny: t.Envelope.Deny}
}
