package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestAsyncCallJobsAndInvocation: an agent's mutating call with --async
// returns while it awaits approval and `invocation` shows it; a job tool's
// job can be shown and cancelled from the CLI.
func TestAsyncCallJobsAndInvocation(t *testing.T) {
	ctx := context.Background()
	d, srv := newTestDaemon(t)
	obj := json.RawMessage(`{"type":"object"}`)
	if err := d.RegisterFunc(ctx, switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: obj},
		func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "t1"}, nil }); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	if err := d.RegisterFunc(ctx, switchboard.Tool{Name: "exports.build", Description: "Build an export.", Class: switchboard.ClassJob, InputSchema: obj},
		func(ctx context.Context, _ json.RawMessage) (any, error) {
			switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 0.25, Total: 1, Message: "collecting"})
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}); err != nil {
		t.Fatal(err)
	}
	admin := []string{"--addr", srv.URL, "--token", testToken}

	// An agent's mutation waits for approval; --async returns at once.
	tok, err := client.New(srv.URL, testToken, nil).CreateToken(ctx, client.TokenRequest{Agent: "planner", Allow: []string{"tasks.*"}})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "--addr", srv.URL, "--token", tok.Token, "tools", "call", "tasks.create", "--async")
	var resp switchboard.CallResponse
	if code != 0 || json.Unmarshal([]byte(out), &resp) != nil || resp.Status != switchboard.StatusAwaitingApproval || !strings.Contains(errs, "switchboard invocation "+resp.InvocationID) {
		t.Fatalf("async call: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(admin, "invocation", resp.InvocationID)...)
	if code != 0 || !strings.Contains(out, `"awaiting_approval"`) {
		t.Fatalf("invocation: %d %q", code, out)
	}

	// A job tool answers with its job at once; jobs show / cancel follow it.
	code, out, errs = run(t, append(admin, "tools", "call", "exports.build")...)
	var job struct {
		JobID string `json:"jobId"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &job) != nil || job.JobID == "" {
		t.Fatalf("job call: %d %q %q", code, out, errs)
	}
	<-started
	code, out, _ = run(t, append(admin, "jobs", "show", job.JobID)...)
	if code != 0 || !strings.Contains(out, "exports.build") {
		t.Fatalf("jobs show: %d %q", code, out)
	}
	code, out, errs = run(t, append(admin, "jobs", "cancel", job.JobID)...)
	if code != 0 || !strings.Contains(out, "cancel") {
		t.Fatalf("jobs cancel: %d %q %q", code, out, errs)
	}
	code, _, errs = run(t, append(admin, "jobs", "show", "job_nope")...)
	if code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Errorf("unknown job: %d %q", code, errs)
	}
}
