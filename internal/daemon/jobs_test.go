package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// TestJobsAreBackgroundSessions: a job tool's job is an agent session of
// kind background (transport job) whose task shows the job's progress;
// interrupting it is the job's own cancel (the job ends cancelled), and a
// job that finishes ends its session done.
func TestJobsAreBackgroundSessions(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	started := make(chan struct{}, 2)
	finish := make(chan struct{})
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "exports.build", Description: "Build an export.", Class: switchboard.ClassJob, InputSchema: objectSchema},
		func(ctx context.Context, in json.RawMessage) (any, error) {
			switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 0.25, Total: 1, Message: "collecting"})
			started <- struct{}{}
			if strings.Contains(string(in), "quick") {
				<-finish
				return map[string]string{"file": "export.csv"}, nil
			}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}); err != nil {
		t.Fatal(err)
	}
	call := func(input map[string]any) string {
		var resp struct {
			JobID string `json:"jobId"`
		}
		var out switchboard.CallResponse
		if code, c := e.do(t, "POST", "/api/v1/tools/exports.build/call", wsToken, map[string]any{"input": input}, &out); code != http.StatusOK {
			t.Fatalf("job call: %d %s", code, c)
		}
		if err := json.Unmarshal(out.Result, &resp); err != nil || resp.JobID == "" {
			t.Fatalf("job call answered %s", out.Result)
		}
		<-started
		return resp.JobID
	}
	jobID := call(map[string]any{})
	ag := agentOf(t, e, "background")
	if ag["jobId"] != jobID || ag["status"] != "running" || ag["transport"] != "job" || ag["principal"] != "user:admin" ||
		ag["task"] != "exports.build 25%: collecting" || ag["progress"] != 0.25 {
		t.Fatalf("the job's session: %v", ag)
	}
	var out map[string]any
	if code, c := e.do(t, "POST", "/api/v1/agents/"+ag["id"].(string)+"/interrupt", wsToken, nil, &out); code != http.StatusOK || out["status"] != "cancelled" {
		t.Fatalf("interrupt: %d %s %v", code, c, out)
	}
	var j switchboard.Job
	if code, c := e.do(t, "GET", "/api/v1/jobs/"+jobID, wsToken, nil, &j); code != http.StatusOK || j.Status != switchboard.JobCancelled {
		t.Fatalf("the job after the interrupt: %d %s %+v", code, c, j)
	}
	if !ledgerHas(t, e, "agent.status", map[string]any{"jobId": jobID, "status": "cancelled", "kind": "background"}) {
		t.Error("no agent.status entry for the cancelled background session")
	}

	quick := call(map[string]any{"quick": true})
	close(finish)
	if _, err := e.d.Jobs.Wait(ctx, quick); err != nil {
		t.Fatal(err)
	}
	ag = agentOf(t, e, "background")
	if ag["jobId"] != quick || ag["status"] != "done" || !strings.Contains(ag["reason"].(string), "succeeded") {
		t.Fatalf("the finished job's session: %v", ag)
	}
}
