package task

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
)

// maxStepResult bounds how much of a completed step's result a resumed
// run is told.
const maxStepResult = 1 << 10

// start claims t for this replica (working) and starts an assistant run
// on it; note, when set, says why it starts again (a resume), and only a
// user's resume may start a task that failed or was cancelled.
func (s *Service) start(ctx context.Context, t switchboard.Task, note string, userResume bool) (switchboard.Task, error) {
	ctx = context.WithoutCancel(ctx) // the task outlives the request that starts it
	if err := s.checkSteps(ctx, t); err != nil {
		return s.fail(ctx, t, err, userResume)
	}
	limits, err := s.limits(t)
	if err != nil {
		return s.fail(ctx, t, err, userResume)
	}
	t, err = s.update(ctx, t, func(t *switchboard.Task) error {
		if t.Status == switchboard.TaskCompleted || (t.Status.Terminal() && !userResume) {
			return switchboard.Errorf(switchboard.CodeConflict, "task %s is already %s", t.ID, t.Status)
		}
		t.Status, t.Replica, t.Error, t.FinishedAt = switchboard.TaskWorking, s.opts.Replica, nil, time.Time{}
		return nil
	})
	if err != nil {
		return t, err
	}
	who := switchboard.Assistant()
	if t.Owner != switchboard.Operator {
		who.User = t.Owner
	}
	who.Allow, who.Deny = t.Rights.Allow, t.Rights.Deny
	who.Task = scopeOf(t)
	run, err := s.opts.Agent.Start(ctx, agent.StartRequest{
		ThreadID: fmt.Sprintf("%s-%d", t.ID, len(t.Runs)+1),
		Input:    s.prompt(ctx, t, note),
		Context:  []agui.Context{{Description: "delegated task", Value: s.describe(t)}},
		As:       &who, Limits: limits, IdempotencyScope: "task:" + t.ID,
	})
	if err != nil {
		return s.fail(ctx, t, err, userResume)
	}
	t, err = s.update(ctx, t, func(t *switchboard.Task) error {
		t.Runs = append(t.Runs, run.ID())
		return nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed { // stopping: the run is cancelled with the runtime, the task resumes at the next start
		s.wg.Add(1)
		go s.follow(t.ID, run)
	}
	return t, err
}

// checkSteps fails a task whose completed steps name a tool that no
// longer exists: a resumed run could not stand on their results.
func (s *Service) checkSteps(ctx context.Context, t switchboard.Task) error {
	seen := map[string]bool{}
	for i, st := range t.Steps {
		if st.Kind != "call" || st.Tool == "" || seen[st.Tool] {
			continue
		}
		seen[st.Tool] = true
		if _, err := s.opts.Tools.Get(ctx, st.Tool); err != nil {
			if c := switchboard.CodeOf(err); c == switchboard.CodeNotFound || c == switchboard.CodeToolNotFound {
				return switchboard.Errorf(switchboard.CodeToolNotFound,
					"step %d of task %s called %s, which is no longer in the catalog; the task cannot go on from its steps (create a new task)", i+1, t.ID, st.Tool)
			}
			return err
		}
	}
	return nil
}

// limits are what is left of the envelope's budget, for the next run.
func (s *Service) limits(t switchboard.Task) (agent.Limits, error) {
	e, u := t.Envelope, t.Usage
	l := agent.Limits{Deadline: e.Deadline}
	over := func(what string, used, max any) error {
		return switchboard.Errorf(switchboard.CodeBudgetExceeded, "task %s has used its budget of %v %s (used %v)", t.ID, max, what, used).
			WithDetails(map[string]any{"usage": u, "envelope": e})
	}
	if e.MaxCalls > 0 {
		if l.MaxCalls = e.MaxCalls - u.Calls; l.MaxCalls <= 0 {
			return l, over("calls", u.Calls, e.MaxCalls)
		}
	}
	if e.MaxTokens > 0 {
		if l.MaxTokens = e.MaxTokens - u.Tokens; l.MaxTokens <= 0 {
			return l, over("tokens", u.Tokens, e.MaxTokens)
		}
	}
	if e.MaxCost > 0 {
		if l.MaxCost = e.MaxCost - u.Cost; l.MaxCost <= 0 {
			return l, over("dollars", u.Cost, e.MaxCost)
		}
	}
	if !e.Deadline.IsZero() && !e.Deadline.After(s.now()) {
		return l, switchboard.Errorf(switchboard.CodeTimeout, "task %s passed its deadline %s", t.ID, e.Deadline.UTC().Format(time.RFC3339))
	}
	return l, nil
}

// fail ends t failed with err (unless it ended meanwhile; a stopped task
// a user resumes fails whatever it was).
func (s *Service) fail(ctx context.Context, t switchboard.Task, err error, userResume bool) (switchboard.Task, error) {
	e := switchboard.AsError(err)
	t, uerr := s.update(ctx, t, func(t *switchboard.Task) error {
		if t.Status == switchboard.TaskCompleted || (t.Status.Terminal() && !userResume) {
			return nil
		}
		t.Status, t.Error, t.FinishedAt = switchboard.TaskFailed, e, s.now()
		return nil
	})
	if uerr != nil {
		return t, uerr
	}
	return t, nil
}

// prompt is the run's user message: the goal, and for a run that goes on
// from earlier steps, what they did, so it does not do them again.
func (s *Service) prompt(ctx context.Context, t switchboard.Task, note string) string {
	if note == "" || len(t.Steps) == 0 {
		return t.Goal
	}
	var b strings.Builder
	b.WriteString(t.Goal)
	fmt.Fprintf(&b, "\n\nThis task was %s and goes on from its completed steps. Do not repeat them; their results:\n", note)
	for _, st := range t.Steps {
		if st.Kind == "handoff" && st.Remote != nil {
			b.WriteString(handoffLine(st))
			continue
		}
		if st.Kind != "call" {
			continue
		}
		fmt.Fprintf(&b, "- %s (invocation %s): %s", st.Tool, st.InvocationID, st.Status)
		if inv, err := s.st.InvocationGet(ctx, st.InvocationID); err == nil && len(inv.Result) > 0 {
			r := string(inv.Result)
			if len(r) > maxStepResult {
				r = r[:maxStepResult] + "…"
			}
			b.WriteString(" → " + r)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// describe tells the assistant what the task is allowed.
func (s *Service) describe(t switchboard.Task) string {
	b, _ := json.Marshal(map[string]any{"taskId": t.ID, "owner": t.Owner, "projects": t.Projects, "envelope": t.Envelope})
	return string(b)
}

// follow keeps the task's record in step with its run: a step for each
// call it completes and each approval it waits on, input_required while it
// waits, and its end.
func (s *Service) follow(id string, run *agent.Run) {
	defer s.wg.Done()
	ctx := context.Background()
	var answer string
	for from := 0; ; {
		recs, more, complete := run.Events(from)
		from += len(recs)
		var steps []switchboard.TaskStep
		waiting := false
		calls := 0
		for _, rec := range recs {
			switch ev := rec.Event.(type) {
			case *agui.Custom:
				if st, ok := s.approvalStep(ctx, ev, run.ID()); ok {
					steps, waiting = append(steps, st), true
				}
			case *agui.ToolCallResult:
				m, _ := ev.Metadata["switchboard"].(map[string]any)
				inv, _ := m["invocationId"].(string)
				if inv == "" {
					continue
				}
				tool, _ := m["tool"].(string)
				steps = append(steps, switchboard.TaskStep{Kind: "call", InvocationID: inv, Tool: tool,
					Status: fmt.Sprint(m["status"]), RunID: run.ID(), At: s.now()})
				calls++
				waiting = false
			case *agui.MessagesSnapshot:
				answer = lastAnswer(ev.Messages)
			}
		}
		if len(steps) > 0 {
			_, err := s.update(ctx, switchboard.Task{ID: id}, func(t *switchboard.Task) error {
				t.Steps = append(t.Steps, steps...)
				t.Usage.Calls += calls
				if !t.Status.Terminal() && latest(*t, run.ID()) {
					t.Status = switchboard.TaskWorking
					if waiting {
						t.Status = switchboard.TaskInputRequired
					}
				}
				return nil
			})
			if err != nil {
				s.log.Warn("could not record a task's steps", "task", id, "err", err)
			}
		}
		if complete {
			break
		}
		<-more
	}
	s.finish(ctx, id, run, answer)
}

// approvalStep is the step of a call that waits for approval.
func (s *Service) approvalStep(ctx context.Context, ev *agui.Custom, runID string) (switchboard.TaskStep, bool) {
	if ev.Name != "switchboard.tool.invocation" {
		return switchboard.TaskStep{}, false
	}
	m, _ := ev.Value.(map[string]any)
	if fmt.Sprint(m["status"]) != string(switchboard.StatusAwaitingApproval) {
		return switchboard.TaskStep{}, false
	}
	id, _ := m["invocationId"].(string)
	tool, _ := m["tool"].(string)
	st := switchboard.TaskStep{Kind: "approval", InvocationID: id, Tool: tool, Status: "pending", RunID: runID, At: s.now()}
	if inv, err := s.st.InvocationGet(ctx, id); err == nil {
		st.ApprovalID = inv.ApprovalID
	}
	return st, true
}

// lastAnswer is the text of the conversation's last assistant message.
func lastAnswer(ms []agui.Message) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == agui.RoleAssistant && ms[i].Content != "" {
			return ms[i].Content
		}
	}
	return ""
}

// finish records the run's end: its usage, and the task's status and
// artifact. A run the daemon's shutdown cancelled leaves the task working,
// for the next start (or a survivor) to resume.
func (s *Service) finish(ctx context.Context, id string, run *agent.Run, answer string) {
	in := run.Info()
	s.mu.Lock()
	closing := s.closed
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_, err := s.update(ctx, switchboard.Task{ID: id}, func(t *switchboard.Task) error {
		t.Usage.Tokens += in.Usage.TotalTokens
		if in.Cost != nil {
			t.Usage.Cost += *in.Cost
		}
		if t.Status.Terminal() || t.Replica != s.opts.Replica || !latest(*t, in.RunID) {
			return nil // cancelled meanwhile, taken over by another replica, or resumed with a newer run
		}
		now := s.now()
		switch in.Status {
		case switchboard.RunSucceeded:
			t.Artifacts = append(t.Artifacts, switchboard.TaskArtifact{ID: "result-" + in.RunID, Name: "result", Text: answer})
			if !openHandoffs(*t) { // else it stays working until its handoffs end (HandoffUpdate)
				t.Status, t.FinishedAt = switchboard.TaskCompleted, now
			}
		case switchboard.RunFailed:
			t.Status, t.Error, t.FinishedAt = switchboard.TaskFailed, in.Error, now
		case switchboard.RunWaiting:
			t.Status = switchboard.TaskInputRequired
		default: // cancelled
			switch {
			case !t.Envelope.Deadline.IsZero() && !now.Before(t.Envelope.Deadline):
				t.Status, t.FinishedAt = switchboard.TaskFailed, now
				t.Error = switchboard.Errorf(switchboard.CodeTimeout, "task %s passed its deadline %s", t.ID, t.Envelope.Deadline.UTC().Format(time.RFC3339))
			case closing:
				// stays working: resumed at the next start
			default:
				t.Status, t.FinishedAt = switchboard.TaskCancelled, now
				t.Error = switchboard.Errorf(switchboard.CodeCancelled, "its run %s was cancelled", in.RunID)
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("could not record a task's end", "task", id, "run", in.RunID, "err", err)
	}
}

// Recover resumes the tasks that replicas in owners were working on (an
// earlier start of this daemon, or replicas that died; "" stands for
// tasks never claimed). Their runs and calls in flight were already given
// a definite end by the sweep; completed mutations are not run again (the
// resumed run is told their results, and its calls carry the task's
// idempotency keys). Of several survivors, the compare-and-swap on the
// task's revision lets one resume each task.
func (s *Service) Recover(ctx context.Context, owners map[string]bool) (int, error) {
	ts, err := s.st.TaskList(ctx, switchboard.TaskFilter{
		Status: []switchboard.TaskStatus{switchboard.TaskSubmitted, switchboard.TaskWorking, switchboard.TaskInputRequired}, Limit: 1000})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range ts {
		if !owners[t.Replica] || t.Replica == s.opts.Replica || external(t) {
			continue // an agent's task is worked by that agent: nothing here to resume
		}
		from := t.Replica
		claimed, err := s.st.TaskUpdate(ctx, withReplica(t, s.opts.Replica))
		if err != nil {
			continue // another survivor claimed it, or it changed: it is not ours
		}
		if answered(claimed) && openHandoffs(claimed) {
			s.followHandoffs(claimed) // its run is over: only its handoffs are left
			n++
			continue
		}
		note := "interrupted when its replica stopped"
		if from == "" {
			note = "never started"
		}
		if _, err := s.start(ctx, claimed, note, false); err != nil {
			s.log.Warn("could not resume a task", "task", t.ID, "err", err)
			continue
		}
		s.followHandoffs(claimed)
		n++
	}
	return n, nil
}

// latest reports whether run is the task's newest run (or the run not yet
// recorded on it: its start is still storing it).
func latest(t switchboard.Task, run string) bool {
	return len(t.Runs) == 0 || t.Runs[len(t.Runs)-1] == run || !slices.Contains(t.Runs, run)
}

func withReplica(t switchboard.Task, replica string) switchboard.Task {
	t.Replica = replica
	return t
}
