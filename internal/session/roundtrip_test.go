package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	inv, done := f.call("nav.goto", "", `{"page":"media"}`)

	req := request(t, next(t, conn))
	if req.InvocationID != inv.ID || req.RunID != inv.RunID || req.Tool != "nav.goto" || string(req.Input) != `{"page":"media"}` ||
		req.ProtocolVersion != switchboard.ProtocolVersion || req.TimeoutMs != int(broker.DefaultTimeout.Milliseconds()) {
		t.Fatalf("request %+v does not describe invocation %s", req, inv.ID)
	}
	stored, err := f.result(c.SessionID, req.RunID, req.InvocationID, ok(`{"page":"media","ok":true}`))
	if err != nil || stored.Status != switchboard.StatusSucceeded {
		t.Fatalf("result: %+v %v", stored, err)
	}
	got := <-done
	if got.err != nil || got.inv.Status != switchboard.StatusSucceeded || string(got.inv.Result) != `{"page":"media","ok":true}` {
		t.Fatalf("await: %+v %v", got.inv, got.err)
	}
	rec, _ := f.store.InvocationGet(f.ctx, inv.ID)
	if rec.Status != switchboard.StatusSucceeded || rec.ResultBytes != len(rec.Result) || rec.FinishedAt.IsZero() || rec.SessionID != c.SessionID {
		t.Fatalf("stored record %+v", rec)
	}
	// The acknowledged request left the log: a fresh stream gets nothing.
	conn2 := f.attach(c.SessionID, "")
	if ev, ok := conn2.Next(); ok {
		t.Fatalf("acknowledged request redelivered: %+v", ev)
	}
}

func TestResultIdempotenceAndConflicts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	other, _ := f.live()
	inv, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
	req := request(t, next(t, conn))
	run := req.RunID

	// Guessed or misdirected: all NOT_FOUND, and nothing is recorded.
	for _, tc := range []struct{ name, sess, run, inv string }{
		{"another tab's token", other.SessionID, run, inv.ID},
		{"wrong run", c.SessionID, "run-x", inv.ID},
		{"guessed invocation", c.SessionID, run, "0123456789abcdef0123456789abcdef"},
	} {
		_, err := f.result(tc.sess, tc.run, tc.inv, ok(`1`))
		if switchboard.CodeOf(err) != switchboard.CodeNotFound {
			t.Errorf("%s: %v, want NOT_FOUND", tc.name, err)
		}
	}
	if _, err := f.result(c.SessionID, run, inv.ID, switchboard.BrowserActionResult{OK: true, InvocationID: "other"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("body naming another invocation: %v", err)
	}
	if _, err := f.result(c.SessionID, run, inv.ID, switchboard.BrowserActionResult{OK: false}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("ok:false without an error: %v", err)
	}

	if _, err := f.result(c.SessionID, run, inv.ID, ok(`{"a": 1, "b": [1,2]}`)); err != nil {
		t.Fatal(err)
	}
	<-done
	// The same result again (even re-spaced) is accepted as it is.
	again, err := f.result(c.SessionID, run, inv.ID, ok(`{"b":[1,2],"a":1}`))
	if err != nil || again.Status != switchboard.StatusSucceeded {
		t.Fatalf("identical result again: %+v %v", again, err)
	}
	_, err = f.result(c.SessionID, run, inv.ID, ok(`{"a": 2}`))
	wantCode(t, err, switchboard.CodeIdempotencyConflict)
	_, err = f.result(c.SessionID, run, inv.ID, fail("INTERNAL", "boom"))
	wantCode(t, err, switchboard.CodeIdempotencyConflict)
	rec, _ := f.store.InvocationGet(f.ctx, inv.ID)
	if string(rec.Result) != `{"a": 1, "b": [1,2]}` {
		t.Fatalf("the first result must stand, got %s", rec.Result)
	}

	// A failure reported by the tab is idempotent too.
	inv2, done2 := f.call("nav.goto", c.SessionID, `{"page":"b"}`)
	req2 := request(t, next(t, conn))
	if _, err := f.result(c.SessionID, req2.RunID, inv2.ID, fail("NOT_FOUND", "no page b")); err != nil {
		t.Fatal(err)
	}
	if got := <-done2; got.inv.Status != switchboard.StatusFailed || got.inv.Error.Code != switchboard.CodeNotFound || got.inv.Error.Message != "no page b" {
		t.Fatalf("tab failure: %+v", got.inv)
	}
	if _, err := f.result(c.SessionID, req2.RunID, inv2.ID, fail("NOT_FOUND", "no page b")); err != nil {
		t.Fatalf("same failure again: %v", err)
	}
	_, err = f.result(c.SessionID, req2.RunID, inv2.ID, ok(`true`))
	wantCode(t, err, switchboard.CodeIdempotencyConflict)
}

func TestBrowserErrorCodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	inv, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
	req := request(t, next(t, conn))
	const maxBrowserMessage = 2048 // the broker keeps this much of a tab's message
	long := strings.Repeat("é", maxBrowserMessage)
	res := switchboard.BrowserActionResult{Error: &switchboard.Error{Code: "ELEMENT_MISSING", Message: long}}
	if _, err := f.result(c.SessionID, req.RunID, inv.ID, res); err != nil {
		t.Fatal(err)
	}
	got := (<-done).inv
	d, _ := got.Error.Details.(map[string]any)
	if got.Error.Code != switchboard.CodeUpstreamError || d["browserCode"] != "ELEMENT_MISSING" || len(got.Error.Message) > maxBrowserMessage {
		t.Fatalf("an unknown code should become UPSTREAM_ERROR keeping the tab's code: %+v", got.Error)
	}
}

func TestOutputSchemaEnforced(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(scrollTool())
	inv, done := f.call("ui.scroll_to", c.SessionID, `{}`)
	req := request(t, next(t, conn))
	_, err := f.result(c.SessionID, req.RunID, inv.ID, ok(`{"top":"high"}`))
	wantCode(t, err, switchboard.CodeSchemaViolation)
	got := (<-done).inv
	if got.Status != switchboard.StatusFailed || got.Error.Code != switchboard.CodeSchemaViolation || !strings.Contains(got.Error.Message, "/top") {
		t.Fatalf("a result breaking the outputSchema must fail the call with SCHEMA_VIOLATION: %+v", got.Error)
	}
	// The same bad result again gets the same answer; a good one now conflicts.
	_, err = f.result(c.SessionID, req.RunID, inv.ID, ok(`{"top":"high"}`))
	wantCode(t, err, switchboard.CodeSchemaViolation)
	_, err = f.result(c.SessionID, req.RunID, inv.ID, ok(`{"top":1}`))
	wantCode(t, err, switchboard.CodeIdempotencyConflict)

	// Without a local waiter (another replica, or after it returned) the
	// schema comes from the tab's advertisement.
	inv2, _ := f.dispatch("ui.scroll_to", c.SessionID, "", `{}`)
	_, err = f.result(c.SessionID, inv2.RunID, inv2.ID, ok(`{}`))
	wantCode(t, err, switchboard.CodeSchemaViolation)
}

func TestResultTooLarge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	inv, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
	req := request(t, next(t, conn))
	err := f.tooLarge(c.SessionID, "wrong-run", inv.ID)
	wantCode(t, err, switchboard.CodeNotFound)
	err = f.tooLarge(c.SessionID, req.RunID, inv.ID)
	wantCode(t, err, switchboard.CodePayloadTooLarge)
	if got := (<-done).inv; got.Status != switchboard.StatusFailed || got.Error.Code != switchboard.CodePayloadTooLarge {
		t.Fatalf("an oversize result must fail the call at once: %+v", got)
	}
	err = f.tooLarge(c.SessionID, req.RunID, inv.ID)
	wantCode(t, err, switchboard.CodePayloadTooLarge)
	_, err = f.result(c.SessionID, req.RunID, inv.ID, ok(`1`))
	wantCode(t, err, switchboard.CodeIdempotencyConflict)
}

