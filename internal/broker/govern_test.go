package broker_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
)

var agentA = switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "a"}

// counted wraps echo and counts executions.
func counted(n *atomic.Int32) broker.Func {
	return func(ctx context.Context, in json.RawMessage) (any, error) {
		n.Add(1)
		return echo(ctx, in)
	}
}

// RELIABILITY rows 10 and 11: one execution per key and body; the stored
// reply is replayed; another body under the same key runs nothing.
func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.goTool(t, echoTool, counted(&runs))
	ctx := context.Background()
	req := broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"hi"}`), IdempotencyKey: "k1", Caller: &agentA}

	first, err := e.b.Call(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Input = json.RawMessage(`{ "msg" : "hi" }`) // same body, other whitespace
	again, err := e.b.Call(ctx, req)
	if err != nil || again.ID != first.ID || string(again.Result) != string(first.Result) {
		t.Fatalf("replay: %+v %v; want invocation %s", again, err, first.ID)
	}
	req.Input = json.RawMessage(`{"msg":"other"}`)
	_, err = e.b.Call(ctx, req)
	wantCode(t, err, switchboard.CodeIdempotencyConflict)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	// Keys are scoped to the caller: another agent's k1 is its own call.
	req.Caller = &switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "b"}
	if inv, err := e.b.Call(ctx, req); err != nil || inv.ID == first.ID {
		t.Fatalf("another caller's key: %+v %v", inv, err)
	}
	if got := len(e.ledger(t)); got != 2 {
		t.Fatalf("%d ledger entries, want 2 (replays write none)", got)
	}
}

// Issue 14 item 9: the key's fingerprint compares JSON values, not bytes:
// the same input with its keys reordered or 0 written 0.0 replays the first
// outcome; another value under the same key is a conflict.
func TestIdempotencyKeyComparesValues(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.goTool(t, echoTool, counted(&runs))
	ctx := context.Background()
	req := broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"hi","n":0}`), IdempotencyKey: "k1", Caller: &agentA}

	first, err := e.b.Call(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, same := range []string{`{"n":0,"msg":"hi"}`, `{"msg":"hi","n":0.0}`, `{"n":0e0,"msg":"\u0068i"}`} {
		req.Input = json.RawMessage(same)
		again, err := e.b.Call(ctx, req)
		if err != nil || again.ID != first.ID || string(again.Result) != string(first.Result) {
			t.Fatalf("replay of %s: %+v %v; want invocation %s", same, again, err, first.ID)
		}
	}
	for _, other := range []string{`{"msg":"hi","n":1}`, `{"msg":"hi"}`, `{"msg":"hi ","n":0}`} {
		req.Input = json.RawMessage(other)
		_, err = e.b.Call(ctx, req)
		wantCode(t, err, switchboard.CodeIdempotencyConflict)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}

// A failed call is replayed as the same failure, not run again.
func TestIdempotencyReplaysFailure(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.goTool(t, echoTool, func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no such thing")
	})
	req := broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), IdempotencyKey: "k", Caller: &operator}
	first, err := e.b.Call(context.Background(), req)
	wantCode(t, err, switchboard.CodeNotFound)
	again, err := e.b.Call(context.Background(), req)
	wantCode(t, err, switchboard.CodeNotFound)
	if again.ID != first.ID || runs.Load() != 1 {
		t.Fatalf("failure replay ran %d times; ids %s %s", runs.Load(), first.ID, again.ID)
	}
}

// RELIABILITY row 10, second half: 50 duplicates at once while the first
// runs get CONFLICT; after it ends they all get its outcome; one execution.
func TestIdempotencyConcurrentDuplicates(t *testing.T) {
	e := newEnv(t, nil)
	bl := newBlocker()
	var runs atomic.Int32
	e.goTool(t, slowTool("test.slow", 10_000, 64, ""), func(ctx context.Context, in json.RawMessage) (any, error) {
		runs.Add(1)
		return bl.fn(ctx, in)
	})
	req := broker.CallRequest{Tool: "test.slow", IdempotencyKey: "dup", Caller: &operator}
	done := make(chan switchboard.Invocation, 1)
	go func() {
		inv, _ := e.b.Call(context.Background(), req)
		done <- inv
	}()
	<-bl.started
	var wg sync.WaitGroup
	var conflicts atomic.Int32
	for range 50 {
		wg.Go(func() {
			_, err := e.b.Call(context.Background(), req)
			if switchboard.CodeOf(err) == switchboard.CodeConflict {
				conflicts.Add(1)
			}
		})
	}
	wg.Wait()
	close(bl.release)
	first := <-done
	if conflicts.Load() != 50 || runs.Load() != 1 {
		t.Fatalf("%d of 50 in-flight duplicates got CONFLICT; the tool ran %d times", conflicts.Load(), runs.Load())
	}
	for range 50 {
		wg.Go(func() {
			inv, err := e.b.Call(context.Background(), req)
			if err != nil || inv.ID != first.ID {
				t.Errorf("late duplicate: %+v %v", inv, err)
			}
		})
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times", runs.Load())
	}
}

