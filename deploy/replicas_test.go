package deploy_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// backend is the app's API behind the tools: it counts the runs of each
// call (by body) and holds calls marked slow until released or until
// their connection drops.
type backend struct {
	srv     *httptest.Server
	mu      sync.Mutex
	runs    map[string]int
	subs    map[string]string // body → the sub its Switchboard-Assertion claimed
	entered chan string
	release chan struct{}
}

func newBackend(t *testing.T) *backend {
	b := &backend{runs: map[string]int{}, subs: map[string]string{}, entered: make(chan string, 64), release: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.runs[string(body)]++
		b.subs[string(body)] = assertedSub(r.Header.Get("Switchboard-Assertion"))
		b.mu.Unlock()
		if r.URL.Path == "/slow" {
			b.entered <- string(body)
			select {
			case <-b.release:
			case <-r.Context().Done(): // the replica died
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true}`)
	}))
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
		b.srv.Close()
	})
	return b
}

// assertedSub reads the sub claim of an assertion without verifying it:
// what the daemon said it acted for (the signature is tested in
// assertion/).
func assertedSub(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Sub string `json:"sub"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.Sub
}

func (b *backend) sub(body string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.subs[body]
}

func (b *backend) count(body string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[body]
}

func (b *backend) tools() []switchboard.Tool {
	tool := func(name, path string, class switchboard.Class) switchboard.Tool {
		return switchboard.Tool{Name: name, Description: "A test tool at " + path + ".", Class: class,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: b.srv.URL + path}}}
	}
	return []switchboard.Tool{
		tool("test.fast", "/fast", switchboard.ClassRead),
		tool("test.send", "/send", switchboard.ClassMutate),
		tool("test.slow", "/slow", switchboard.ClassMutate),
	}
}

