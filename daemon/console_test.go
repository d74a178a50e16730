package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/daemon"
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
