package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/sse"
)

// The console's live approvals inbox: GET /approvals/events is the user's
// alone, opens with "ready" once subscribed, then carries approval.request
// when an agent's call starts waiting and approval.resolved when the user
// decides it.
func TestApprovalEventsStream(t *testing.T) {
	t.Parallel()
	d, srv := agentsDaemon(t, daemon.Options{})
	ctx := context.Background()
	err := d.RegisterFunc(ctx, switchboard.Tool{Name: "notes.delete", Description: "Delete a note.", Class: switchboard.ClassMutate,
		Approval: switchboard.ApprovalHITL, InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)},
		func(context.Context, json.RawMessage) (any, error) { return map[string]bool{"deleted": true}, nil })
	if err != nil {
		t.Fatal(err)
	}
	code, tok := do(t, srv, agentsToken, "POST", "/api/v1/tokens", map[string]any{"agent": "bot"})
	if code != 201 {
		t.Fatalf("create token: %d %v", code, tok)
	}
	agentTok := tok["token"].(string)
	if code, body := do(t, srv, agentTok, "GET", "/api/v1/approvals/events", nil); code != http.StatusForbidden {
		t.Fatalf("an agent token on the stream: %d %v", code, body)
	}

	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/approvals/events", nil)
	req.Header.Set("Authorization", "Bearer "+agentsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != sse.ContentType {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := sse.NewReader(resp.Body)
	next := func(want string) map[string]any {
		t.Helper()
		ev, err := rd.Next()
		if err != nil || ev.Event != want {
			t.Fatalf("event %q (%v), want %s", ev.Event, err, want)
		}
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	next("ready")

	code, call := do(t, srv, agentTok, "POST", "/api/v1/tools/notes.delete/call", map[string]any{"input": map[string]any{"id": "n1"}, "async": true})
	if code != 202 || call["status"] != "awaiting_approval" {
		t.Fatalf("agent call: %d %v", code, call)
	}
	reqEv := next("approval.request")
	id, _ := reqEv["approvalId"].(string)
	if reqEv["tool"] != "notes.delete" || reqEv["invocationId"] != call["invocationId"] || id == "" {
		t.Fatalf("request event %v", reqEv)
	}
	if code, body := do(t, srv, agentsToken, "POST", "/api/v1/approvals/"+id, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve: %d %v", code, body)
	}
	res := next("approval.resolved")
	if res["approvalId"] != id || res["status"] != "approved" {
		t.Fatalf("resolved event %v", res)
	}
}

// The console's list routes: GET /invocations (newest first, ?status=,
// ?limit=, no input or result, an agent sees its own), GET /jobs (a running
// job's live progress) and GET /runs; bad filters are INVALID_INPUT.
func TestListRoutes(t *testing.T) {
	t.Parallel()
	d, srv := agentsDaemon(t, daemon.Options{})
	ctx := context.Background()
	echo := switchboard.Tool{Name: "notes.read", Description: "Read a note.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}
	err := d.RegisterFunc(ctx, echo, func(_ context.Context, in json.RawMessage) (any, error) {
		return map[string]string{"secret": "s3"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	release, reported := make(chan struct{}), make(chan struct{})
	export := switchboard.Tool{Name: "deck.export", Description: "Export a deck.", Class: switchboard.ClassJob,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
	err = d.RegisterFunc(ctx, export, func(ctx context.Context, _ json.RawMessage) (any, error) {
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 1, Total: 2, Message: "half way"})
		close(reported)
		<-release
		return map[string]string{"url": "x"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, tok := do(t, srv, agentsToken, "POST", "/api/v1/tokens", map[string]any{"agent": "bot"})
	agentTok := tok["token"].(string)
	for _, c := range []struct{ tok, id string }{{agentsToken, "n1"}, {agentTok, "n2"}, {agentsToken, "n3"}} {
		if code, body := do(t, srv, c.tok, "POST", "/api/v1/tools/notes.read/call", map[string]any{"input": map[string]any{"id": c.id}}); code != 200 {
			t.Fatalf("call: %d %v", code, body)
		}
	}
	items := func(tok, path string) []map[string]any {
		t.Helper()
		code, body := do(t, srv, tok, "GET", path, nil)
		if code != 200 {
			t.Fatalf("%s: %d %v", path, code, body)
		}
		var out []map[string]any
		for _, it := range body["items"].([]any) {
			out = append(out, it.(map[string]any))
		}
		return out
	}
	all := items(agentsToken, "/api/v1/invocations")
	if len(all) != 3 || all[0]["caller"] != "user:admin" || all[1]["caller"] != "agent:bot" || all[0]["status"] != "succeeded" {
		t.Fatalf("invocations %v", all)
	}
	if _, has := all[0]["result"]; has {
		t.Errorf("a list item carries the result: %v", all[0])
	}
	if _, has := all[0]["input"]; has {
		t.Errorf("a list item carries the input: %v", all[0])
	}
	if got := items(agentsToken, "/api/v1/invocations?limit=1"); len(got) != 1 || got[0]["invocationId"] != all[0]["invocationId"] {
		t.Errorf("limit=1: %v", got)
	}
	if got := items(agentTok, "/api/v1/invocations"); len(got) != 1 || got[0]["caller"] != "agent:bot" {
		t.Errorf("the agent sees %v, want its own call only", got)
	}
	if got := items(agentsToken, "/api/v1/invocations?status=failed"); len(got) != 0 {
		t.Errorf("status=failed: %v", got)
	}
	for _, path := range []string{"/api/v1/invocations?status=done", "/api/v1/invocations?limit=0", "/api/v1/jobs?status=paused", "/api/v1/runs?limit=x"} {
		if code, body := do(t, srv, agentsToken, "GET", path, nil); code != 400 || errCode(body) != "INVALID_INPUT" {
			t.Errorf("%s: %d %v", path, code, body)
		}
	}

	code, call := do(t, srv, agentsToken, "POST", "/api/v1/tools/deck.export/call", map[string]any{"input": map[string]any{}, "async": true})
	if code != 202 {
		t.Fatalf("job call: %d %v", code, call)
	}
	<-reported
	jobs := items(agentsToken, "/api/v1/jobs")
	if len(jobs) != 1 || jobs[0]["status"] != "running" || jobs[0]["progress"] != 0.5 || jobs[0]["message"] != "half way" || jobs[0]["tool"] != "deck.export" {
		t.Fatalf("running jobs %v", jobs)
	}
	if got := items(agentTok, "/api/v1/jobs"); len(got) != 0 {
		t.Errorf("the agent sees the user's job: %v", got)
	}
	close(release)
	id := jobs[0]["jobId"].(string)
	if code, body := do(t, srv, agentsToken, "GET", "/api/v1/jobs/"+id, nil); code != 200 {
		t.Fatalf("job: %d %v", code, body)
	}
	if code, body := do(t, srv, agentTok, "GET", "/api/v1/runs", nil); code != 403 {
		t.Errorf("an agent lists runs: %d %v", code, body)
	}
	if got := items(agentsToken, "/api/v1/runs"); len(got) != 0 {
		t.Errorf("runs %v, want none yet", got)
	}
}