// TestReplicas runs three replicas on one Postgres behind a round-robin
// balancer (issue 16, "Tests"): the ledger seen from any replica, an
// approval decided on another replica than the caller's, and a replica
// killed with calls in flight.
func TestReplicas(t *testing.T) {
	c := newCluster(t, 3)
	be := newBackend(t)
	ctx := context.Background()
	lb := c.lb()
	// Another replica's catalog sees the write within its refresh
	// interval (registry.DefaultRefreshInterval; at once over the
	// cross-replica bus).
	c.register(be.tools(), "test.slow")

	t.Run("ActivityOnAnyReplica", func(t *testing.T) {
		// Round robin: consecutive calls land on different replicas, so
		// each one's ledger entries sit between the others'.
		for i := range 9 {
			if _, err := lb.CallTool(ctx, "test.fast", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), client.CallOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var first []int64
		for i := range c.reps {
			page, err := c.at(i).Activity(ctx, client.ActivityQuery{Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			calls := 0
			for j, e := range page.Items {
				ids = append(ids, e.ID)
				// Ids rise; the ledger's chains may leave a gap where an
				// append was rolled back (the count below is the whole).
				if j > 0 && e.ID <= ids[j-1] {
					t.Fatalf("replica %d's default view: entry %d has id %d after %d; want the whole ledger in order", i, j, e.ID, ids[j-1])
				}
				if e.Verb == "tool.call" {
					calls++
				}
			}
			if calls < 9 {
				t.Fatalf("replica %d's default view holds %d tool.call entries, want the 9 made through every replica", i, calls)
			}
			if i == 0 {
				first = ids
			} else if len(ids) != len(first) {
				t.Fatalf("replica %d shows %d entries, replica 0 %d", i, len(ids), len(first))
			}
		}
	})

	t.Run("ApprovalDecidedOnAnotherReplica", func(t *testing.T) {
		tok, err := lb.CreateToken(ctx, client.TokenRequest{Agent: "bot"})
		if err != nil {
			t.Fatal(err)
		}
		agent := client.New("http://"+c.reps[0].addr, tok.Token, nil) // the caller waits on replica 0
		type answer struct {
			resp switchboard.CallResponse
			err  error
		}
		done := make(chan answer, 1)
		go func() {
			resp, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(`{"approve":"across"}`), client.CallOptions{}, client.CallExtra{})
			done <- answer{resp, err}
		}()
		var pending []switchboard.ApprovalRequest
		eventually(t, 30*time.Second, "the approval request reaches replica 2", func() (bool, string) {
			pending, err = c.at(2).Approvals(ctx, client.ApprovalQuery{})
			return err == nil && len(pending) == 1, fmt.Sprint(len(pending), err)
		})
		if _, err := c.at(2).Decide(ctx, pending[0].ID, client.Decision{Approve: true}); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-done:
			if a.err != nil || a.resp.Status != switchboard.StatusSucceeded || be.count(`{"approve":"across"}`) != 1 {
				t.Fatalf("the caller on replica 0: %+v %v (backend ran %d times)", a.resp, a.err, be.count(`{"approve":"across"}`))
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the caller on replica 0 was not woken by the decision made on replica 2")
		}
	})

	t.Run("KillMidCall", func(t *testing.T) {
		// Replica 0 holds four calls in flight at a slow backend and one
		// agent call awaiting approval; then it is killed.
		const n = 4
		ids := map[string]string{} // body → invocation
		for i := range n {
			body := fmt.Sprintf(`{"slow":%d}`, i)
			resp, err := c.at(0).CallToolWith(ctx, "test.slow", json.RawMessage(body), client.CallOptions{},
				client.CallExtra{Async: true, IdempotencyKey: fmt.Sprintf("kill-%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			ids[body] = resp.InvocationID
		}
		for range n {
			select {
			case <-be.entered:
			case <-time.After(60 * time.Second):
				t.Fatal("the slow calls did not reach the backend")
			}
		}
		tok, err := lb.CreateToken(ctx, client.TokenRequest{Agent: "bot-2"})
		if err != nil {
			t.Fatal(err)
		}
		agent := client.New("http://"+c.reps[0].addr, tok.Token, nil)
		waiting, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(`{"approve":"after-kill"}`), client.CallOptions{}, client.CallExtra{Async: true})
		if err != nil || waiting.Status != switchboard.StatusAwaitingApproval {
			t.Fatalf("the agent's call: %+v %v", waiting, err)
		}

		c.kill(0)

		// A survivor claims replica 0 and ends each call once.
		for body, id := range ids {
			var inv switchboard.Invocation
			eventually(t, 60*time.Second, "a survivor resolves "+id, func() (bool, string) {
				inv, err = lb.GetInvocation(ctx, id)
				return err == nil && inv.Status.Terminal(), fmt.Sprint(inv.Status, err)
			})
			if inv.Status != switchboard.StatusFailed || inv.Error == nil || inv.Error.Code != switchboard.CodeOutcomeUnknown {
				t.Errorf("%s after the kill: %s %+v, want failed OUTCOME_UNKNOWN", id, inv.Status, inv.Error)
			}
			if got := be.count(body); got != 1 {
				t.Errorf("%s ran %d times at the backend", body, got)
			}
		}
		// A retry with the same key replays the outcome; nothing runs again.
		for i := range n {
			body := fmt.Sprintf(`{"slow":%d}`, i)
			resp, err := lb.CallToolWith(ctx, "test.slow", json.RawMessage(body), client.CallOptions{},
				client.CallExtra{IdempotencyKey: fmt.Sprintf("kill-%d", i)})
			if switchboard.CodeOf(err) != switchboard.CodeOutcomeUnknown || resp.InvocationID != ids[body] {
				t.Errorf("retry of %s: %+v %v, want the replayed OUTCOME_UNKNOWN of %s", body, resp, err, ids[body])
			}
			if got := be.count(body); got != 1 {
				t.Errorf("%s ran %d times after its retry", body, got)
			}
		}
		// The call awaiting approval outlived its replica: a survivor took
		// it over and runs it once it is approved, through any replica.
		inv, err := lb.GetInvocation(ctx, waiting.InvocationID)
		if err != nil || inv.Status != switchboard.StatusAwaitingApproval {
			t.Fatalf("the call awaiting approval after the kill: %+v %v", inv, err)
		}
		var pending []switchboard.ApprovalRequest
		eventually(t, 30*time.Second, "its approval is still pending", func() (bool, string) {
			pending, err = lb.Approvals(ctx, client.ApprovalQuery{})
			return err == nil && len(pending) == 1 && pending[0].InvocationID == waiting.InvocationID, fmt.Sprint(pending, err)
		})
		if _, err := lb.Decide(ctx, pending[0].ID, client.Decision{Approve: true}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "the approved call runs on a survivor", func() (bool, string) {
			inv, err = lb.GetInvocation(ctx, waiting.InvocationID)
			return err == nil && inv.Status.Terminal(), fmt.Sprint(inv.Status, err)
		})
		if inv.Status != switchboard.StatusSucceeded || be.count(`{"approve":"after-kill"}`) != 1 {
			t.Fatalf("the approved call: %s %+v (backend ran %d times)", inv.Status, inv.Error, be.count(`{"approve":"after-kill"}`))
		}

		// One tool.call entry per call, and the chain verifies everywhere.
		for _, i := range []int{1, 2} {
			rep, err := c.at(i).VerifyActivity(ctx)
			if err != nil || !rep.OK {
				t.Fatalf("activity verify on replica %d: %+v %v", i, rep, err)
			}
		}
		entries := map[string]int{}
		after := "0"
		for {
			page, err := lb.Activity(ctx, client.ActivityQuery{After: after, Verb: "tool.call", Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Items {
				var d struct {
					InvocationID string `json:"invocationId"`
				}
				_ = json.Unmarshal(e.Details, &d)
				entries[d.InvocationID]++
			}
			if len(page.Items) < 1000 {
				break
			}
			after = page.NextCursor
		}
		for _, id := range append([]string{waiting.InvocationID}, values(ids)...) {
			if entries[id] != 1 {
				t.Errorf("%s has %d tool.call entries, want 1", id, entries[id])
			}
		}
	})
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
