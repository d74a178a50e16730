package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// env is a broker over a real SQLite file.
type env struct {
	store *sqlite.Store
	path  string // the SQLite file, for tests that seed rows with SQL
	reg   *registry.Registry
	b     *broker.Broker
}

func newEnv(t testing.TB, mod func(*broker.Options)) *env {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := broker.Options{Store: st, Registry: reg}
	if mod != nil {
		mod(&o)
	}
	b := broker.New(o)
	t.Cleanup(b.Close)
	return &env{store: st, path: path, reg: reg, b: b}
}

// register declares tools from the host source.
func (e *env) register(t testing.TB, tools ...switchboard.Tool) {
	t.Helper()
	if _, err := e.reg.Register(context.Background(), switchboard.SourceHost, tools); err != nil {
		t.Fatal(err)
	}
}

// goTool declares a Go-function tool and its handler.
func (e *env) goTool(t testing.TB, tool switchboard.Tool, fn broker.Func) {
	t.Helper()
	tool.Binding = &switchboard.Binding{Go: true}
	e.register(t, tool)
	e.b.Handle(tool.Name, fn)
}

// ledger returns every tool.call entry.
func (e *env) ledger(t testing.TB) []switchboard.ActivityEntry {
	t.Helper()
	es, err := e.store.ActivityList(context.Background(), switchboard.ActivityFilter{Verb: activity.VerbToolCall, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

var echoTool = switchboard.Tool{
	Name:        "test.echo",
	Description: "Echo the message back.",
	Class:       switchboard.ClassRead,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"},"n":{"type":"integer","minimum":0}},"required":["msg"],"additionalProperties":false}`),
}

func echo(_ context.Context, in json.RawMessage) (any, error) {
	var v struct {
		Msg string `json:"msg"`
	}
	_ = json.Unmarshal(in, &v)
	return map[string]string{"echo": v.Msg}, nil
}

func wantCode(t *testing.T, err error, code switchboard.Code) *switchboard.Error {
	t.Helper()
	if got := switchboard.CodeOf(err); got != code {
		t.Fatalf("code = %s (%v), want %s", got, err, code)
	}
	var e *switchboard.Error
	errors.As(err, &e)
	return e
}

func TestCallGoFunctionRecordsEverything(t *testing.T) {
	e := newEnv(t, nil)
	e.goTool(t, echoTool, echo)
	ctx := context.Background()

	inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"hi"}`), RunID: "run-1", Caller: &operator})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Status != switchboard.StatusSucceeded || string(inv.Result) != `{"echo":"hi"}` {
		t.Fatalf("got %s %s", inv.Status, inv.Result)
	}
	stored, err := e.b.Get(context.Background(), inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case stored.Status != switchboard.StatusSucceeded,
		stored.Caller != "user:admin",
		stored.RunID != "run-1",
		stored.Tool != "test.echo" || stored.ToolVersion == 0,
		stored.InputBytes != len(`{"msg":"hi"}`),
		stored.ResultBytes != len(`{"echo":"hi"}`),
		stored.CreatedAt.IsZero() || stored.FinishedAt.Before(stored.CreatedAt),
		string(stored.Result) != `{"echo":"hi"}`:
		t.Fatalf("stored record incomplete: %+v", stored)
	}
	if len(inv.ID) != 32 {
		t.Fatalf("invocation id %q is not 128 random bits in hex", inv.ID)
	}
	es := e.ledger(t)
	if len(es) != 1 || es[0].Actor != "user:admin" || es[0].Target != "test.echo" {
		t.Fatalf("ledger = %+v", es)
	}
	var d map[string]any
	if err := json.Unmarshal(es[0].Details, &d); err != nil {
		t.Fatal(err)
	}
	if d["invocationId"] != inv.ID || d["status"] != "succeeded" {
		t.Fatalf("ledger details = %s", es[0].Details)
	}
	if strings.Contains(string(es[0].Details), "hi") {
		t.Fatalf("ledger details copy input or result values: %s", es[0].Details)
	}
}

func TestCallRefusalsRecordNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.goTool(t, echoTool, echo)
	ctx := context.Background()

	_, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.nope", Caller: &operator})
	wantCode(t, err, switchboard.CodeToolNotFound)

	inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x","n":-1}`), Caller: &operator})
	se := wantCode(t, err, switchboard.CodeSchemaViolation)
	if inv.ID != "" {
		t.Fatalf("a refused call has a record: %+v", inv)
	}
	if d, _ := se.Details.(map[string]any); d["pointer"] != "/n" || !strings.Contains(se.Message, "/n") {
		t.Fatalf("violation does not name /n: %s %v", se.Message, se.Details)
	}
	_, err = e.b.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeSchemaViolation)
	_, err = e.b.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`[1]`), Caller: &operator})
	wantCode(t, err, switchboard.CodeSchemaViolation)
	_, err = e.b.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":`), Caller: &operator})
	wantCode(t, err, switchboard.CodeInvalidInput)
	if n := len(e.ledger(t)); n != 0 {
		t.Fatalf("refused calls wrote %d ledger entries", n)
	}
}

