package broker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/schema"
	"github.com/switchboardhq/switchboard/sqlite"
)

// tab stands in for the session package behind the Browser seam: it
// advertises one tool and, when a call is delivered, does what deliver
// says: answer through a broker's Complete (as the return path does), go
// away, or refuse the delivery.
type tab struct {
	tool    switchboard.Tool
	deliver func(inv switchboard.Invocation, gone chan<- error) error

	mu        sync.Mutex
	withdrawn map[string]switchboard.Code
}

func (b *tab) Resolve(_ context.Context, tool, sessionID, _ string, _ func(switchboard.Tool) bool) (broker.Target, error) {
	if tool != b.tool.Name {
		return broker.Target{}, switchboard.Errorf(switchboard.CodeToolUnavailable, "no live session advertises %s", tool)
	}
	in, err := schema.Compile(b.tool.InputSchema)
	return broker.Target{SessionID: "tab-1", Tool: b.tool, Input: in}, err
}

func (b *tab) Deliver(_ context.Context, inv switchboard.Invocation, _ time.Duration) (<-chan error, func(), error) {
	gone := make(chan error, 1)
	if err := b.deliver(inv, gone); err != nil {
		return nil, nil, err
	}
	return gone, func() {}, nil
}

func (b *tab) Withdraw(_ context.Context, inv switchboard.Invocation, why *switchboard.Error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.withdrawn == nil {
		b.withdrawn = map[string]switchboard.Code{}
	}
	b.withdrawn[inv.ID] = why.Code
}

func (b *tab) Output(context.Context, string, string) *schema.Schema { return nil }

func (b *tab) withdrawnAs(id string) switchboard.Code {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.withdrawn[id]
}

// answer is the tab's answer to inv.
func answer(inv switchboard.Invocation, result string) broker.Answer {
	return broker.Answer{SessionID: inv.SessionID, RunID: inv.RunID, InvocationID: inv.ID,
		Result: switchboard.BrowserActionResult{OK: true, Result: json.RawMessage(result)}}
}

var scrollTool = switchboard.Tool{
	Name: "view.scroll", Description: "Scroll the page.", Surface: switchboard.SurfaceBrowser,
	Class: switchboard.ClassUI, ViewStateOnly: true,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"enum":["top","bottom"]}},"required":["to"]}`),
}

func TestBrowserToolThroughTheSeam(t *testing.T) {
	tb := &tab{tool: scrollTool}
	var mu sync.Mutex
	var observed []switchboard.ActivityEntry
	e := newEnv(t, func(o *broker.Options) {
		o.Browser = tb
		o.OnActivity = func(en switchboard.ActivityEntry) {
			mu.Lock()
			observed = append(observed, en)
			mu.Unlock()
		}
	})
	tb.deliver = func(inv switchboard.Invocation, _ chan<- error) error {
		if inv.Status != switchboard.StatusDispatched || inv.SessionID != "tab-1" || inv.RunID == "" {
			t.Errorf("dispatched record = %+v", inv)
		}
		go func() {
			if _, err := e.b.Complete(context.Background(), answer(inv, `{"scrolled":true}`)); err != nil {
				t.Error(err)
			}
		}()
		return nil
	}
	_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"left"}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeSchemaViolation) // the live schema applies

	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`), Caller: &operator})
	if err != nil || string(inv.Result) != `{"scrolled":true}` {
		t.Fatalf("%+v %v", inv, err)
	}
	mu.Lock()
	n := len(observed)
	mu.Unlock()
	if es := e.ledger(t); len(es) != 1 || n != 1 || string(es[0].Provenance) != `{"derivedFrom":"site-html"}` {
		t.Fatalf("%d ledger entries (observed %d); want 1, the tab's, marked as site data", len(es), n)
	}
	if code := tb.withdrawnAs(inv.ID); code != "" {
		t.Fatalf("an answered call was withdrawn (%s)", code)
	}

	// A tab that goes away: the broker records the error and withdraws
	// the request.
	tb.deliver = func(_ switchboard.Invocation, gone chan<- error) error {
		gone <- switchboard.Errorf(switchboard.CodeSessionGone, "the tab closed")
		return nil
	}
	inv, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeSessionGone)
	terminal(t, e, inv.ID, switchboard.StatusFailed, switchboard.CodeSessionGone)
	if code := tb.withdrawnAs(inv.ID); code != switchboard.CodeSessionGone {
		t.Fatalf("the request of a call ended SESSION_GONE was withdrawn as %q", code)
	}
	if es := e.ledger(t); len(es) != 2 {
		t.Fatalf("%d ledger entries, want 2", len(es))
	}

	// A delivery that fails: recorded as such, nothing runs.
	tb.deliver = func(switchboard.Invocation, chan<- error) error {
		return switchboard.Errorf(switchboard.CodeSessionGone, "session tab-1 has no connected tab")
	}
	inv, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeSessionGone)
	terminal(t, e, inv.ID, switchboard.StatusFailed, switchboard.CodeSessionGone)

	_, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "view.zoom", Caller: &operator})
	wantCode(t, err, switchboard.CodeToolNotFound)
}

