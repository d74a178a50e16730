package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// replicas starts two daemons over one database (two stores on one SQLite
// file sharing an in-process bus, or on one Postgres schema each with its
// own Postgres bus, as two processes have), as replicas behind a load
// balancer, and returns an admin client for each.
func replicas(t *testing.T, d durable) (a, b *client.Client) {
	t.Helper()
	var shared bus.Bus = bus.NewLocal()
	var cs [2]*client.Client
	for i := range cs {
		st := d.open(t)
		b := shared
		if d.bus != nil {
			b = d.bus(t)
		}
		dm, err := daemon.New(context.Background(), daemon.Options{Store: st, AdminToken: "replica-token", Bus: b,
			Replicas: daemon.ReplicaOptions{Name: fmt.Sprintf("replica-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(dm.Handler())
		t.Cleanup(func() {
			srv.Close()
			dm.Close()
			if c, ok := b.(interface{ Close() error }); ok && d.bus != nil {
				c.Close()
			}
			st.Close()
		})
		cs[i] = client.New(srv.URL, "replica-token", nil)
	}
	return cs[0], cs[1]
}

// RELIABILITY row 19, two replicas, one invocation: two daemons on one
// store (SQLite, and Postgres with SWITCHBOARD_TEST_POSTGRES) get the same
// call under one Idempotency-Key at once, eight times each. Exactly one
// claims it: the backend runs once, every other answer is 409 (in flight)
// while it runs and a replay of the one invocation after, the shared
// ledger holds one tool.call entry and verifies. Then an agent's call
// waiting for approval is approved on one daemon and denied on the other
// at once: one decision wins, and the call ends the way it says.
func TestReplicasAgreeOnOneWinner(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			var hits atomic.Int32
			entered, release := make(chan struct{}, 16), make(chan struct{})
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				entered <- struct{}{}
				<-release // hold the winner in flight until every rival has answered
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"sent":true}`))
			}))
			defer backend.Close()
			a, b := replicas(t, d)
			tool := switchboard.Tool{Name: "test.send", Description: "Send something.", Class: switchboard.ClassMutate,
				Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend.URL + "/send"}}}
			for _, c := range []*client.Client{a, b} {
				if _, err := c.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
					t.Fatal(err)
				}
			}

			const each = 8
			type answer struct {
				resp switchboard.CallResponse
				err  error
			}
			answers := make(chan answer, 2*each)
			var wg sync.WaitGroup
			for _, c := range []*client.Client{a, b} {
				for range each {
					wg.Go(func() {
						resp, err := c.CallToolWith(ctx, "test.send", json.RawMessage(`{"to":"x"}`), client.CallOptions{}, client.CallExtra{IdempotencyKey: "row19"})
						answers <- answer{resp, err}
					})
				}
			}
			<-entered // the winner runs; its rivals answer without waiting for it
			for range 2*each - 1 {
				if an := <-answers; switchboard.CodeOf(an.err) != switchboard.CodeConflict {
					t.Errorf("a rival of the running call: %+v %v, want CONFLICT (in flight)", an.resp, an.err)
				}
			}
			close(release)
			wg.Wait()
			won := <-answers
			if won.err != nil || won.resp.Status != switchboard.StatusSucceeded || hits.Load() != 1 {
				t.Fatalf("the winner: %+v %v (backend ran %d times)", won.resp, won.err, hits.Load())
			}
			for _, c := range []*client.Client{a, b} {
				again, err := c.CallToolWith(ctx, "test.send", json.RawMessage(`{"to":"x"}`), client.CallOptions{}, client.CallExtra{IdempotencyKey: "row19"})
				if err != nil || again.InvocationID != won.resp.InvocationID {
					t.Fatalf("a retry after it ended: %+v %v, want the replay of %s", again, err, won.resp.InvocationID)
				}
			}
			if hits.Load() != 1 {
				t.Fatalf("the backend ran %d times", hits.Load())
			}
			page, err := b.Activity(ctx, client.ActivityQuery{After: "0", Verb: "tool.call", Limit: 1000})
			if err != nil || len(page.Items) != 1 {
				t.Fatalf("tool.call entries on the shared ledger: %d %v", len(page.Items), err)
			}

			// An approval decided on both replicas at once.
			tok, err := a.CreateToken(ctx, client.TokenRequest{Agent: "bot"})
			if err != nil {
				t.Fatal(err)
			}
			agent := client.New(a.BaseURL(), tok.Token, nil)
			done := make(chan answer, 1)
			go func() {
				resp, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(`{"to":"y"}`), client.CallOptions{}, client.CallExtra{})
				done <- answer{resp, err}
			}()
			var pending []switchboard.ApprovalRequest
			for len(pending) == 0 { // the call is being recorded
				if pending, err = b.Approvals(ctx, client.ApprovalQuery{}); err != nil {
					t.Fatal(err)
				}
			}
			decisions := make([]error, 2)
			wg.Go(func() { _, decisions[0] = a.Decide(ctx, pending[0].ID, client.Decision{Approve: true}) })
			wg.Go(func() { _, decisions[1] = b.Decide(ctx, pending[0].ID, client.Decision{Reason: "no"}) })
			wg.Wait()
			if (decisions[0] == nil) == (decisions[1] == nil) {
				t.Fatalf("approve on one replica, deny on the other: %v / %v; want exactly one to win", decisions[0], decisions[1])
			}
			loser := decisions[0]
			if loser == nil {
				loser = decisions[1]
			}
			if switchboard.CodeOf(loser) != switchboard.CodeConflict {
				t.Errorf("the losing decision: %v, want CONFLICT", loser)
			}
			res := <-done
			approved := decisions[0] == nil
			switch {
			case approved && (res.err != nil || res.resp.Status != switchboard.StatusSucceeded || hits.Load() != 2):
				t.Fatalf("approved, the call: %+v %v (backend ran %d times in all)", res.resp, res.err, hits.Load())
			case !approved && (switchboard.CodeOf(res.err) != switchboard.CodeUserDenied || hits.Load() != 1):
				t.Fatalf("denied, the call: %+v %v (backend ran %d times in all)", res.resp, res.err, hits.Load())
			}
			decides, err := a.Activity(ctx, client.ActivityQuery{After: "0", Verb: "approval.decide", Limit: 1000})
			if err != nil || len(decides.Items) != 1 {
				t.Fatalf("approval.decide entries: %d %v", len(decides.Items), err)
			}
			for _, c := range []*client.Client{a, b} {
				if r, err := c.VerifyActivity(ctx); err != nil || !r.OK {
					t.Fatalf("the shared ledger: %+v %v", r, err)
				}
			}
		})
	}
}