// With AwaitInFlight (MCP's re-sends), duplicates that arrive while the
// first call runs wait for it and get its outcome instead of CONFLICT;
// one whose caller gives up first is cancelled without touching the call.
func TestIdempotencyAwaitInFlight(t *testing.T) {
	e := newEnv(t, nil)
	bl := newBlocker()
	var runs atomic.Int32
	e.goTool(t, slowTool("test.slow", 10_000, 64, ""), func(ctx context.Context, in json.RawMessage) (any, error) {
		runs.Add(1)
		return bl.fn(ctx, in)
	})
	waiting := make(chan string, 100)
	broker.SetAwaitHook(e.b, func(key string) { waiting <- key })
	req := broker.CallRequest{Tool: "test.slow", IdempotencyKey: "dup", AwaitInFlight: true, Caller: &operator}
	done := make(chan switchboard.Invocation, 1)
	go func() {
		inv, _ := e.b.Call(context.Background(), req)
		done <- inv
	}()
	<-bl.started

	gaveUp, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := e.b.Call(gaveUp, req)
		cancelled <- err
	}()
	<-waiting
	cancel()
	wantCode(t, <-cancelled, switchboard.CodeCancelled)

	const dups = 20
	got := make(chan switchboard.Invocation, dups)
	for range dups {
		go func() {
			inv, err := e.b.Call(context.Background(), req)
			if err != nil {
				t.Errorf("waiting duplicate: %v", err)
			}
			got <- inv
		}()
	}
	for range dups {
		<-waiting // every duplicate is waiting before the first call ends
	}
	close(bl.release)
	first := <-done
	for range dups {
		if inv := <-got; inv.ID != first.ID || inv.Status != switchboard.StatusSucceeded {
			t.Fatalf("duplicate got %+v, want invocation %s", inv, first.ID)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}

// A call awaiting a twin that runs in another process (here another broker
// over the same store: a replica) sees its outcome through the store.
func TestIdempotencyAwaitInFlightAcrossBrokers(t *testing.T) {
	e := newEnv(t, nil)
	bl := newBlocker()
	e.goTool(t, slowTool("test.slow", 10_000, 64, ""), bl.fn)
	other := broker.New(broker.Options{Store: e.store, Registry: e.reg})
	t.Cleanup(other.Close)
	other.Handle("test.slow", bl.fn)
	waiting := make(chan string, 100)
	broker.SetAwaitHook(other, func(key string) { waiting <- key })

	req := broker.CallRequest{Tool: "test.slow", IdempotencyKey: "k", AwaitInFlight: true, Caller: &operator}
	done := make(chan switchboard.Invocation, 1)
	go func() {
		inv, _ := e.b.Call(context.Background(), req)
		done <- inv
	}()
	<-bl.started
	got := make(chan switchboard.Invocation, 1)
	go func() {
		inv, err := other.Call(context.Background(), req)
		if err != nil {
			t.Errorf("duplicate on the other broker: %v", err)
		}
		got <- inv
	}()
	<-waiting
	close(bl.release)
	first := <-done
	if inv := <-got; inv.ID != first.ID {
		t.Fatalf("the other broker got %+v, want invocation %s", inv, first.ID)
	}
}

// RELIABILITY: issue 14 item 1. A key left without its invocation (an
// older daemon claimed it and recorded the call in two transactions, and
// stopped in between) is given back however young it is: the call was
// never recorded, so it never ran, and the retry runs it once — instead of
// CONFLICT "still in flight" for a day. A key whose call is recorded and
// in flight is still CONFLICT.
func TestIdempotencyOrphanedClaim(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.goTool(t, echoTool, counted(&runs))
	input := json.RawMessage(`{"msg":"hi"}`)
	digest := broker.CallDigest("test.echo", "", input)
	_, fresh, err := e.store.IdempotencyClaim(context.Background(), switchboard.IdempotencyRecord{
		Scope: operator.Key(), Key: "young", Digest: digest, InvocationID: "inv-young", CreatedAt: time.Now(),
	}, time.Now().Add(-broker.DefaultIdempotencyTTL), switchboard.Invocation{ID: "inv-young", Tool: "test.echo", Status: switchboard.StatusDispatched})
	if err != nil || !fresh {
		t.Fatalf("plant: %v %v", fresh, err)
	}
	_, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "young", Caller: &operator})
	wantCode(t, err, switchboard.CodeConflict)

	seedOrphanKey(t, e.path, operator.Key(), "orphan", digest)
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "orphan", Caller: &operator})
	if err != nil || inv.Status != switchboard.StatusSucceeded || runs.Load() != 1 {
		t.Fatalf("retry of an orphaned key: %+v %v (ran %d times)", inv, err, runs.Load())
	}
	again, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "orphan", Caller: &operator})
	if err != nil || again.ID != inv.ID || runs.Load() != 1 {
		t.Fatalf("replay after the orphan was taken over: %+v %v", again, err)
	}
}

