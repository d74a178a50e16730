package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// consoleFlow signs user in to the console through the embedded server:
// the built-in client switchboard-console, redirected to the console,
// with tokens for the HTTP API.
func consoleFlow(t *testing.T, base string) *flow {
	f := newFlow(t, base)
	f.client, f.redirect, f.scope, f.resource = "switchboard-console", base+"/console/", "console", base+"/api/v1"
	return f
}

// A person signed in to the console (not an agent acting for them) sees
// and manages their own records only: alice lists and decides her
// approval, never bob's; reads her ledger entries and grants, not his;
// the operator's routes answer FORBIDDEN; /mcp refuses the token, whose
// audience is the API; the refresh token keeps the sign-in alive.
func TestConsoleSignedInAsUser(t *testing.T) {
	t.Parallel()
	for _, st := range durables(t) {
		t.Run(st.name, func(t *testing.T) {
			r := embeddedReplicas(t, st, 1)[0]
			base, srv := r.srv.URL, r.srv
			err := r.d.RegisterFunc(context.Background(), switchboard.Tool{Name: "notes.delete", Description: "Delete a note.", Class: switchboard.ClassMutate,
				Approval: switchboard.ApprovalHITL, InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)},
				func(context.Context, json.RawMessage) (any, error) { return map[string]bool{"deleted": true}, nil })
			if err != nil {
				t.Fatal(err)
			}
			// An agent acting for each user asks to delete a note.
			waiting := map[string]map[string]any{}
			for _, u := range []string{"alice", "bob"} {
				code, tok := do(t, srv, mcpToken, "POST", "/api/v1/tokens", map[string]any{"agent": "bot-" + u, "user": "user:" + u})
				if code != http.StatusCreated {
					t.Fatalf("token for %s: %d %v", u, code, tok)
				}
				code, call := do(t, srv, tok["token"].(string), "POST", "/api/v1/tools/notes.delete/call", map[string]any{"input": map[string]any{"id": u}, "async": true})
				if code != http.StatusAccepted || call["status"] != "awaiting_approval" {
					t.Fatalf("%s's agent call: %d %v", u, code, call)
				}
				waiting[u] = call
			}
			alice, aliceRefresh := consoleFlow(t, base).tokens("user:alice")
			bob, _ := consoleFlow(t, base).tokens("user:bob")

			code, list := do(t, srv, alice, "GET", "/api/v1/approvals", nil)
			items, _ := list["items"].([]any)
			if code != http.StatusOK || len(items) != 1 || items[0].(map[string]any)["invocationId"] != waiting["alice"]["invocationId"] {
				t.Fatalf("alice's approvals: %d %v", code, list)
			}
			aliceApproval := items[0].(map[string]any)["approvalId"].(string)
			_, list = do(t, srv, bob, "GET", "/api/v1/approvals", nil)
			bobApproval := list["items"].([]any)[0].(map[string]any)["approvalId"].(string)
			if code, _ := do(t, srv, alice, "GET", "/api/v1/approvals/"+bobApproval, nil); code != http.StatusNotFound {
				t.Fatalf("alice reads bob's approval: %d", code)
			}
			if code, _ := do(t, srv, alice, "POST", "/api/v1/approvals/"+bobApproval, map[string]any{"decision": "approve"}); code != http.StatusNotFound {
				t.Fatalf("alice decides bob's approval: %d", code)
			}
			if code, a := do(t, srv, alice, "POST", "/api/v1/approvals/"+aliceApproval, map[string]any{"decision": "approve"}); code != http.StatusOK || a["decidedBy"] != "user:alice" {
				t.Fatalf("alice approves hers: %d %v", code, a)
			}
			id := waiting["alice"]["invocationId"].(string)
			code, inv := do(t, srv, mcpToken, "GET", "/api/v1/invocations/"+id, nil)
			for deadline := time.Now().Add(30 * time.Second); (inv["status"] == "dispatched" || inv["status"] == "awaiting_approval") && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				code, inv = do(t, srv, mcpToken, "GET", "/api/v1/invocations/"+id, nil)
			}
			if code != http.StatusOK || inv["status"] != "succeeded" {
				t.Fatalf("alice's approved call: %d %v", code, inv)
			}

			// The ledger: alice's own entries, none of bob's; the operator
			// reads bob's, and alice gets NOT_FOUND for it.
			code, page := do(t, srv, alice, "GET", "/api/v1/activity?limit=1000", nil)
			entries, _ := page["items"].([]any)
			if code != http.StatusOK || len(entries) == 0 {
				t.Fatalf("alice's activity: %d %v", code, page)
			}
			sawCall := false
			for _, e := range entries {
				b, _ := json.Marshal(e)
				if strings.Contains(string(b), "bob") {
					t.Fatalf("alice's activity holds bob's entry: %s", b)
				}
				sawCall = sawCall || strings.Contains(string(b), id)
			}
			if !sawCall {
				t.Fatalf("alice's activity lacks her call %s: %v", id, page)
			}
			_, all := do(t, srv, mcpToken, "GET", "/api/v1/activity?limit=1000", nil)
			var bobEntry string
			for _, e := range all["items"].([]any) {
				if b, _ := json.Marshal(e); strings.Contains(string(b), "bot-bob") {
					bobEntry = jsonOf(e.(map[string]any)["id"])
				}
			}
			if bobEntry == "" {
				t.Fatalf("the operator's activity lacks bob's entries: %v", all)
			}
			if code, _ := do(t, srv, alice, "GET", "/api/v1/activity/"+bobEntry, nil); code != http.StatusNotFound {
				t.Fatalf("alice reads bob's entry %s: %d", bobEntry, code)
			}

			// Her tasks: one she hands the assistant from the console is
			// hers to list and cancel; bob does not see it.
			code, task := do(t, srv, alice, "POST", "/api/v1/tasks", map[string]any{"goal": "Tidy my notes."})
			if code != http.StatusCreated || task["owner"] != "user:alice" || task["creator"] != "user:alice" {
				t.Fatalf("alice creates a task: %d %v", code, task)
			}
			taskID := task["id"].(string)
			if code, _ := do(t, srv, bob, "GET", "/api/v1/tasks/"+taskID, nil); code != http.StatusNotFound {
				t.Fatalf("bob reads alice's task: %d", code)
			}
			if _, l := do(t, srv, bob, "GET", "/api/v1/tasks", nil); len(l["items"].([]any)) != 0 {
				t.Fatalf("bob's tasks: %v", l)
			}
			if _, l := do(t, srv, alice, "GET", "/api/v1/tasks", nil); len(l["items"].([]any)) != 1 {
				t.Fatalf("alice's tasks: %v", l)
			}

			// Her grants: the console's sign-in, not bob's.
			grants := listGrants(t, base, alice)
			if len(grants) != 1 || grants[0]["client"] != "switchboard-console" || grants[0]["user"] != "user:alice" {
				t.Fatalf("alice's grants: %v", grants)
			}
			if code, runs := do(t, srv, alice, "GET", "/api/v1/runs", nil); code != http.StatusOK || runs["items"] == nil {
				t.Fatalf("alice's runs: %d %v", code, runs)
			}
			// The operator's routes are not hers, and say so (not a 401
			// that would sign her out).
			for _, p := range []string{"/api/v1/activity/verify", "/api/v1/tokens", "/api/v1/quotas", "/api/v1/tools"} {
				if code, body := do(t, srv, alice, "GET", p, nil); code != http.StatusForbidden {
					t.Fatalf("GET %s as alice: %d %v", p, code, body)
				}
			}
			if code, _ := mcpStatus(t, base, alice); code != http.StatusUnauthorized {
				t.Fatalf("/mcp with a console token: %d", code)
			}
			code, m := consoleFlow(t, base).refresh(aliceRefresh)
			if code != http.StatusOK || m["access_token"] == nil {
				t.Fatalf("refresh: %d %v", code, m)
			}
			if code, _ := do(t, srv, m["access_token"].(string), "GET", "/api/v1/approvals", nil); code != http.StatusOK {
				t.Fatalf("the refreshed token: %d", code)
			}
			// Revoking the console's grant signs her out at the next call.
			if code := deleteGrant(t, base, alice, grants[0]["id"].(string)); code != http.StatusOK {
				t.Fatalf("revoke: %d", code)
			}
			if code, _ := do(t, srv, m["access_token"].(string), "GET", "/api/v1/approvals", nil); code != http.StatusUnauthorized {
				t.Fatalf("after revoking: %d", code)
			}
		})
	}
}
