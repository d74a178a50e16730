package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// fixture is a Manager over a real in-memory SQLite store, with the broker
// that owns its calls (as the daemon wires them). Tests that involve time
// run inside synctest bubbles, so timeouts and grace windows pass
// instantly and exactly.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	store *sqlite.Store
	bus   *bus.Local
	m     *Manager
	b     *broker.Broker
}

// newFixture builds a fixture; timeout, when given, is the broker's
// default call timeout.
func newFixture(t *testing.T, opts Options, timeout ...time.Duration) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewLocal()
	opts.Store, opts.Bus = st, b
	if opts.Heartbeat == 0 {
		opts.Heartbeat = time.Second
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	br := newBroker(t, st, b, m, timeout...)
	t.Cleanup(func() {
		m.Shutdown()
		st.Close()
	})
	return &fixture{t: t, ctx: ctx, store: st, bus: b, m: m, b: br}
}

// newBroker is the broker of one replica: m its tabs, timeout (if given)
// its default call timeout.
func newBroker(t *testing.T, st switchboard.Store, b bus.Bus, m *Manager, timeout ...time.Duration) *broker.Broker {
	t.Helper()
	reg, err := registry.New(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A tab may have many calls in flight (the tests' answers come after
	// the calls are made): more than the broker's default per-tool limit.
	o := broker.Options{Store: st, Registry: reg, Browser: m, Bus: b, MaxConcurrency: 64}
	if len(timeout) > 0 {
		o.DefaultTimeout = timeout[0]
	}
	br := broker.New(o)
	t.Cleanup(br.Close)
	return br
}

func (f *fixture) open() Created {
	f.t.Helper()
	c, err := f.m.Create(f.ctx, "user:alice")
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) attach(id, last string) *Conn {
	f.t.Helper()
	c, err := f.m.Attach(f.ctx, id, last)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) advertise(id string, tools ...switchboard.Tool) {
	f.t.Helper()
	if _, err := f.m.Advertise(f.ctx, id, tools); err != nil {
		f.t.Fatal(err)
	}
}

// live opens a session, attaches its stream and advertises tools.
func (f *fixture) live(tools ...switchboard.Tool) (Created, *Conn) {
	f.t.Helper()
	c := f.open()
	conn := f.attach(c.SessionID, "")
	f.advertise(c.SessionID, tools...)
	return c, conn
}

// dispatch resolves tool and stores a dispatched record that no broker
// waits for: a call another replica made.
func (f *fixture) dispatch(tool, sessionID, runID, input string) (switchboard.Invocation, broker.Target) {
	f.t.Helper()
	tg, err := f.m.Resolve(f.ctx, tool, sessionID, runID, nil)
	if err != nil {
		f.t.Fatalf("resolve %s: %v", tool, err)
	}
	if runID == "" {
		runID = broker.NewID()
	}
	now := time.Now()
	inv := switchboard.Invocation{
		ID: broker.NewID(), RunID: runID, Tool: tool, Surface: switchboard.SurfaceBrowser,
		SessionID: tg.SessionID, Status: switchboard.StatusDispatched, Input: json.RawMessage(input),
		InputBytes: len(input), CreatedAt: now, UpdatedAt: now,
	}
	if err := f.store.InvocationCreate(f.ctx, inv); err != nil {
		f.t.Fatal(err)
	}
	return inv, tg
}

type outcome struct {
	inv switchboard.Invocation
	err error
}

// call starts a call of tool through the broker in the background and
// returns its record once dispatched, and its outcome when it ends. The
// outcome's err is the call's error only when it ended without a
// terminal record.
func (f *fixture) call(tool, sessionID, input string) (switchboard.Invocation, <-chan outcome) {
	f.t.Helper()
	return callOn(f.t, f.ctx, f.b, broker.CallRequest{Tool: tool, SessionID: sessionID, Input: json.RawMessage(input), Caller: &operator})
}

// callCtx is call bounded by ctx.
func (f *fixture) callCtx(ctx context.Context, tool, sessionID, input string) (switchboard.Invocation, <-chan outcome) {
	f.t.Helper()
	return callOn(f.t, ctx, f.b, broker.CallRequest{Tool: tool, SessionID: sessionID, Input: json.RawMessage(input), Caller: &operator})
}

func callOn(t *testing.T, ctx context.Context, b *broker.Broker, req broker.CallRequest) (switchboard.Invocation, <-chan outcome) {
	t.Helper()
	recorded := make(chan switchboard.Invocation, 1)
	req.OnRecord = func(inv switchboard.Invocation) { recorded <- inv }
	ch := make(chan outcome, 1)
	go func() {
		got, err := b.Call(ctx, req)
		if got.Error != nil && switchboard.CodeOf(err) == got.Error.Code {
			err = nil // the recorded outcome, not a failure to record it
		}
		ch <- outcome{got, err}
	}()
	select {
	case inv := <-recorded:
		return inv, ch
	case got := <-ch:
		t.Fatalf("call of %s refused: %v", req.Tool, got.err)
		return switchboard.Invocation{}, nil
	}
}

// result posts a tab's answer as the return path does: the broker ends
// the call, and the answered request leaves the tab's log.
func (f *fixture) result(sessionID, runID, invID string, res switchboard.BrowserActionResult) (switchboard.Invocation, error) {
	return answer(f.ctx, f.b, f.m, broker.Answer{SessionID: sessionID, RunID: runID, InvocationID: invID, Result: res})
}

func answer(ctx context.Context, b *broker.Broker, m *Manager, a broker.Answer) (switchboard.Invocation, error) {
	stored, err := b.Complete(ctx, a)
	if stored.ID != "" {
		m.Ack(ctx, a.SessionID, stored.ID)
	}
	return stored, err
}

// tooLarge posts an answer larger than the limit.
func (f *fixture) tooLarge(sessionID, runID, invID string) error {
	_, err := answer(f.ctx, f.b, f.m, broker.Answer{SessionID: sessionID, RunID: runID, InvocationID: invID, TooLarge: DefaultMaxResultBytes})
	return err
}

// next returns the next event on c, failing if the stream ends first.
func next(t *testing.T, c *Conn) Event {
	t.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for {
		if ev, ok := c.Next(); ok {
			return ev
		}
		select {
		case <-c.Ready():
		case <-c.Done():
			t.Fatalf("stream ended: %v", c.Err())
		case <-timeout.C:
			t.Fatal("no event within a minute")
		}
	}
}

func request(t *testing.T, ev Event) switchboard.BrowserActionRequest {
	t.Helper()
	if ev.Kind != KindRequest {
		t.Fatalf("event %s, want %s", ev.Kind, KindRequest)
	}
	var req switchboard.BrowserActionRequest
	if err := json.Unmarshal(ev.Data, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

func ok(result string) switchboard.BrowserActionResult {
	return switchboard.BrowserActionResult{ProtocolVersion: switchboard.ProtocolVersion, OK: true, Result: json.RawMessage(result)}
}

func fail(code switchboard.Code, msg string) switchboard.BrowserActionResult {
	return switchboard.BrowserActionResult{OK: false, Error: &switchboard.Error{Code: code, Message: msg}}
}

func wantCode(t *testing.T, err error, code switchboard.Code) {
	t.Helper()
	if got := switchboard.CodeOf(err); got != code {
		t.Fatalf("error %v: code %s, want %s", err, got, code)
	}
}

func navTool() switchboard.Tool {
	return switchboard.Tool{
		Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`),
	}
}

func scrollTool() switchboard.Tool {
	return switchboard.Tool{
		Name: "ui.scroll_to", Description: "Scroll an element into view.", Class: switchboard.ClassUI, ViewStateOnly: true,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"top":{"type":"number"}},"required":["top"]}`),
	}
}

func contextWithCancel(f *fixture) (context.Context, context.CancelFunc) {
	return context.WithCancel(f.ctx)
}

// operator is the caller of the tests' calls: the workspace's administrator.
var operator = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
