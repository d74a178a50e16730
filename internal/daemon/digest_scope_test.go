package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// TestTabDigestShowsOnlyItsUser: a tab's digest (its session token) holds
// its own user's jobs, approvals and ledger entries, never another user's
// (security review F2): the pending approval GET /approvals hides from the
// tab, the running job and the ledger entries of the admin and its agents
// are not there; the admin's digest still has them all.
func TestTabDigestShowsOnlyItsUser(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "t1"}, nil }); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "report.build", Description: "Build a report.", Class: switchboard.ClassJob, InputSchema: objectSchema},
		func(ctx context.Context, _ json.RawMessage) (any, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return map[string]string{}, nil
		}); err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if code, c := e.do(t, "POST", "/api/v1/tokens", wsToken, map[string]any{"agent": "secret-writer"}, &tok); code != http.StatusCreated {
		t.Fatalf("token: %d %s", code, c)
	}
	alice := e.openSession(t, "alice")
	if code, c := e.do(t, "PUT", "/api/v1/sessions/"+alice.SessionID+"/context", alice.SessionToken,
		`{"contexts": [{"id": "home", "kind": "page", "label": "Home", "attention": "focused"}]}`, nil); code != 200 {
		t.Fatalf("report: %d %s", code, c)
	}
	bob := e.openSession(t, "bob")
	var resp switchboard.CallResponse
	if code, c := e.do(t, "POST", "/api/v1/tools/report.build/call", wsToken, map[string]any{"input": map[string]any{}, "async": true}, &resp); code != http.StatusAccepted {
		t.Fatalf("the admin's job: %d %s", code, c)
	}
	if code, c := e.do(t, "POST", "/api/v1/tools/tasks.create/call", tok.Token, map[string]any{"input": map[string]any{}, "async": true}, &resp); code != http.StatusAccepted {
		t.Fatalf("the agent's call: %d %s", code, c)
	}
	digest := func(tok string) switchboard.WorkspaceDigest {
		t.Helper()
		var d switchboard.WorkspaceDigest
		if code, c := e.do(t, "GET", "/api/v1/digest", tok, nil, &d); code != http.StatusOK {
			t.Fatalf("digest: %d %s", code, c)
		}
		return d
	}
	admin := digest(wsToken)
	if len(admin.PendingApprovals) != 1 || len(admin.Jobs) != 1 || len(admin.RecentActivity) == 0 {
		t.Fatalf("the admin's digest: %+v", admin)
	}
	d := digest(alice.SessionToken)
	if d.User != "user:alice" || len(d.Contexts) != 1 {
		t.Fatalf("alice's digest: %+v", d)
	}
	if len(d.PendingApprovals) != 0 {
		t.Errorf("alice's digest shows the admin's agent's approval: %+v", d.PendingApprovals)
	}
	if len(d.Jobs) != 0 {
		t.Errorf("alice's digest shows the admin's job: %+v", d.Jobs)
	}
	for _, a := range d.RecentActivity {
		if a.Actor != "user:alice" && a.Actor != "session:"+alice.SessionID || strings.Contains(a.Target, bob.SessionID) {
			t.Errorf("alice's digest shows another's ledger entry: %+v", a)
		}
	}
	// Her approvals route agrees: nothing pending is hers.
	var list struct {
		Items []switchboard.ApprovalRequest `json:"items"`
	}
	if code, c := e.do(t, "GET", "/api/v1/approvals?status=pending", alice.SessionToken, nil, &list); code != 200 || len(list.Items) != 0 {
		t.Fatalf("alice's approvals: %d %s %+v", code, c, list.Items)
	}
}

