package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// toolCallEntry finds the tool.call ledger entry of invocation id.
func toolCallEntry(t *testing.T, c *client.Client, id string) *switchboard.ActivityEntry {
	t.Helper()
	page, err := c.Activity(context.Background(), client.ActivityQuery{Verb: "tool.call", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range page.Items {
		if strings.Contains(string(e.Details), `"invocationId":"`+id+`"`) {
			return &page.Items[i]
		}
	}
	return nil
}

// restartEnvs are the stores TestApprovalOutlivesRestart's child daemons
// run on: the SQLite file in their directory, and a fresh Postgres schema
// when SWITCHBOARD_TEST_POSTGRES is set.
func restartEnvs(t *testing.T) map[string][]string {
	envs := map[string][]string{"sqlite": nil}
	if dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES"); dsn != "" {
		envs["postgres"] = []string{"SWITCHBOARD_TEST_RESTART_PG=" + dsn, "SWITCHBOARD_TEST_RESTART_SCHEMA=" + pgSchema(t, dsn)}
	}
	return envs
}

// Issue 17 item 3: an agent's call waiting for approval outlives a SIGKILL
// of the daemon. After the restart the approval is still pending;
// approving it runs the call exactly once, and the invocation record (the
// original HTTP caller is gone) holds the result, with its ledger entries.
func TestApprovalOutlivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for name, env := range restartEnvs(t) {
		t.Run(name, func(t *testing.T) {
			var hits atomic.Int32
			var key atomic.Value
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				key.Store(r.Header.Get("Idempotency-Key"))
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"sent":true}`))
			}))
			defer backend.Close()
			dir := t.TempDir()
			addr, child := startChild(t, dir, env...)
			ctx := context.Background()
			admin := client.New(addr, restartToken, nil)
			tool := switchboard.Tool{Name: "test.send", Description: "Send something.", Class: switchboard.ClassMutate,
				Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend.URL + "/send"}}}
			if _, err := admin.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
				t.Fatal(err)
			}
			tok, err := admin.CreateToken(ctx, client.TokenRequest{Agent: "bot"})
			if err != nil {
				t.Fatal(err)
			}
			agent := client.New(addr, tok.Token, nil)
			resp, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(`{"to":"x"}`), client.CallOptions{}, client.CallExtra{IdempotencyKey: "k1", Async: true})
			if err != nil || resp.Status != switchboard.StatusAwaitingApproval {
				t.Fatalf("the agent's call: %+v %v", resp, err)
			}
			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = child.Wait()

			addr, _ = startChild(t, dir, env...)
			admin = client.New(addr, restartToken, nil)
			agent = client.New(addr, tok.Token, nil)
			pending, err := admin.Approvals(ctx, client.ApprovalQuery{Invocation: resp.InvocationID})
			if err != nil || len(pending) != 1 || pending[0].Status != switchboard.ApprovalPending {
				t.Fatalf("the approval after the restart: %+v %v", pending, err)
			}
			if _, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(`{"to":"x"}`), client.CallOptions{}, client.CallExtra{IdempotencyKey: "k1"}); switchboard.CodeOf(err) != switchboard.CodeConflict {
				t.Fatalf("a retry while the approval waits: %v; want CONFLICT (in flight)", err)
			}
			if _, err := admin.Decide(ctx, pending[0].ID, client.Decision{Approve: true}); err != nil {
				t.Fatalf("approve after the restart: %v", err)
			}
			var inv switchboard.Invocation
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if inv, err = admin.GetInvocation(ctx, resp.InvocationID); err != nil {
					t.Fatal(err)
				}
				if inv.Status.Terminal() || time.Now().After(deadline) {
					break
				}
			}
			if inv.Status != switchboard.StatusSucceeded || string(inv.Result) != `{"sent":true}` || hits.Load() != 1 {
				t.Fatalf("the approved call: %+v (backend ran %d times)", inv, hits.Load())
			}
			// The record names its approval and its user, on either store,
			// across the restart.
			if inv.ApprovalID != pending[0].ID || inv.User != switchboard.Operator {
				t.Fatalf("the record names approval %q and user %q; want %q and %s", inv.ApprovalID, inv.User, pending[0].ID, switchboard.Operator)
			}
			if k, _ := key.Load().(string); k != inv.ID {
				t.Fatalf("the backend got Idempotency-Key %q, want the invocation id", k)
			}
			if e := toolCallEntry(t, admin, inv.ID); e == nil || e.Actor != "agent:bot" {
				t.Fatalf("the resumed call's ledger entry: %+v", e)
			}
			again, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(`{"to":"x"}`), client.CallOptions{}, client.CallExtra{IdempotencyKey: "k1"})
			if err != nil || again.InvocationID != inv.ID || hits.Load() != 1 {
				t.Fatalf("the retry replays: %+v %v (backend ran %d times)", again, err, hits.Load())
			}
		})
	}
}