// seedOrphanKey writes an idempotency key that names no invocation, as a
// daemon before issue 14 could leave one, through a second connection.
func seedOrphanKey(t *testing.T, path, scope, key, digest string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO idempotency_keys (scope, key, digest, invocation_id, created_at) VALUES (?, ?, ?, ?, ?)`,
		scope, key, digest, broker.NewID(), time.Now().UnixMicro()); err != nil {
		t.Fatal(err)
	}
}

// A key claimed by a daemon that fingerprinted compacted bytes still
// matches a retry with those very bytes: it is in flight (CONFLICT), not a
// different call (IDEMPOTENCY_CONFLICT).
func TestIdempotencyLegacyDigest(t *testing.T) {
	e := newEnv(t, nil)
	e.goTool(t, echoTool, echo)
	input := json.RawMessage(`{ "n": 0, "msg": "hi" }`)
	if broker.LegacyDigest("test.echo", "", input) == broker.CallDigest("test.echo", "", input) {
		t.Fatal("the legacy and canonical digests agree on unsorted keys; the test proves nothing")
	}
	id := broker.NewID()
	_, fresh, err := e.store.IdempotencyClaim(context.Background(), switchboard.IdempotencyRecord{
		Scope: operator.Key(), Key: "old", Digest: broker.LegacyDigest("test.echo", "", input),
		InvocationID: id, CreatedAt: time.Now(),
	}, time.Now().Add(-broker.DefaultIdempotencyTTL), switchboard.Invocation{ID: id, Tool: "test.echo", Status: switchboard.StatusDispatched})
	if err != nil || !fresh {
		t.Fatalf("plant: %v %v", fresh, err)
	}
	_, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "old", Caller: &operator})
	wantCode(t, err, switchboard.CodeConflict)
}

// A call refused for load before it was recorded gives its key back.
func TestIdempotencyKeyReleasedOnRefusal(t *testing.T) {
	e := newEnv(t, func(o *broker.Options) { o.MaxQueue = 1 })
	bl := newBlocker()
	e.goTool(t, slowTool("test.slow", 10_000, 1, ""), bl.fn)
	queued := make(chan string, 4)
	broker.SetQueuedHook(e.b, func(tool string) { queued <- tool })
	done := make(chan struct{}, 2)
	background := func() {
		e.b.Call(context.Background(), broker.CallRequest{Tool: "test.slow", Caller: &operator})
		done <- struct{}{}
	}
	go background()
	<-bl.started
	go background()
	<-queued
	_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.slow", IdempotencyKey: "k", Caller: &operator})
	wantCode(t, err, switchboard.CodeRateLimited)
	close(bl.release)
	<-done
	<-done
	if inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.slow", IdempotencyKey: "k", Caller: &operator}); err != nil || inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("retry after a refusal: %+v %v", inv, err)
	}
}

// RELIABILITY row 22: a runaway agent gets RATE_LIMITED with a retry-after,
// per principal and per tool; users are not limited by default.
func TestRateLimit(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	e := newEnv(t, func(o *broker.Options) {
		o.Now = func() time.Time { return now }
		o.RateLimit = &broker.RateLimit{
			PerPrincipal: ratelimit.Rate{PerSecond: 1, Burst: 3},
			PerTool:      ratelimit.Rate{PerSecond: 1, Burst: 5},
		}
	})
	var runs atomic.Int32
	e.goTool(t, echoTool, counted(&runs))
	in := json.RawMessage(`{"msg":"x"}`)
	call := func(p switchboard.Principal) error {
		_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: in, Caller: &p})
		return err
	}
	for i := range 3 {
		if err := call(agentA); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	err := call(agentA)
	le := wantCode(t, err, switchboard.CodeRateLimited)
	d, _ := le.Details.(map[string]any)
	if ms, _ := d["retryAfterMs"].(int64); ms <= 0 || ms > 1000 || d["limit"] != "principal" {
		t.Fatalf("details %+v: want retryAfterMs within 1s and limit principal", le.Details)
	}
	// Another agent has its own bucket, until the tool's runs dry.
	b := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "b"}
	if err := call(b); err != nil {
		t.Fatal(err)
	}
	if err := call(b); err != nil {
		t.Fatal(err)
	}
	le = wantCode(t, call(b), switchboard.CodeRateLimited)
	if d, _ := le.Details.(map[string]any); d["limit"] != "tool" {
		t.Fatalf("details %+v: want the tool's limit", le.Details)
	}
	for range 20 {
		if err := call(switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}); err != nil {
			t.Fatalf("a user was limited: %v", err)
		}
	}
	now = now.Add(time.Second)
	if err := call(agentA); err != nil {
		t.Fatalf("after the retry-after: %v", err)
	}
	if n := runs.Load(); n != 3+2+20+1 {
		t.Fatalf("the tool ran %d times; refused calls must not run", n)
	}
}

// The ledger hook hears every entry with its ID.
func TestOnActivity(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []switchboard.ActivityEntry
	)
	e := newEnv(t, func(o *broker.Options) {
		o.OnActivity = func(en switchboard.ActivityEntry) {
			mu.Lock()
			seen = append(seen, en)
			mu.Unlock()
		}
	})
	e.goTool(t, echoTool, echo)
	for range 3 {
		if _, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0].ID == 0 || seen[2].Hash == "" {
		t.Fatalf("observed %+v", seen)
	}
}

// RELIABILITY row 30: a key past its TTL still holds while its call is in
// flight (awaiting approval, running): the retry is CONFLICT naming that
// call and runs nothing. Once the call is terminal the expired key is free.
func TestExpiredKeyHoldsWhileInFlight(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.goTool(t, echoTool, counted(&runs))
	input := json.RawMessage(`{"msg":"hi"}`)
	digest := broker.CallDigest("test.echo", "", input)
	old := time.Now().Add(-2 * broker.DefaultIdempotencyTTL)
	_, fresh, err := e.store.IdempotencyClaim(context.Background(), switchboard.IdempotencyRecord{
		Scope: operator.Key(), Key: "stale", Digest: digest, InvocationID: "inv-waiting", CreatedAt: old,
	}, old.Add(-time.Hour), switchboard.Invocation{ID: "inv-waiting", Tool: "test.echo", Status: switchboard.StatusAwaitingApproval, CreatedAt: old, UpdatedAt: old})
	if err != nil || !fresh {
		t.Fatalf("plant: %v %v", fresh, err)
	}
	_, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "stale", Caller: &operator})
	wantCode(t, err, switchboard.CodeConflict)
	if det, _ := switchboard.AsError(err).Details.(map[string]any); det["invocationId"] != "inv-waiting" || runs.Load() != 0 {
		t.Fatalf("the retry: %v (ran %d times); want CONFLICT naming inv-waiting, nothing run", err, runs.Load())
	}
	done := switchboard.Invocation{ID: "inv-waiting", Tool: "test.echo", Status: switchboard.StatusDenied, CreatedAt: old, UpdatedAt: old, FinishedAt: old}
	if _, err := e.store.InvocationUpdate(context.Background(), done, switchboard.StatusAwaitingApproval); err != nil {
		t.Fatal(err)
	}
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "stale", Caller: &operator})
	if err != nil || inv.ID == "inv-waiting" || inv.Status != switchboard.StatusSucceeded || runs.Load() != 1 {
		t.Fatalf("a call with the expired key of a finished call: %+v %v (ran %d times); want a new call", inv, err, runs.Load())
	}
}