func TestUnavailableBindings(t *testing.T) {
	e := newEnv(t, nil)
	unbound := echoTool
	unbound.Name = "test.unbound"
	goOnly := echoTool
	goOnly.Name = "test.elsewhere"
	goOnly.Binding = &switchboard.Binding{Go: true}
	e.register(t, unbound, goOnly)
	for _, name := range []string{"test.unbound", "test.elsewhere"} {
		inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: name, Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator})
		wantCode(t, err, switchboard.CodeToolUnavailable)
		if inv.Status != switchboard.StatusFailed || inv.Error == nil {
			t.Fatalf("%s: record %+v", name, inv)
		}
	}
	if n := len(e.ledger(t)); n != 2 {
		t.Fatalf("ledger has %d entries, want 2", n)
	}
}

func TestGoFunctionErrors(t *testing.T) {
	e := newEnv(t, nil)
	tool := func(name string) switchboard.Tool { t := echoTool; t.Name = name; return t }
	e.goTool(t, tool("test.plain"), func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("disk full") })
	e.goTool(t, tool("test.coded"), func(context.Context, json.RawMessage) (any, error) {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no such task")
	})
	e.goTool(t, tool("test.panics"), func(context.Context, json.RawMessage) (any, error) { panic("boom") })
	e.goTool(t, tool("test.badjson"), func(context.Context, json.RawMessage) (any, error) { return json.RawMessage(`{`), nil })
	for name, code := range map[string]switchboard.Code{
		"test.plain":   switchboard.CodeUpstreamError,
		"test.coded":   switchboard.CodeNotFound,
		"test.panics":  switchboard.CodeInternal,
		"test.badjson": switchboard.CodeUpstreamError,
	} {
		inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: name, Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator})
		wantCode(t, err, code)
		stored, gerr := e.b.Get(context.Background(), inv.ID)
		if gerr != nil || stored.Status != switchboard.StatusFailed || stored.Error.Code != code {
			t.Fatalf("%s: stored %+v %v", name, stored, gerr)
		}
	}
}

func TestOutputSchemaViolationFailsTheCall(t *testing.T) {
	e := newEnv(t, nil)
	tool := echoTool
	tool.Name = "test.typed"
	tool.OutputSchema = json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)
	e.goTool(t, tool, func(context.Context, json.RawMessage) (any, error) { return map[string]any{"count": "three"}, nil })
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.typed", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator})
	se := wantCode(t, err, switchboard.CodeSchemaViolation)
	if !strings.Contains(se.Message, "outputSchema") || !strings.Contains(se.Message, "/count") {
		t.Fatalf("message = %s", se.Message)
	}
	if inv.Status != switchboard.StatusFailed || len(inv.Result) != 0 {
		t.Fatalf("a violating result was kept: %+v", inv)
	}
}

func TestTypedHandler(t *testing.T) {
	e := newEnv(t, nil)
	type in struct {
		Msg string `json:"msg"`
		N   int    `json:"n"`
	}
	type out struct {
		Repeated string `json:"repeated"`
	}
	e.goTool(t, echoTool, broker.Typed(func(_ context.Context, v in) (out, error) {
		return out{Repeated: strings.Repeat(v.Msg, v.N)}, nil
	}))
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"ab","n":3}`), Caller: &operator})
	if err != nil || string(inv.Result) != `{"repeated":"ababab"}` {
		t.Fatalf("%s %v", inv.Result, err)
	}
}

func TestConcurrentCallsAllRecorded(t *testing.T) {
	e := newEnv(t, nil)
	e.goTool(t, echoTool, echo)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 40 {
		wg.Go(func() {
			_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.ledger(t)); n != 40 {
		t.Fatalf("ledger has %d entries, want 40", n)
	}
}

// operator is the caller of the tests' calls that are about something
// else than who calls.
var operator = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}

// Who calls is the request's to say. A request that names no caller is
// refused before anything runs or is recorded — even when ctx carries a
// principal, which is never read in its place — and a request that names
// one hands it to a Go function in its context.
func TestCallWithoutCallerIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	var seen switchboard.Principal
	e.goTool(t, echoTool, func(ctx context.Context, in json.RawMessage) (any, error) {
		runs.Add(1)
		seen, _ = switchboard.PrincipalFrom(ctx)
		return echo(ctx, in)
	})
	ambient := switchboard.WithPrincipal(context.Background(), operator)
	req := broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"hi"}`)}
	for name, call := range map[string]func(context.Context, broker.CallRequest) (switchboard.Invocation, error){
		"Call": e.b.Call, "Submit": e.b.Submit,
	} {
		inv, err := call(ambient, req)
		se := wantCode(t, err, switchboard.CodeInternal)
		if inv.ID != "" || !strings.Contains(se.Message, "test.echo") || !strings.Contains(se.Message, "CallRequest.Caller") {
			t.Errorf("%s without a caller: %+v %v", name, inv, err)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times without a caller", n)
	}
	if n := len(e.ledger(t)); n != 0 {
		t.Fatalf("refused calls wrote %d ledger entries", n)
	}
	bot := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}
	req.Caller = &bot
	if inv, err := e.b.Call(ambient, req); err != nil || inv.Caller != bot.String() || seen.String() != bot.String() {
		t.Fatalf("with a caller: %+v %v; the tool saw %v", inv, err, seen)
	}
}