// RELIABILITY row 14: a silent tab, then a late or double result.
func TestTimeoutThenLateResult(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Heartbeat: time.Hour}) // the stream stays up; the tab just never answers
		short := navTool()
		short.TimeoutMs = 1500
		c, conn := f.live(short)
		start := time.Now()
		inv, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
		req := request(t, next(t, conn))
		if req.TimeoutMs != 1500 {
			t.Fatalf("request timeoutMs %d, want the tool's 1500", req.TimeoutMs)
		}
		got := <-done
		if got.err != nil || got.inv.Status != switchboard.StatusTimedOut || got.inv.Error.Code != switchboard.CodeTimeout {
			t.Fatalf("silent tab: %+v %v", got.inv, got.err)
		}
		if el := time.Since(start); el != 1500*time.Millisecond {
			t.Fatalf("timed out after %s, want exactly the tool's 1.5s", el)
		}
		// The tab is told to stop.
		ev := next(t, conn)
		if ev.Kind != KindCancel || !strings.Contains(string(ev.Data), inv.ID) || !strings.Contains(string(ev.Data), "TIMEOUT") {
			t.Fatalf("after a timeout the tab should get a cancel: %+v", ev)
		}
		// A late result gets the final state, not a silent overwrite; twice.
		for range 2 {
			_, err := f.result(c.SessionID, req.RunID, inv.ID, ok(`"late"`))
			wantCode(t, err, switchboard.CodeConflict)
			if d, _ := switchboard.AsError(err).Details.(map[string]any); d["status"] != switchboard.StatusTimedOut {
				t.Fatalf("late result details %v should carry the final state", d)
			}
		}
		rec, _ := f.store.InvocationGet(f.ctx, inv.ID)
		if rec.Status != switchboard.StatusTimedOut || rec.Result != nil {
			t.Fatalf("record after late result: %+v", rec)
		}
	})
}

func TestDefaultTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Heartbeat: time.Hour}, 7*time.Second)
		c, _ := f.live(navTool())
		start := time.Now()
		_, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
		if got := <-done; got.inv.Status != switchboard.StatusTimedOut || time.Since(start) != 7*time.Second {
			t.Fatalf("default timeout: %s after %s", got.inv.Status, time.Since(start))
		}
	})
}

// A tab that disconnects fails its calls with SESSION_GONE within the grace
// window, long before their timeout, and its tools are withdrawn.
func TestGoneWithinGraceWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Heartbeat: time.Second}, time.Hour)
		c, conn := f.live(navTool())
		_, done1 := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
		_, done2 := f.call("nav.goto", c.SessionID, `{"page":"b"}`)
		next(t, conn)
		start := time.Now()
		conn.Close() // the stream drops and never comes back
		for _, done := range []<-chan outcome{done1, done2} {
			got := <-done
			if got.inv.Status != switchboard.StatusFailed || got.inv.Error.Code != switchboard.CodeSessionGone {
				t.Fatalf("call on a gone tab: %+v", got.inv)
			}
		}
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("gone after %s, want the grace window (2 × heartbeat = 2s)", el)
		}
		if tools, _ := f.m.Tools(f.ctx, c.SessionID); len(tools) != 0 {
			t.Fatalf("a gone tab still lists %v", names(tools))
		}
		_, err := f.m.Resolve(f.ctx, "nav.goto", "", "", nil)
		wantCode(t, err, switchboard.CodeToolUnavailable)
		_, err = f.m.Resolve(f.ctx, "nav.goto", c.SessionID, "", nil)
		wantCode(t, err, switchboard.CodeSessionGone)
		// Gone is not closed: the tab may come back and re-advertise.
		conn = f.attach(c.SessionID, "")
		f.advertise(c.SessionID, navTool())
		if _, err := f.m.Resolve(f.ctx, "nav.goto", c.SessionID, "", nil); err != nil {
			t.Fatalf("a returning tab: %v", err)
		}
		synctest.Wait()
		if f.bus.Topics() != 2 { // only the returning tab's dispatch topic and the broker's ends
			t.Fatalf("%d bus topics left; waiters leaked subscriptions", f.bus.Topics())
		}
	})
}

