package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// terminateAll ends every Postgres session of the cluster's replicas (the
// pool's, the bus listener's, the presence locks'), as a database failover
// or a network cut does, and reports how many it ended. The server and
// other tests' sessions are left alone.
func (c *cluster) terminateAll(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	u, err := url.Parse(c.store)
	if err != nil {
		t.Fatal(err)
	}
	app := u.Query().Get("application_name")
	db, err := pgx.Connect(ctx, strings.Replace(c.store, "application_name="+app, "application_name=outage_"+app, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE split_part(application_name, ' ', 1) = $1 AND pid <> pg_backend_pid()) t`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// ledgerCheck asserts that every invocation the store holds ends in
// exactly one terminal state with exactly one tool.call entry, and that
// the ledger verifies on the replicas listed.
func ledgerCheck(t *testing.T, c *cluster, replicas ...int) map[string]string {
	t.Helper()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	var states map[string]string
	eventually(t, 60*time.Second, "every invocation ends", func() (bool, string) {
		states = map[string]string{}
		rows, err := db.Query(ctx, `SELECT id, status FROM invocations`)
		if err != nil {
			return false, err.Error()
		}
		defer rows.Close()
		open := 0
		for rows.Next() {
			var id, st string
			if err := rows.Scan(&id, &st); err != nil {
				return false, err.Error()
			}
			states[id] = st
			if !switchboard.Status(st).Terminal() {
				open++
			}
		}
		return open == 0, fmt.Sprintf("%d of %d not terminal", open, len(states))
	})
	entries := map[string]int{}
	rows, err := db.Query(ctx, `SELECT details->>'invocationId', count(*) FROM activity WHERE verb = 'tool.call' GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		entries[id] = n
	}
	rows.Close()
	for id, st := range states {
		if entries[id] != 1 {
			t.Errorf("invocation %s (%s) has %d tool.call entries, want 1:%s", id, st, entries[id], dumpEntries(db, id))
		}
	}
	for id := range entries {
		if _, ok := states[id]; !ok {
			t.Errorf("a tool.call entry names invocation %s, which the store does not hold", id)
		}
	}
	for _, i := range replicas {
		rep, err := c.at(i).VerifyActivity(ctx)
		if err != nil || !rep.OK {
			t.Errorf("activity verify on replica %d: %+v %v", i, rep, err)
		}
	}
	return states
}

// load calls test.send through the balancer from workers goroutines until
// stop is closed, counting the answers.
func load(ctx context.Context, c *cluster, workers int, stop <-chan struct{}) (wait func() int64) {
	var wg sync.WaitGroup
	var answered atomic.Int64
	lb := c.lb()
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				// Errors are allowed here (a request may meet the outage);
				// what each call left in the store is checked after.
				if _, err := lb.CallTool(cctx, "test.send", json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)), client.CallOptions{}); err == nil {
					answered.Add(1)
				}
				cancel()
			}
		})
	}
	return func() int64 { wg.Wait(); return answered.Load() }
}

// TestReplicasSurviveDatabaseOutage ends every Postgres session of three
// replicas at once, twice, under load and with calls held at the backend
// on one of them. No replica is dead, so none may be claimed or stop
// (every presence lock is retaken within a probe), the held calls end
// succeeded on their own replica, and every invocation ends once with
// one ledger entry on a verifying ledger.
func TestReplicasSurviveDatabaseOutage(t *testing.T) {
	c := newCluster(t, 3, "--replica-heartbeat", "5s", "--replica-timeout", "30s")
	be := newBackend(t)
	ctx := context.Background()
	c.register(be.tools(), "test.slow")

	var held []string
	for i := range 2 {
		resp, err := c.at(0).CallToolWith(ctx, "test.slow", json.RawMessage(fmt.Sprintf(`{"held":%d}`, i)), client.CallOptions{},
			client.CallExtra{Async: true})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, resp.InvocationID)
		select {
		case <-be.entered:
		case <-time.After(60 * time.Second):
			t.Fatal("the held call did not reach the backend")
		}
	}
	stop := make(chan struct{})
	wait := load(ctx, c, 6, stop)
	for range 2 {
		time.Sleep(time.Second)
		t.Logf("ended %d sessions of the replicas", c.terminateAll(t))
	}
	// Longer than two probes and the heartbeat: a survivor that took the
	// outage for deaths would have claimed by now.
	time.Sleep(6 * time.Second)
	close(be.release)
	close(stop)
	answered := wait()

	for i, r := range c.reps {
		resp, err := c.at(i).GetInvocation(ctx, held[0])
		if err != nil {
			t.Errorf("replica %d does not answer after the outage: %v", i, err)
		} else {
			_ = resp
		}
		if out := r.out.String(); strings.Contains(out, "taking over the calls of another replica") || strings.Contains(out, "found this one dead") {
			t.Errorf("replica %d took the outage for a death:\n%s", i, out)
		}
	}
	for _, id := range held {
		var inv switchboard.Invocation
		eventually(t, 30*time.Second, "the held call ends", func() (bool, string) {
			var err error
			inv, err = c.at(1).GetInvocation(ctx, id)
			return err == nil && inv.Status.Terminal(), fmt.Sprintf("%+v %v", inv.Status, err)
		})
		if inv.Status != switchboard.StatusSucceeded {
			t.Errorf("held call %s ended %s %+v, want succeeded (its replica never died)", id, inv.Status, inv.Error)
		}
	}
	states := ledgerCheck(t, c, 0, 1, 2)
	t.Logf("%d invocations (%d answered)", len(states), answered)
}

