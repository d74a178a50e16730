package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// tasks is a tiny task store behind Go-function tools.
type tasks struct {
	mu    sync.Mutex
	items map[string]string
	next  int
}

// startGoverned serves a daemon over a SQLite file with tasks.create
// (mutating; its inverse is tasks.delete), tasks.delete and tasks.purge
// (which no test agent may call).
func startGoverned(t *testing.T) (url, dbPath string, ts *tasks) {
	t.Helper()
	ctx := context.Background()
	dbPath = filepath.Join(t.TempDir(), "sb.db")
	st, err := sqlite.Open(ctx, dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })
	ts = &tasks{items: map[string]string{}}
	create := switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`),
		Inverse:     &switchboard.Inverse{Tool: "tasks.delete", Input: map[string]string{"id": "/result/id"}}}
	del := switchboard.Tool{Name: "tasks.delete", Description: "Delete a task.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)}
	if err := d.RegisterFunc(ctx, create, func(_ context.Context, in json.RawMessage) (any, error) {
		var v struct{ Title string }
		_ = json.Unmarshal(in, &v)
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.next++
		id := "t" + string(rune('0'+ts.next))
		ts.items[id] = v.Title
		return map[string]string{"id": id, "title": v.Title}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterFunc(ctx, del, func(_ context.Context, in json.RawMessage) (any, error) {
		var v struct{ ID string }
		_ = json.Unmarshal(in, &v)
		ts.mu.Lock()
		defer ts.mu.Unlock()
		delete(ts.items, v.ID)
		return map[string]bool{"deleted": true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	purge := switchboard.Tool{Name: "tasks.purge", Description: "Delete every task.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
	if err := d.RegisterFunc(ctx, purge, func(context.Context, json.RawMessage) (any, error) {
		t.Error("tasks.purge ran")
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	return srv.URL, dbPath, ts
}

func (ts *tasks) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.items)
}

// The "done when", from the CLI alone: mint an agent token, watch
// the agent's mutating call wait, approve it, see it in the ledger,
// reverse it, verify the chain — and see a direct edit of the database
// caught.
func TestCLIGovernanceWalkthrough(t *testing.T) {
	url, dbPath, ts := startGoverned(t)
	admin := []string{"--addr", url, "--token", testToken}

	code, out, errs := run(t, append(admin, "token", "create", "--agent", "planner", "--allow", "tasks.*", "--deny", "*.purge")...)
	agentToken := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(agentToken, "sbt_") || !strings.Contains(errs, "shown only now") {
		t.Fatalf("token create: %d %q %q", code, out, errs)
	}
	agent := []string{"--addr", url, "--token", agentToken}

	// The agent's call waits for the user.
	done := make(chan [3]string, 1)
	go func() {
		var o, e bytes.Buffer
		c := Run(context.Background(), append(agent, "tools", "call", "tasks.create", "--input", `{"title":"Ship it"}`), strings.NewReader(""), &o, &e)
		done <- [3]string{string(rune('0' + c)), o.String(), e.String()}
	}()
	var id string
	for id == "" { // the call is being recorded: wait for its approval to be listed
		code, out, errs = run(t, append(admin, "approvals", "list", "--json")...)
		if code != 0 {
			t.Fatalf("approvals list: %d %q", code, errs)
		}
		var items []switchboard.ApprovalRequest
		if err := json.Unmarshal([]byte(out), &items); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			t.Fatalf("the agent's call ended without approval: %v", r)
		default:
		}
		if len(items) == 1 {
			id = items[0].ID
			if items[0].Agent != "agent:planner" || items[0].Tool != "tasks.create" {
				t.Fatalf("approval %+v", items[0])
			}
		}
	}
	if ts.count() != 0 {
		t.Fatal("the call ran before it was approved")
	}
	code, out, _ = run(t, append(admin, "approvals", "list")...)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "pending") {
		t.Fatalf("approvals table: %q", out)
	}
	// The agent cannot approve its own call.
	code, _, errs = run(t, append(agent, "approvals", "approve", id)...)
	if code != 1 || !strings.Contains(errs, "FORBIDDEN") {
		t.Fatalf("agent approving: %d %q", code, errs)
	}
	code, out, errs = run(t, append(admin, "approvals", "approve", id)...)
	if code != 0 || !strings.Contains(out, "approved") {
		t.Fatalf("approve: %d %q %q", code, out, errs)
	}
	r := <-done
	if r[0] != "0" || !strings.Contains(r[1], `"Ship it"`) || ts.count() != 1 {
		t.Fatalf("the approved call: %v", r)
	}
	// While it waited, it said so, for whom, and where to decide.
	if !strings.Contains(r[2], "tasks.create waits for approval (approval "+id+")") || !strings.Contains(r[2], "waiting for the user") ||
		!strings.Contains(r[2], url+"/#approvals") {
		t.Errorf("the waiting call's stderr: %q", r[2])
	}
	// Approving again is refused: an approval is good once.
	if code, _, errs = run(t, append(admin, "approvals", "approve", id)...); code != 1 || !strings.Contains(errs, "CONFLICT") {
		t.Fatalf("replayed approval: %d %q", code, errs)
	}

	// Decided, it no longer counts down to an expiry.
	code, out, _ = run(t, append(admin, "approvals", "list", "--status", "approved")...)
	row := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, id) {
			row = l
		}
	}
	if code != 0 || !strings.Contains(row, "approved") || strings.Contains(row, " in ") || strings.Contains(row, "expired") {
		t.Errorf("the approved approval's row: %q", row)
	}

	// The ledger shows the decision and the call.
	code, out, _ = run(t, append(admin, "activity", "--json")...)
	var page struct {
		Items []switchboard.ActivityEntry `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil {
		t.Fatalf("activity: %d %q", code, out)
	}
	var callEntry int64
	for _, e := range page.Items {
		if e.Verb == "tool.call" && e.Actor == "agent:planner" && e.Target == "tasks.create" {
			callEntry = e.ID
		}
	}
	decided := false
	for _, e := range page.Items {
		decided = decided || e.Verb == "approval.decide" && e.Actor == "user:admin" && strings.Contains(string(e.Provenance), "cli")
	}
	if callEntry == 0 || !decided {
		t.Fatalf("ledger: %+v", page.Items)
	}
	code, out, _ = run(t, append(admin, "activity", "--actor", "agent:planner")...)
	if code != 0 || !strings.Contains(out, "tasks.create") || strings.Contains(out, "approval.decide") {
		t.Fatalf("activity --actor: %q", out)
	}

	// Reverse it: the user's reversal runs the inverse at once.
	entry := strconv.FormatInt(callEntry, 10)
	code, out, errs = run(t, append(admin, "activity", "reverse", entry)...)
	if code != 0 || !strings.Contains(out, "succeeded") || ts.count() != 0 {
		t.Fatalf("reverse: %d %q %q (tasks left %d)", code, out, errs, ts.count())
	}
	code, out, _ = run(t, append(admin, "activity", "--verb", "tool.call")...)
	if code != 0 || !strings.Contains(out, "tasks.delete") || !strings.Contains(out, `reverses {"of":`+entry) {
		t.Fatalf("the reversal is not linked in the ledger: %q", out)
	}

	// The chain verifies; an edit behind the daemon's back does not.
	if code, out, _ = run(t, append(admin, "activity", "verify")...); code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Fatalf("verify: %d %q", code, out)
	}
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE activity SET target = 'tasks.list' WHERE id = ?`, callEntry); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, append(admin, "activity", "verify")...)
	if code != 1 || !strings.Contains(errs, "entry "+entry) {
		t.Fatalf("verify after a direct edit: %d %q", code, errs)
	}

	// Outside its scope (tasks.purge is denied), a tool reads to the agent
	// exactly like a name that does not exist: listed nowhere, and the
	// same TOOL_NOT_FOUND, with no scope lists, when named.
	if code, out, _ = run(t, append(agent, "tools", "list")...); code != 0 || strings.Contains(out, "tasks.purge") {
		t.Fatalf("the agent's tools list: %d %q", code, out)
	}
	for _, cmd := range [][]string{{"tools", "describe"}, {"tools", "call"}} {
		_, _, unknown := run(t, append(append(agent, cmd...), "tasks.nope")...)
		code, _, errs = run(t, append(append(agent, cmd...), "tasks.purge")...)
		if code != 1 || !strings.Contains(unknown, "TOOL_NOT_FOUND") || strings.ReplaceAll(errs, "tasks.purge", "tasks.nope") != unknown {
			t.Errorf("%v tasks.purge: %d %q; an unknown name: %q", cmd, code, errs, unknown)
		}
	}

	// Revoked, the agent's token is refused at once.
	code, out, _ = run(t, append(admin, "token", "list", "--json")...)
	var toks []switchboard.AgentToken
	if code != 0 || json.Unmarshal([]byte(out), &toks) != nil || len(toks) != 1 || strings.Contains(out, agentToken) {
		t.Fatalf("token list: %q", out)
	}
	if code, _, errs = run(t, append(admin, "token", "revoke", toks[0].ID)...); code != 0 {
		t.Fatalf("revoke: %q", errs)
	}
	if code, _, errs = run(t, append(agent, "tools", "list")...); code != 1 || !strings.Contains(errs, "UNAUTHORIZED") {
		t.Fatalf("revoked token: %d %q", code, errs)
	}
}