// A stream that drops and comes back within the grace window loses nothing.
func TestBlipWithinGraceWindowLosesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Heartbeat: time.Second}, time.Hour)
		c, conn := f.live(navTool())
		inv, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
		ev := next(t, conn)
		conn.Close()
		time.Sleep(1900 * time.Millisecond) // fake time: just inside the 2s window
		conn = f.attach(c.SessionID, ev.ID)
		time.Sleep(30 * time.Minute) // well past the old window: a stale expiry must do nothing
		if _, err := f.result(c.SessionID, request(t, ev).RunID, inv.ID, ok(`1`)); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.inv.Status != switchboard.StatusSucceeded {
			t.Fatalf("after a blip: %+v", got.inv)
		}
	})
}

func TestCloseFailsCallsAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{}, time.Hour)
		c, conn := f.live(navTool())
		_, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
		next(t, conn)
		start := time.Now()
		if err := f.m.Close(f.ctx, c.SessionID); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.inv.Error == nil || got.inv.Error.Code != switchboard.CodeSessionGone || time.Since(start) != 0 {
			t.Fatalf("close: %+v after %s", got.inv, time.Since(start))
		}
		<-conn.Done()
		wantCode(t, conn.Err(), switchboard.CodeSessionGone)
	})
}

func TestCancelTellsTheTab(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	ctx, cancel := context.WithCancel(f.ctx)
	inv, done := f.callCtx(ctx, "nav.goto", c.SessionID, `{"page":"a"}`)
	req := request(t, next(t, conn))
	cancel()
	got := <-done
	if got.inv.Status != switchboard.StatusCancelled || got.inv.Error.Code != switchboard.CodeCancelled {
		t.Fatalf("cancelled call: %+v", got.inv)
	}
	ev := next(t, conn)
	var msg struct {
		InvocationID string             `json:"invocationId"`
		Reason       *switchboard.Error `json:"reason"`
	}
	if err := json.Unmarshal(ev.Data, &msg); err != nil || ev.Kind != KindCancel || msg.InvocationID != inv.ID || msg.Reason.Code != switchboard.CodeCancelled {
		t.Fatalf("cancel event %s %s", ev.Kind, ev.Data)
	}
	_, err := f.result(c.SessionID, req.RunID, inv.ID, ok(`1`))
	wantCode(t, err, switchboard.CodeConflict)
}

func TestDeadlineCauseIsTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	ctx, cancel := context.WithCancelCause(f.ctx)
	_, done := f.callCtx(ctx, "nav.goto", c.SessionID, `{"page":"a"}`)
	next(t, conn)
	cancel(switchboard.Errorf(switchboard.CodeTimeout, "nav.goto did not finish within 1s (its timeout)"))
	if got := <-done; got.inv.Status != switchboard.StatusTimedOut {
		t.Fatalf("a caller deadline should record TIMEOUT, got %+v", got.inv)
	}
}