// TestReplicaStalledIsClaimedOnce stops replica A (SIGSTOP) for longer
// than the replica timeout while it holds a call at the backend and the
// balancer keeps sending it requests; its presence lock stays held (its
// connections are open), so only the heartbeat finds it. A survivor
// claims it and ends its call failed OUTCOME_UNKNOWN. When A resumes
// (SIGCONT) its backend answers: the call keeps the outcome the survivor
// gave it (no second ledger entry), A stops (it was claimed), and every
// invocation, including those A accepted from its queue as it resumed,
// ends once with one ledger entry on a verifying ledger.
func TestReplicaStalledIsClaimedOnce(t *testing.T) {
	c := newCluster(t, 3)
	be := newBackend(t)
	ctx := context.Background()
	c.register(be.tools(), "test.slow")
	a := c.reps[0]

	resp, err := c.at(0).CallToolWith(ctx, "test.slow", json.RawMessage(`{"held":"stalled"}`), client.CallOptions{},
		client.CallExtra{Async: true})
	if err != nil {
		t.Fatal(err)
	}
	held := resp.InvocationID
	select {
	case <-be.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the held call did not reach the backend")
	}
	stop := make(chan struct{})
	wait := load(ctx, c, 6, stop)
	time.Sleep(500 * time.Millisecond)

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var inv switchboard.Invocation
	eventually(t, 30*time.Second, "a survivor resolves the stalled replica's call", func() (bool, string) {
		inv, err = c.at(1).GetInvocation(ctx, held)
		return err == nil && inv.Status.Terminal(), fmt.Sprintf("%+v %v", inv.Status, err)
	})
	if inv.Status != switchboard.StatusFailed || inv.Error == nil || inv.Error.Code != switchboard.CodeOutcomeUnknown {
		t.Errorf("the stalled replica's call: %s %+v, want failed OUTCOME_UNKNOWN", inv.Status, inv.Error)
	}
	time.Sleep(time.Second) // requests queue at the stalled replica
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	close(be.release) // its backend answers as it resumes
	exited := make(chan error, 1)
	go func() { exited <- a.cmd.Wait() }()
	select {
	case err := <-exited:
		a.cmd = nil
		a.up.Store(false)
		t.Logf("the stalled replica stopped on resuming: %v", err)
	case <-time.After(30 * time.Second):
		t.Errorf("the claimed replica still runs 30 s after it resumed")
	}
	time.Sleep(time.Second)
	close(stop)
	answered := wait()

	after, err := c.at(1).GetInvocation(ctx, held)
	if err != nil || after.Status != inv.Status || after.Error == nil || after.Error.Code != switchboard.CodeOutcomeUnknown {
		t.Errorf("the stalled replica's call after it resumed: %+v %v, want it as the survivor left it", after, err)
	}
	states := ledgerCheck(t, c, 1, 2)
	t.Logf("%d invocations (%d answered)", len(states), answered)
}

// dumpEntries shows an invocation's record and its ledger entries, for a
// failure message.
func dumpEntries(db *pgx.Conn, id string) string {
	ctx := context.Background()
	var b strings.Builder
	var rec string
	_ = db.QueryRow(ctx, `SELECT row_to_json(i)::text FROM invocations i WHERE id = $1`, id).Scan(&rec)
	fmt.Fprintf(&b, "\n  record: %s", rec)
	rows, err := db.Query(ctx, `SELECT row_to_json(a)::text FROM activity a WHERE details->>'invocationId' = $1`, id)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	for rows.Next() {
		var e string
		_ = rows.Scan(&e)
		fmt.Fprintf(&b, "\n  entry: %s", e)
	}
	return b.String()
}