// TestAgentDigestShowsOnlyItsOwnRecords: an agent acting for a user reads
// in its digest, and with activity.get, only the ledger entries of its own
// calls for that user — not another user's agent's calls, not the same
// agent name acting for another user (a review found bob's MCP client
// reading alice's agent's tool.call entries).
func TestAgentDigestShowsOnlyItsOwnRecords(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "notes.read", Description: "Read a note.", Class: switchboard.ClassRead, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) { return map[string]string{"note": "n"}, nil }); err != nil {
		t.Fatal(err)
	}
	token := func(agent, user string) string {
		var tok struct {
			Token string `json:"token"`
		}
		if code, c := e.do(t, "POST", "/api/v1/tokens", wsToken, map[string]any{"agent": agent, "user": user}, &tok); code != http.StatusCreated {
			t.Fatalf("token: %d %s", code, c)
		}
		return tok.Token
	}
	alices, bobs, sameNameForBob := token("desk", "user:alice"), token("helper", "user:bob"), token("desk", "user:bob")
	for _, tok := range []string{alices, bobs} {
		var resp switchboard.CallResponse
		if code, c := e.do(t, "POST", "/api/v1/tools/notes.read/call", tok, map[string]any{"input": map[string]any{}}, &resp); code != http.StatusOK {
			t.Fatalf("call: %d %s", code, c)
		}
	}
	for _, c := range []struct {
		name, token, actor string
		want               int
	}{
		{"alice's agent", alices, "agent:desk", 1},
		{"bob's agent", bobs, "agent:helper", 1},
		{"the same agent name for bob", sameNameForBob, "", 0},
	} {
		var d switchboard.WorkspaceDigest
		if code, body := e.do(t, "GET", "/api/v1/digest", c.token, nil, &d); code != http.StatusOK {
			t.Fatalf("%s's digest: %d %s", c.name, code, body)
		}
		n := 0
		for _, a := range d.RecentActivity {
			if a.Verb != "tool.call" {
				continue
			}
			n++
			if a.Actor != c.actor {
				t.Errorf("%s's digest shows %s's call", c.name, a.Actor)
			}
		}
		if n != c.want {
			t.Errorf("%s's digest has %d tool calls, want %d: %+v", c.name, n, c.want, d.RecentActivity)
		}
	}
}

// TestAgentDigestApprovalsMatchTheRoute: an agent's digest lists the
// pending approvals its GET /approvals lists, by one rule: its own calls'
// requests, not another agent's acting for the same user.
func TestAgentDigestApprovalsMatchTheRoute(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "t1"}, nil }); err != nil {
		t.Fatal(err)
	}
	token := func(agent string) string {
		var tok struct {
			Token string `json:"token"`
		}
		if code, c := e.do(t, "POST", "/api/v1/tokens", wsToken, map[string]any{"agent": agent, "user": "user:alice"}, &tok); code != http.StatusCreated {
			t.Fatalf("token: %d %s", code, c)
		}
		return tok.Token
	}
	writer, reader := token("writer"), token("reader")
	var resp switchboard.CallResponse
	if code, c := e.do(t, "POST", "/api/v1/tools/tasks.create/call", writer, map[string]any{"input": map[string]any{}, "async": true}, &resp); code != http.StatusAccepted || resp.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("the writer's call: %d %s %+v", code, c, resp)
	}
	for _, who := range []struct {
		name, tok string
		want      int
	}{{"writer", writer, 1}, {"reader", reader, 0}} {
		var d switchboard.WorkspaceDigest
		if code, c := e.do(t, "GET", "/api/v1/digest", who.tok, nil, &d); code != http.StatusOK {
			t.Fatalf("%s's digest: %d %s", who.name, code, c)
		}
		var list struct {
			Items []switchboard.ApprovalRequest `json:"items"`
		}
		if code, c := e.do(t, "GET", "/api/v1/approvals?status=pending", who.tok, nil, &list); code != http.StatusOK {
			t.Fatalf("%s's approvals: %d %s", who.name, code, c)
		}
		if len(d.PendingApprovals) != who.want || len(list.Items) != who.want {
			t.Errorf("%s: the digest lists %d pending approvals, GET /approvals %d; want %d in both", who.name, len(d.PendingApprovals), len(list.Items), who.want)
		}
	}
}
