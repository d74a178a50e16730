package task

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/switchboardhq/switchboard"
)

// A task's assistant may hand part of its work to an A2A peer
// (agents.handoff with a configured peer's URL). The peer's task is a
// step of the handing task (kind "handoff", its Remote saying where it
// is); the daemon follows it there (Options.Follow) and reports what the
// peer says through HandoffUpdate, which is the one place a handoff's
// end changes the task: its artifacts become the task's, its failure
// fails the task, and the task completes only once its run has answered
// and every handoff has completed.

// errUnchanged ends an update that would store nothing new.
var errUnchanged = errors.New("unchanged")

// Remaining is what task id has left to hand on: its envelope with the
// calls, tokens and dollars it has not spent (counting its run in progress
// and the handoff call itself) and its deadline. A budget with nothing
// left is BUDGET_EXCEEDED, a passed deadline TIMEOUT.
func (s *Service) Remaining(ctx context.Context, id string) (switchboard.TaskEnvelope, error) {
	t, err := s.st.TaskGet(ctx, id)
	if err != nil {
		return switchboard.TaskEnvelope{}, err
	}
	if n := len(t.Runs); n > 0 {
		if r, err := s.opts.Agent.Get(t.Runs[n-1]); err == nil && !done(r.Done()) {
			in := r.Info() // its usage joins the task's when it ends
			t.Usage.Tokens += in.Usage.TotalTokens
			if in.Cost != nil {
				t.Usage.Cost += *in.Cost
			}
		}
	}
	t.Usage.Calls++ // the handoff itself
	l, err := s.limits(t)
	if err != nil {
		return switchboard.TaskEnvelope{}, err
	}
	env := t.Envelope
	env.MaxCalls, env.MaxTokens, env.MaxCost = l.MaxCalls, l.MaxTokens, l.MaxCost
	return env, nil
}

func done(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// AddHandoff records that task id handed work to an A2A peer, whose task
// r names and is in status st, and starts following it.
func (s *Service) AddHandoff(ctx context.Context, id string, r switchboard.TaskRemote, st switchboard.TaskStatus) error {
	_, err := s.update(ctx, switchboard.Task{ID: id}, func(t *switchboard.Task) error {
		step := switchboard.TaskStep{Kind: "handoff", Tool: "agents.handoff", Status: string(st), Remote: &r, At: s.now()}
		if n := len(t.Runs); n > 0 {
			step.RunID = t.Runs[n-1]
		}
		t.Steps = append(t.Steps, step)
		return nil
	})
	if err != nil {
		return err
	}
	if s.opts.Follow != nil && !st.Terminal() {
		s.opts.Follow(id, r)
	}
	return nil
}

// HandoffUpdate records what the peer says of a task handed off from
// task id: the handoff step's state (st, and r's A2A state and message)
// and the artifacts it made (added once each). A handoff that fails or is
// cancelled at the peer fails the task with UPSTREAM_ERROR, stopping its
// run; one that completes completes the task if its run has answered and
// no other handoff is open. It reports whether the handoff is still worth
// following: neither it nor the task is over.
func (s *Service) HandoffUpdate(ctx context.Context, id string, r switchboard.TaskRemote, st switchboard.TaskStatus, arts []switchboard.TaskArtifact) (bool, error) {
	follow := false
	t, err := s.update(ctx, switchboard.Task{ID: id}, func(t *switchboard.Task) error {
		i := slices.IndexFunc(t.Steps, func(x switchboard.TaskStep) bool {
			return x.Kind == "handoff" && x.Remote != nil && x.Remote.TaskID == r.TaskID && x.Remote.Endpoint == r.Endpoint
		})
		if i < 0 {
			return switchboard.Errorf(switchboard.CodeNotFound, "task %s handed no task %s to %s", id, r.TaskID, r.Endpoint)
		}
		follow = !st.Terminal() && !t.Status.Terminal()
		step := t.Steps[i]
		changed := step.Status != string(st) || step.Remote.State != r.State || step.Remote.Message != r.Message
		remote := *step.Remote
		remote.State, remote.Message = r.State, r.Message
		step.Status, step.Remote = string(st), &remote
		t.Steps[i] = step
		for _, a := range arts {
			a.ID = "handoff-" + r.TaskID + "-" + a.ID
			if !slices.ContainsFunc(t.Artifacts, func(b switchboard.TaskArtifact) bool { return b.ID == a.ID }) {
				t.Artifacts = append(t.Artifacts, a)
				changed = true
			}
		}
		if t.Status.Terminal() || !st.Terminal() {
			if !changed {
				return errUnchanged
			}
			return nil
		}
		now := s.now()
		switch {
		case st != switchboard.TaskCompleted:
			t.Status, t.FinishedAt = switchboard.TaskFailed, now
			t.Error = switchboard.Errorf(switchboard.CodeUpstreamError, "the task handed to %s (its task %s) ended %s: %s", orURL(r), r.TaskID, st, r.Message)
		case answered(*t) && !openHandoffs(*t):
			t.Status, t.FinishedAt = switchboard.TaskCompleted, now
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return follow, nil
	}
	if err == nil && t.Status == switchboard.TaskFailed && st.Terminal() && st != switchboard.TaskCompleted {
		s.stopRun(ctx, t)
	}
	return follow, err
}

func orURL(r switchboard.TaskRemote) string {
	if r.Agent != "" {
		return r.Agent + " at " + r.Peer
	}
	return r.Peer
}

// openHandoffs reports whether a handoff of t is not over at its peer.
func openHandoffs(t switchboard.Task) bool {
	return slices.ContainsFunc(t.Steps, func(x switchboard.TaskStep) bool {
		return x.Kind == "handoff" && x.Remote != nil && !switchboard.TaskStatus(x.Status).Terminal()
	})
}

// answered reports whether t's latest run has ended with its answer (the
// task may still wait for its handoffs).
func answered(t switchboard.Task) bool {
	n := len(t.Runs)
	return n > 0 && slices.ContainsFunc(t.Artifacts, func(a switchboard.TaskArtifact) bool { return a.ID == "result-"+t.Runs[n-1] })
}

// cancelHandoffs asks the peers of t's open handoffs to cancel their
// tasks (Options.CancelRemote), after t was cancelled here.
func (s *Service) cancelHandoffs(ctx context.Context, t switchboard.Task) {
	if s.opts.CancelRemote == nil {
		return
	}
	for _, st := range t.Steps {
		if st.Kind != "handoff" || st.Remote == nil || switchboard.TaskStatus(st.Status).Terminal() {
			continue
		}
		if err := s.opts.CancelRemote(ctx, t.ID, *st.Remote); err != nil {
			s.log.Warn("could not cancel a handed-off task at its peer", "task", t.ID, "peer", st.Remote.Peer, "remote", st.Remote.TaskID, "err", err)
		}
	}
}

// followHandoffs starts following t's open handoffs (after a restart).
func (s *Service) followHandoffs(t switchboard.Task) {
	if s.opts.Follow == nil {
		return
	}
	for _, st := range t.Steps {
		if st.Kind == "handoff" && st.Remote != nil && !switchboard.TaskStatus(st.Status).Terminal() {
			s.opts.Follow(t.ID, *st.Remote)
		}
	}
}

// handoffLine is a handoff step as a resumed run is told of it.
func handoffLine(st switchboard.TaskStep) string {
	return fmt.Sprintf("- handed to %s as its task %s: %s\n", orURL(*st.Remote), st.Remote.TaskID, st.Status)
}