// TestKeyedRetryOnAnotherReplica sends a keyed call to replica A, held at
// the backend, and retries it with the same key on replica B while it is
// in flight: the retry is CONFLICT naming A's invocation (the HTTP API
// does not wait for the twin), and once A's call ends a retry on B replays
// its answer; the backend ran it once. Then A is SIGKILLed with a keyed
// call held: retries on B are CONFLICT until the survivor's sweep, then
// replay its OUTCOME_UNKNOWN, within killResolveBound; nothing runs twice.
func TestKeyedRetryOnAnotherReplica(t *testing.T) {
	c := newCluster(t, 3, "--replica-heartbeat", "5s", "--replica-timeout", "30s")
	be := newBackend(t)
	ctx := context.Background()
	c.register(be.tools(), "test.slow")
	type answer struct {
		resp switchboard.CallResponse
		err  error
	}
	call := func(i int, key, body string) answer {
		resp, err := c.at(i).CallToolWith(ctx, "test.slow", json.RawMessage(body), client.CallOptions{}, client.CallExtra{IdempotencyKey: key})
		return answer{resp, err}
	}
	inFlight := func(a answer, id string) bool {
		e := switchboard.AsError(a.err)
		return e != nil && e.Code == switchboard.CodeConflict && strings.Contains(e.Message, id)
	}

	// Answered: a retry on B during the call is CONFLICT, after it a replay.
	first := make(chan answer, 1)
	go func() { first <- call(0, "key-answered", `{"k":"answered"}`) }()
	<-be.entered
	time.Sleep(500 * time.Millisecond) // recorded dispatched
	during := call(1, "key-answered", `{"k":"answered"}`)
	be.release <- struct{}{}
	f := <-first
	id := f.resp.InvocationID
	if !inFlight(during, id) {
		t.Errorf("retry on B while A's call is in flight: %+v %v, want CONFLICT naming %s", during.resp, during.err, id)
	}
	r := call(1, "key-answered", `{"k":"answered"}`)
	if f.err != nil || r.err != nil || f.resp.InvocationID != id || r.resp.InvocationID != id || string(f.resp.Result) != string(r.resp.Result) {
		t.Errorf("first %+v %v; retry %+v %v: want one answer, of %s", f.resp, f.err, r.resp, r.err, id)
	}
	if n := be.count(`{"k":"answered"}`); n != 1 {
		t.Errorf("the keyed call ran %d times, want 1", n)
	}

	// A dies with the call in flight: a retry on B replays the sweep's end.
	go func() { _ = call(0, "key-killed", `{"k":"killed"}`) }()
	<-be.entered
	time.Sleep(500 * time.Millisecond) // recorded dispatched
	c.kill(0)
	killed := time.Now()
	var last answer
	eventually(t, 60*time.Second, "a retry on B replays the killed call's end", func() (bool, string) {
		last = call(1, "key-killed", `{"k":"killed"}`)
		return switchboard.CodeOf(last.err) != switchboard.CodeConflict, fmt.Sprint(last.err)
	})
	took := time.Since(killed)
	t.Logf("a retry on B replayed the killed call's end %s after the kill: %v", took.Round(time.Millisecond), last.err)
	if switchboard.CodeOf(last.err) != switchboard.CodeOutcomeUnknown {
		t.Errorf("the retry after the kill: %+v %v, want OUTCOME_UNKNOWN", last.resp, last.err)
	}
	if took > killResolveBound {
		t.Errorf("the retry replayed %s after the kill, want within %s", took, killResolveBound)
	}
	if n := be.count(`{"k":"killed"}`); n != 1 {
		t.Errorf("the keyed call ran %d times, want 1", n)
	}
	ledgerCheck(t, c, 1, 2)
}

// TestClaimedReplicaAnswersItsHeldRequests: a replica claimed while
// paused, with a synchronous call held at its backend, answers that
// request with a coded error as it resumes — its outcome is already the
// survivor's and it can record nothing — instead of holding it through
// its shutdown grace and dropping the connection as it exits.
func TestClaimedReplicaAnswersItsHeldRequests(t *testing.T) {
	c := newCluster(t, 3)
	be := newBackend(t) // its /slow calls are held until the test ends
	ctx := context.Background()
	c.register(be.tools(), "test.slow")
	a := c.reps[0]

	type answer struct {
		resp switchboard.CallResponse
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := c.at(0).CallTool(ctx, "test.slow", json.RawMessage(`{"held":"sync"}`), client.CallOptions{})
		got <- answer{resp, err}
	}()
	select {
	case <-be.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the held call did not reach the backend")
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	eventually(t, 30*time.Second, "a survivor claims the paused replica and resolves its work", func() (bool, string) {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM replicas WHERE addr LIKE '%' || $1`, a.addr).Scan(&n); err != nil {
			return false, err.Error()
		}
		return n == 0, fmt.Sprintf("%d rows", n)
	})
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var ans answer
	select {
	case ans = <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("the held request was never answered")
	}
	// The client codes a dropped connection UNAVAILABLE too, as "reach
	// daemon": the answer must be the daemon's own.
	if e := switchboard.AsError(ans.err); e == nil || strings.Contains(e.Message, "reach daemon") {
		t.Fatalf("the held request on the claimed replica: %+v %v, want the daemon's coded answer (not a dropped connection, not a success)", ans.resp, ans.err)
	}
	t.Logf("the held request was answered: %v", ans.err)
}