// Many calls in flight on one tab, answered out of order, each reconciled to
// its own record; and chaining, where one result feeds the next input.
func TestManyInFlightAndChaining(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	const n = 50
	calls := map[string]<-chan outcome{}
	for i := range n {
		inv, done := f.call("nav.goto", c.SessionID, fmt.Sprintf(`{"page":"p%d"}`, i))
		calls[inv.ID] = done
	}
	var reqs []switchboard.BrowserActionRequest
	for range n {
		reqs = append(reqs, request(t, next(t, conn)))
	}
	var wg sync.WaitGroup
	for i := len(reqs) - 1; i >= 0; i-- { // answer in reverse, concurrently
		wg.Add(1)
		go func(req switchboard.BrowserActionRequest) {
			defer wg.Done()
			var in struct{ Page string }
			_ = json.Unmarshal(req.Input, &in)
			if _, err := f.result(c.SessionID, req.RunID, req.InvocationID, ok(`{"at":"`+in.Page+`"}`)); err != nil {
				t.Error(err)
			}
		}(reqs[i])
	}
	wg.Wait()
	for id, done := range calls {
		got := <-done
		rec, _ := f.store.InvocationGet(f.ctx, id)
		var in struct{ Page string }
		_ = json.Unmarshal(rec.Input, &in)
		if got.inv.ID != id || string(got.inv.Result) != `{"at":"`+in.Page+`"}` || string(rec.Result) != string(got.inv.Result) {
			t.Fatalf("invocation %s got %s for input %s", id, got.inv.Result, rec.Input)
		}
	}

	// Chaining: the tab's answer to one call is the next call's input.
	page := "projects"
	for range 3 {
		inv, done := f.call("nav.goto", c.SessionID, `{"page":"`+page+`"}`)
		req := request(t, next(t, conn))
		var in struct{ Page string }
		_ = json.Unmarshal(req.Input, &in)
		if _, err := f.result(c.SessionID, req.RunID, inv.ID, ok(`{"next":"`+in.Page+`-next"}`)); err != nil {
			t.Fatal(err)
		}
		var out struct{ Next string }
		_ = json.Unmarshal((<-done).inv.Result, &out)
		page = out.Next
	}
	if page != "projects-next-next-next" {
		t.Fatalf("chained result %q", page)
	}
}

// An input too large for one bus message travels by reference.
func TestLargeInputByReference(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	big := strings.Repeat("x", 3*bus.MaxPayload)
	inv, done := f.call("nav.goto", c.SessionID, `{"page":"`+big+`"}`)
	req := request(t, next(t, conn))
	if req.InvocationID != inv.ID || !strings.Contains(string(req.Input), big) {
		t.Fatalf("large request arrived as %d bytes", len(req.Input))
	}
	if _, err := f.result(c.SessionID, req.RunID, inv.ID, ok(`{"echo":"`+big+`"}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.inv.Status != switchboard.StatusSucceeded || len(got.inv.Result) < len(big) {
		t.Fatalf("large result: %s, %d bytes", got.inv.Status, len(got.inv.Result))
	}
}

func TestShutdownWakesWaiters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, time.Hour)
	c, conn := f.live(navTool())
	_, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
	next(t, conn)
	f.m.Shutdown()
	if got := <-done; got.inv.Error == nil || got.inv.Error.Code != switchboard.CodeUnavailable {
		t.Fatalf("shutdown: %+v", got.inv)
	}
	<-conn.Done()
	_, err := f.m.Attach(f.ctx, c.SessionID, "")
	wantCode(t, err, switchboard.CodeUnavailable)
}

// When the outcome cannot be recorded (the store is down), the caller gets
// OUTCOME_UNKNOWN (the broker's answer for every call whose end it could
// not record), and the request still leaves the tab's log (the next start
// fails the record as "outcome unknown").
func TestStoreFailureStillWithdrawsRequest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Heartbeat: time.Hour}, time.Second)
		c, conn := f.live(navTool())
		_, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
		next(t, conn)
		f.store.Close()
		got := <-done
		wantCode(t, got.err, switchboard.CodeOutcomeUnknown)
		if ev := next(t, conn); ev.Kind != KindCancel {
			t.Fatalf("the tab should be told to stop, got %s", ev.Kind)
		}
		if n := f.m.Open(c.SessionID); n != 0 {
			t.Fatalf("%d requests linger in the log", n)
		}
	})
}
