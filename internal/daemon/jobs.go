package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/job"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// jobSessions records every job as a background agent session
// (docs/agents.md): its calls are the session's, its progress is the
// session's task, interrupting it is the job's own cancel, and it ends
// with the job.
type jobSessions struct{ d *Daemon }

var _ job.Sessions = jobSessions{}

func (js jobSessions) JobStarted(ctx context.Context, j switchboard.Job) context.Context {
	d := js.d
	if d.Agents == nil {
		return ctx
	}
	p, _ := switchboard.PrincipalFrom(ctx)
	// The job acts for whoever its starter acts for: the user of the
	// assistant's tab or of the agent session that called it, else the
	// calling user (agent tokens act for the daemon's user).
	user := ""
	if starter, ok := switchboard.AgentSessionFrom(ctx); ok {
		user, _ = d.Agents.UserOf(starter)
	} else if p.Kind == switchboard.PrincipalUser {
		user = p.String()
	}
	if p.Kind == "" {
		p = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
	}
	id := j.ID
	s, err := d.Agents.Start(ctx, workspace.Spec{
		Kind: switchboard.AgentBackground, Label: j.Tool, Principal: p, User: user, Transport: workspace.TransportJob,
		Task: j.Tool, JobID: j.ID, Status: switchboard.AgentRunning,
		Interrupt: func(ctx context.Context, _ string) error {
			_, err := d.Jobs.Cancel(ctx, id) // CONFLICT when it ended first: its end stands
			return err
		},
	})
	if err != nil {
		return ctx
	}
	return switchboard.WithAgentSession(ctx, s.ID)
}

func (js jobSessions) JobProgress(ctx context.Context, j switchboard.Job) {
	id, ok := js.session(j)
	if !ok {
		return
	}
	// Whole percents: the task changes (and the tabs hear of it) at most a
	// hundred times, however often the job reports.
	pct := math.Floor(100 * j.Progress)
	task := fmt.Sprintf("%s %.0f%%", j.Tool, pct)
	if j.Message != "" {
		task += ": " + j.Message
	}
	js.d.Agents.Report(ctx, id, task, pct/100)
}

func (js jobSessions) JobEnded(ctx context.Context, j switchboard.Job) {
	id, ok := js.session(j)
	if !ok {
		return
	}
	status, reason := switchboard.AgentDone, "job "+string(j.Status)
	if j.Status == switchboard.JobCancelled {
		status = switchboard.AgentCancelled
	}
	if j.Error != nil {
		reason += ": " + j.Error.Message
	}
	_, _ = js.d.Agents.End(ctx, id, status, reason) // ended already (a second settle): nothing to do
}

// session finds the background session of job j.
func (js jobSessions) session(j switchboard.Job) (string, bool) {
	if js.d.Agents == nil {
		return "", false
	}
	return js.d.Agents.ByJob(j.ID)
}

// A job's work runs on the replica that started it; a cancel that lands
// on another replica is asked of that one (cluster.Asker), which stops
// the work and records the end, with the canceller's principal on the
// ledger entry. Without an answer (the owner is gone or a message was
// lost) the cancel is recorded in the store where it landed: the owner's
// end then loses the compare-and-swap, and a dead owner's job is the
// claimer's to fail anyway.
const (
	askJobCancel  = "jobs.cancel"
	jobCancelWait = 5 * time.Second
)

type jobCancelRequest struct {
	ID        string                 `json:"id"`
	Principal *switchboard.Principal `json:"principal,omitempty"`
}

// forwardJobCancel is job.Options.Forward.
func (d *Daemon) forwardJobCancel(ctx context.Context, owner, id string) (switchboard.Job, bool, error) {
	if d.asker == nil {
		return switchboard.Job{}, false, nil
	}
	req := jobCancelRequest{ID: id}
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		req.Principal = &p
	}
	body, err := json.Marshal(req)
	if err != nil {
		return switchboard.Job{}, false, nil
	}
	actx, cancel := context.WithTimeout(ctx, jobCancelWait)
	defer cancel()
	res, err := d.asker.Ask(actx, owner, askJobCancel, body)
	if err != nil {
		if cluster.NoAnswer(err) {
			d.log.Warn("the replica running a job did not answer its cancel; recording it here", "job", id, "replica", owner, "err", err)
			return switchboard.Job{}, false, nil
		}
		return switchboard.Job{}, true, err
	}
	var j switchboard.Job
	if err := json.Unmarshal(res, &j); err != nil {
		return j, true, switchboard.Errorf(switchboard.CodeInternal, "decode the answer to a relayed job cancel: %v", err)
	}
	return j, true, nil
}

// serveJobCancels answers the cancels asked of this replica's jobs.
func (d *Daemon) serveJobCancels() {
	if d.asker == nil {
		return
	}
	d.asker.Handle(askJobCancel, func(ctx context.Context, p []byte) ([]byte, error) {
		var req jobCancelRequest
		if err := json.Unmarshal(p, &req); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode a relayed job cancel: %v", err)
		}
		if req.Principal != nil {
			ctx = switchboard.WithPrincipal(ctx, *req.Principal)
		}
		j, err := d.Jobs.Cancel(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(j)
	})
}