// The broker's own deadline ends a browser call the tab never answers:
// the tool's timeout, recorded TIMEOUT with its entry; the tab is told,
// and its late answer is refused with the final state.
func TestBrowserCallTimesOutInTheBroker(t *testing.T) {
	short := scrollTool
	short.TimeoutMs = 20
	tb := &tab{tool: short, deliver: func(switchboard.Invocation, chan<- error) error { return nil }}
	e := newEnv(t, func(o *broker.Options) { o.Browser = tb })
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeTimeout)
	terminal(t, e, inv.ID, switchboard.StatusTimedOut, switchboard.CodeTimeout)
	if code := tb.withdrawnAs(inv.ID); code != switchboard.CodeTimeout {
		t.Fatalf("withdrawn as %q, want TIMEOUT", code)
	}
	_, err = e.b.Complete(context.Background(), answer(inv, `1`))
	wantCode(t, err, switchboard.CodeConflict)
	if es := e.ledger(t); len(es) != 1 {
		t.Fatalf("%d ledger entries, want the timeout's one", len(es))
	}
}

// An answer that reaches another replica ends the call there, once: the
// replica that dispatched it (the owner) hears of it and returns the record; a
// second answer on either replica writes nothing.
func TestBrowserAnswerOnAnotherReplica(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	shared := bus.NewLocal()
	var brokers [2]*broker.Broker
	delivered := make(chan switchboard.Invocation, 1)
	tb := &tab{tool: scrollTool, deliver: func(inv switchboard.Invocation, _ chan<- error) error {
		delivered <- inv
		return nil
	}}
	for i := range brokers {
		reg, err := registry.New(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		brokers[i] = broker.New(broker.Options{Store: st, Registry: reg, Browser: tb, Bus: shared, Replica: string(rune('a' + i))})
		t.Cleanup(brokers[i].Close)
	}
	type outcome struct {
		inv switchboard.Invocation
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		inv, err := brokers[0].Call(ctx, broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`), Caller: &operator})
		done <- outcome{inv, err}
	}()
	inv := <-delivered
	stored, err := brokers[1].Complete(ctx, answer(inv, `{"scrolled":true}`))
	if err != nil || stored.Status != switchboard.StatusSucceeded {
		t.Fatalf("the answer on b: %+v %v", stored, err)
	}
	got := <-done
	if got.err != nil || got.inv.Status != switchboard.StatusSucceeded || string(got.inv.Result) != `{"scrolled":true}` {
		t.Fatalf("the call on a: %+v %v", got.inv, got.err)
	}
	for _, b := range brokers {
		if again, err := b.Complete(ctx, answer(inv, `{"scrolled": true}`)); err != nil || again.Status != switchboard.StatusSucceeded {
			t.Fatalf("the same answer again: %+v %v", again, err)
		}
		_, err := b.Complete(ctx, answer(inv, `{"scrolled":false}`))
		wantCode(t, err, switchboard.CodeIdempotencyConflict)
	}
	es, err := st.ActivityList(ctx, switchboard.ActivityFilter{Verb: activity.VerbToolCall, Limit: 100})
	if err != nil || len(es) != 1 {
		t.Fatalf("ledger %+v %v; want the call's one entry", es, err)
	}
	if code := tb.withdrawnAs(inv.ID); code != "" {
		t.Fatalf("an answered call was withdrawn (%s)", code)
	}
}

func TestBrowserToolWithoutBrowser(t *testing.T) {
	e := newEnv(t, nil)
	e.register(t, scrollTool)
	_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeToolUnavailable)
}
