package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// killResolveBound is how soon after a replica is SIGKILLed every call it
// had in flight, and every call elsewhere waiting on a tab whose stream it
// held, must have a definite state.
const killResolveBound = 5 * time.Second

// TestKilledReplicaResolvesInSeconds runs three replicas with the default
// heartbeat (5 s) and timeout (30 s): a killed replica is found dead by
// its presence lock, not its heartbeat. Replica A holds three api calls
// at the backend and a tab's stream; a caller on replica B waits for that
// tab to answer a browser call. A is SIGKILLed: A's calls end failed
// OUTCOME_UNKNOWN and B's call SESSION_GONE within killResolveBound (the
// tool's timeout is 30 s), each with exactly one tool.call entry, and the
// ledger verifies.
func TestKilledReplicaResolvesInSeconds(t *testing.T) {
	c := newCluster(t, 3, "--replica-heartbeat", "5s", "--replica-timeout", "30s")
	be := newBackend(t)
	ctx := context.Background()
	c.register(be.tools(), "test.slow")
	a, b := c.at(0), c.at(1)

	// The tab: opened through B, its stream on A.
	nav := switchboard.Tool{Name: "nav.goto", Description: "Open a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`)}
	cred, err := b.CreateSession(ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Tab(cred).Advertise(ctx, []switchboard.Tool{nav}); err != nil {
		t.Fatal(err)
	}
	tab := newTabStream(t, a.Tab(cred))
	eventually(t, 30*time.Second, "replica B sees the tab connected on A", func() (bool, string) {
		info, err := b.Session(ctx, cred.SessionID)
		return err == nil && info.State == switchboard.TabConnected, fmt.Sprintf("%+v %v", info, err)
	})

	// A's api calls, held at the backend.
	var ids []string
	for i := range 3 {
		resp, err := a.CallToolWith(ctx, "test.slow", json.RawMessage(fmt.Sprintf(`{"held":%d}`, i)), client.CallOptions{},
			client.CallExtra{Async: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.InvocationID)
	}
	for range ids {
		select {
		case <-be.entered:
		case <-time.After(60 * time.Second):
			t.Fatal("the held calls did not reach the backend")
		}
	}
	// B's browser call, delivered to the tab on A and not answered.
	type answer struct {
		resp switchboard.CallResponse
		err  error
		at   time.Time
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := b.CallTool(context.Background(), "nav.goto", json.RawMessage(`{"page":"inbox"}`), client.CallOptions{SessionID: cred.SessionID})
		answered <- answer{resp, err, time.Now()}
	}()
	var browser string
	select {
	case req := <-tab.requests:
		browser = req.InvocationID
	case <-time.After(60 * time.Second):
		t.Fatal("the browser call did not reach the tab")
	}
	ids = append(ids, browser)

	c.kill(0)
	killed := time.Now()

	// Each call's definite state, seen through B, and when.
	took := map[string]time.Duration{}
	final := map[string]switchboard.Invocation{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			deadline := killed.Add(90 * time.Second)
			for time.Now().Before(deadline) {
				inv, err := b.GetInvocation(ctx, id)
				if err == nil && inv.Status.Terminal() {
					mu.Lock()
					took[id], final[id] = time.Since(killed), inv
					mu.Unlock()
					return
				}
				time.Sleep(25 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	var caller answer
	select {
	case caller = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the caller on B was never answered")
	}
	var api []string
	for _, id := range ids[:len(ids)-1] {
		api = append(api, took[id].Round(time.Millisecond).String())
	}
	t.Logf("resolved after the kill: A's api calls %v, B's browser call %s (its caller answered after %s)",
		api, took[browser].Round(time.Millisecond), caller.at.Sub(killed).Round(time.Millisecond))

	for _, id := range ids {
		inv, ok := final[id]
		if !ok {
			t.Fatalf("%s has no definite state 90 s after the kill", id)
		}
		want := switchboard.CodeOutcomeUnknown
		if id == browser {
			want = switchboard.CodeSessionGone
		}
		if inv.Status != switchboard.StatusFailed || inv.Error == nil || inv.Error.Code != want {
			t.Errorf("%s after the kill: %s %+v, want failed %s", id, inv.Status, inv.Error, want)
		}
		if took[id] > killResolveBound {
			t.Errorf("%s resolved %s after the kill, want within %s", id, took[id].Round(time.Millisecond), killResolveBound)
		}
	}
	if d := caller.at.Sub(killed); d > killResolveBound+time.Second || switchboard.CodeOf(caller.err) != switchboard.CodeSessionGone {
		t.Errorf("B's caller: %+v %v after %s, want SESSION_GONE within %s (and the 1 s of its wait's poll)", caller.resp, caller.err, d, killResolveBound)
	}

	db, err := pgx.Connect(ctx, c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	for _, id := range ids {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM activity WHERE verb = 'tool.call' AND details->>'invocationId' = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("invocation %s has %d tool.call entries, want 1", id, n)
		}
	}
	for _, i := range []int{1, 2} {
		rep, err := c.at(i).VerifyActivity(ctx)
		if err != nil || !rep.OK {
			t.Fatalf("activity verify on replica %d: %+v %v", i, rep, err)
		}
	}
}
