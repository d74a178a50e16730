package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestReplicasMCPStateless runs the 2026-07-28 revision against three
// replicas behind the round-robin balancer with no affinity (issue 16,
// item 4): every request of a client may land on another replica. An
// agent's call that needs approval is asked on one replica, decided on
// another and retried through the balancer; the tool runs once, with one
// ledger entry, even when the replica that asked is killed (or stopped)
// between rounds.
func TestReplicasMCPStateless(t *testing.T) {
	c := newCluster(t, 3)
	be := newBackend(t)
	ctx := context.Background()
	lb := c.lb()
	c.register(be.tools(), "test.send")
	tok, err := lb.CreateToken(ctx, client.TokenRequest{Agent: "mcp-bot"})
	if err != nil {
		t.Fatal(err)
	}
	// connect opens a 2026-07-28 client of base that drives the rounds
	// itself (the SDK's retry loop off), answering a console link with
	// "accept" (the human opened it).
	connect := func(base string) *mcp.ClientSession {
		t.Helper()
		cl := mcp.NewClient(&mcp.Implementation{Name: "replica-agent", Version: "1"}, &mcp.ClientOptions{
			Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}})
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{tok.Token}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s through %s, want 2026-07-28", v, base)
		}
		return cs
	}
	viaLB := connect(c.proxy.URL)

	// retry sends round 2 through the balancer until it is not
	// input_required.
	retry := func(params *mcp.CallToolParams, state string) *mcp.CallToolResult {
		t.Helper()
		p := *params
		p.RequestState = state
		p.InputResponses = mcp.InputResponseMap{"switchboard/approval": &mcp.ElicitResult{Action: "accept"}}
		for range 20 {
			res, err := viaLB.CallTool(ctx, &p)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if !res.NeedsInput() {
				return res
			}
			p.RequestState = res.RequestState
		}
		t.Fatal("still input_required after 20 retries")
		return nil
	}
	// firstRound asks for approval on replica i alone and returns the
	// invocation and state.
	firstRound := func(i int, params *mcp.CallToolParams) (string, string) {
		t.Helper()
		res, err := connect("http://"+c.reps[i].addr).CallTool(ctx, params)
		if err != nil || !res.NeedsInput() || res.RequestState == "" {
			t.Fatalf("first round on replica %d: %+v %v", i, res, err)
		}
		return res.Meta["switchboard/invocationId"].(string), res.RequestState
	}
	decide := func(cl *client.Client, inv string) {
		t.Helper()
		var pending []switchboard.ApprovalRequest
		eventually(t, 30*time.Second, "the approval of "+inv+" is pending", func() (bool, string) {
			all, err := cl.Approvals(ctx, client.ApprovalQuery{})
			pending = pending[:0]
			for _, a := range all {
				if a.InvocationID == inv {
					pending = append(pending, a)
				}
			}
			return err == nil && len(pending) == 1, fmt.Sprint(all, err)
		})
		if _, err := cl.Decide(ctx, pending[0].ID, client.Decision{Approve: true}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("ListAndCall", func(t *testing.T) {
		for range 3 { // three requests, three replicas
			list, err := viaLB.ListTools(ctx, nil)
			if err != nil && strings.Contains(err.Error(), "terminated without response") {
				// Seen once in CI under full load, not reproduced alone: the
				// proxy lost its connection to the replica mid-answer and
				// the stateless stream ended with no response. A list is
				// safe to repeat, as a client would; the open question is
				// in the closing note of the fifth session.
				t.Logf("tools/list through the proxy: %v; sending it again", err)
				list, err = viaLB.ListTools(ctx, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tools) == 0 {
				t.Fatal("no tools listed")
			}
			res, err := viaLB.CallTool(ctx, &mcp.CallToolParams{Name: "test-fast", Arguments: map[string]any{"mcp": "read"}})
			if err != nil || res.IsError {
				t.Fatalf("read call: %+v %v", res, err)
			}
		}
	})

	t.Run("ApprovedOnAnotherReplica", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "test-send", Arguments: map[string]any{"mcp": "across"}}
		inv, state := firstRound(0, params)
		decide(c.at(2), inv)
		// Two retries at once land on two replicas; a third after them.
		var wg sync.WaitGroup
		results := make([]*mcp.CallToolResult, 3)
		for i := range 2 {
			wg.Go(func() { results[i] = retry(params, state) })
		}
		wg.Wait()
		results[2] = retry(params, state)
		for i, res := range results {
			if res.IsError || res.Meta["switchboard/invocationId"] != inv {
				t.Fatalf("retry %d: %+v", i, res)
			}
		}
		if got := be.count(`{"mcp":"across"}`); got != 1 {
			t.Fatalf("the backend ran the call %d times", got)
		}
		if n := callEntries(t, lb)[inv]; n != 1 {
			t.Fatalf("%s has %d tool.call entries", inv, n)
		}
	})

	t.Run("AskingReplicaKilledBetweenRounds", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "test-send", Arguments: map[string]any{"mcp": "after-kill"}}
		inv, state := firstRound(0, params)
		before, err := lb.GetInvocation(ctx, inv)
		if err != nil || before.Status != switchboard.StatusAwaitingApproval {
			t.Fatalf("after the first round: %+v %v", before, err)
		}
		c.kill(0)
		// A survivor takes the call over (it stays awaiting approval) ...
		eventually(t, 60*time.Second, "a survivor adopts "+inv, func() (bool, string) {
			got, err := lb.GetInvocation(ctx, inv)
			return err == nil && got.Replica != before.Replica, fmt.Sprint(got.Replica, got.Status, err)
		})
		// ... runs it once approved, and any replica's retry answers it.
		decide(lb, inv)
		res := retry(params, state)
		if res.IsError || res.Meta["switchboard/invocationId"] != inv {
			t.Fatalf("retry after the kill: %+v", res)
		}
		if again := retry(params, state); again.IsError {
			t.Fatalf("second retry: %+v", again)
		}
		if got := be.count(`{"mcp":"after-kill"}`); got != 1 {
			t.Fatalf("the backend ran the call %d times", got)
		}
		if n := callEntries(t, lb)[inv]; n != 1 {
			t.Fatalf("%s has %d tool.call entries", inv, n)
		}
		for _, i := range []int{1, 2} {
			rep, err := c.at(i).VerifyActivity(ctx)
			if err != nil || !rep.OK {
				t.Fatalf("activity verify on replica %d: %+v %v", i, rep, err)
			}
		}
	})

	t.Run("AskingReplicaStoppedBetweenRounds", func(t *testing.T) {
		// A clean stop (SIGTERM, a rolling restart) leaves the call
		// awaiting approval; the survivor takes it over at once.
		params := &mcp.CallToolParams{Name: "test-send", Arguments: map[string]any{"mcp": "after-stop"}}
		inv, state := firstRound(1, params)
		before, err := lb.GetInvocation(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		c.stop(c.reps[1])
		eventually(t, 60*time.Second, "the survivor adopts "+inv, func() (bool, string) {
			got, err := lb.GetInvocation(ctx, inv)
			return err == nil && got.Replica != before.Replica && got.Status == switchboard.StatusAwaitingApproval, fmt.Sprint(got.Replica, got.Status, err)
		})
		decide(lb, inv)
		if res := retry(params, state); res.IsError || res.Meta["switchboard/invocationId"] != inv {
			t.Fatalf("retry after the stop: %+v", res)
		}
		if got := be.count(`{"mcp":"after-stop"}`); got != 1 {
			t.Fatalf("the backend ran the call %d times", got)
		}
		if n := callEntries(t, lb)[inv]; n != 1 {
			t.Fatalf("%s has %d tool.call entries", inv, n)
		}
	})
}
