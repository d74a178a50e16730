package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/sqlite"
)

// fixture is a Manager over a real in-memory SQLite store. Tests that
// involve time run inside synctest bubbles, so timeouts and grace windows
// pass instantly and exactly.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	store *sqlite.Store
	bus   *bus.Local
	m     *Manager
}

func newFixture(t *testing.T, opts Options) *fixture {
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
	t.Cleanup(func() {
		m.Shutdown()
		st.Close()
	})
	return &fixture{t: t, ctx: ctx, store: st, bus: b, m: m}
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

// dispatch resolves tool and stores a dispatched record, as the broker does.
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

// await runs Await in the background.
func (f *fixture) await(ctx context.Context, inv switchboard.Invocation, tg broker.Target) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		got, err := f.m.Await(ctx, inv, tg)
		ch <- outcome{got, err}
	}()
	return ch
}

// call dispatches and awaits in the background.
func (f *fixture) call(tool, sessionID, input string) (switchboard.Invocation, <-chan outcome) {
	f.t.Helper()
	inv, tg := f.dispatch(tool, sessionID, "", input)
	return inv, f.await(f.ctx, inv, tg)
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
