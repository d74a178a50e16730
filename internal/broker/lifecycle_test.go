package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
)

var noInput = json.RawMessage(`{}`)

// blocker is a Go handler that reports when it starts and returns when
// released or when ctx ends.
type blocker struct {
	started chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 64), release: make(chan struct{})}
}

func (b *blocker) fn(ctx context.Context, _ json.RawMessage) (any, error) {
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]bool{"ok": true}, nil
}

func slowTool(name string, timeoutMs, maxConc int, cost switchboard.CostClass) switchboard.Tool {
	return switchboard.Tool{Name: name, Description: "A slow tool.", Class: switchboard.ClassRead,
		TimeoutMs: timeoutMs, MaxConcurrency: maxConc, CostClass: cost}
}

// terminal checks the stored record ended in status with code.
func terminal(t *testing.T, e *env, id string, status switchboard.Status, code switchboard.Code) {
	t.Helper()
	inv, err := e.b.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Status != status || inv.Error == nil || inv.Error.Code != code || inv.FinishedAt.IsZero() {
		t.Fatalf("stored record: status %s error %+v, want %s %s", inv.Status, inv.Error, status, code)
	}
}

func TestCancellationIsRecorded(t *testing.T) {
	e := newEnv(t, nil)
	bl := newBlocker()
	e.goTool(t, slowTool("test.slow", 0, 0, ""), bl.fn)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-bl.started; cancel() }()
	inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.slow", Input: noInput, Caller: &operator})
	wantCode(t, err, switchboard.CodeCancelled)
	terminal(t, e, inv.ID, switchboard.StatusCancelled, switchboard.CodeCancelled)
	if es := e.ledger(t); len(es) != 1 || !strings.Contains(string(es[0].Details), `"cancelled"`) {
		t.Fatalf("ledger: %+v", es)
	}
}

func TestGoHandlerTimeout(t *testing.T) {
	e := newEnv(t, nil)
	e.goTool(t, slowTool("test.stuck", 50, 1, ""), func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		return nil, errors.New("interrupted") // whatever the handler says, the deadline ended it
	})
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.stuck", Input: noInput, Caller: &operator})
	wantCode(t, err, switchboard.CodeTimeout)
	terminal(t, e, inv.ID, switchboard.StatusTimedOut, switchboard.CodeTimeout)
	if running, _ := e.b.Load("test.stuck"); running != 0 {
		t.Fatalf("running = %d after the call ended, want 0", running)
	}
}

func TestBackendHangTimesOutAndNothingStaysPending(t *testing.T) {
	e := newEnv(t, nil)
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	tool := slowTool("test.hang", 0, 0, "")
	tool.Binding = &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/slow", TimeoutMs: 50}}
	e.register(t, tool)
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.hang", Input: noInput, Caller: &operator})
	se := wantCode(t, err, switchboard.CodeTimeout)
	if !strings.Contains(se.Message, "50ms") {
		t.Fatalf("message does not name the timeout: %s", se.Message)
	}
	terminal(t, e, inv.ID, switchboard.StatusTimedOut, switchboard.CodeTimeout)
	n, err := e.store.InvocationFailInFlight(context.Background(), time.Now(), func(switchboard.Invocation) (*switchboard.Error, *switchboard.ActivityEntry) {
		return switchboard.Errorf(switchboard.CodeInternal, "probe"), nil
	})
	if err != nil || n != 0 {
		t.Fatalf("%d invocations were left in flight (%v)", n, err)
	}
}

// Issue 14 item 10: a backend's error body reaches the caller (and the
// model) with its secrets masked, as the ledger and logs already were: by
// key in a JSON body, by value in a text one; the rest is still quoted.
func TestUpstreamErrorExcerptIsRedacted(t *testing.T) {
	e := newEnv(t, nil)
	bodies := map[string]struct{ ct, body string }{
		"/json": {"application/json", `{"error":"db down","password":"hunter2"}`},
		"/text": {"text/plain", "db down: password=hunter2 sk_live_4eC39HqLyjWDarjtT1zdp7dc sk-live-51HqLyjWDarjtT1zdp7dcXYZ"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[r.URL.Path]
		w.Header().Set("Content-Type", b.ct)
		w.WriteHeader(500)
		io.WriteString(w, b.body)
	}))
	t.Cleanup(srv.Close)
	ctx, a1 := context.Background(), switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "a1"}
	for path := range bodies {
		name := "test.broken" + strings.ReplaceAll(path, "/", "_")
		tool := slowTool(name, 0, 0, "")
		tool.Binding = &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: srv.URL + path}}
		e.register(t, tool)
		inv, err := e.b.Call(ctx, broker.CallRequest{Tool: name, Input: noInput, Caller: &a1})
		se := wantCode(t, err, switchboard.CodeUpstreamError)
		stored, _ := e.b.Get(context.Background(), inv.ID)
		for _, what := range []any{se, stored.Error} {
			out, _ := json.Marshal(what)
			for _, secret := range []string{"hunter2", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk-live-51HqLyjWDarjtT1zdp7dcXYZ"} {
				if strings.Contains(string(out), secret) {
					t.Errorf("%s: %q reached the caller: %s", path, secret, out)
				}
			}
			if !strings.Contains(string(out), "db down") {
				t.Errorf("%s: the backend's message was lost: %s", path, out)
			}
		}
	}
}

func TestUpstreamFailureIsRecordedWithStatus(t *testing.T) {
	e := newEnv(t, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the caller's credentials reached the backend")
		}
		w.WriteHeader(500)
		io.WriteString(w, "database unavailable")
	}))
	t.Cleanup(srv.Close)
	tool := slowTool("test.broken", 0, 0, "")
	tool.Binding = &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: srv.URL + "/x"}}
	e.register(t, tool)
	ctx, a1 := context.Background(), switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "a1"}
	inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.broken", Input: noInput, Caller: &a1})
	se := wantCode(t, err, switchboard.CodeUpstreamError)
	d := se.Details.(map[string]any)
	if d["status"] != float64(500) || d["excerpt"] != "database unavailable" {
		t.Fatalf("details = %v", d)
	}
	stored, _ := e.b.Get(context.Background(), inv.ID)
	if stored.Status != switchboard.StatusFailed || stored.Caller != "agent:a1" || stored.Error.Code != switchboard.CodeUpstreamError {
		t.Fatalf("stored = %+v", stored)
	}
	if es := e.ledger(t); len(es) != 1 || es[0].Actor != "agent:a1" || !strings.Contains(string(es[0].Details), "UPSTREAM_ERROR") {
		t.Fatalf("ledger = %+v", es)
	}
}

func TestConcurrencyLimitQueuesInOrder(t *testing.T) {
	e := newEnv(t, nil)
	queued := make(chan string, 8)
	broker.SetQueuedHook(e.b, func(tool string) { queued <- tool })
	bl := newBlocker()
	// costClass expensive with no maxConcurrency: the expensive default (2).
	e.goTool(t, slowTool("test.render", 0, 0, switchboard.CostExpensive), bl.fn)

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 2 {
		wg.Go(func() {
			_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.render", Input: noInput, Caller: &operator})
			errs <- err
		})
	}
	<-bl.started
	<-bl.started
	wg.Go(func() {
		_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.render", Input: noInput, Caller: &operator})
		errs <- err
	})
	<-queued // the third call waits instead of failing
	if running, waiting := e.b.Load("test.render"); running != 2 || waiting != 1 {
		t.Fatalf("load = %d running, %d waiting; want 2, 1", running, waiting)
	}
	close(bl.release) // all three finish
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.ledger(t)); n != 3 {
		t.Fatalf("%d ledger entries, want 3", n)
	}
}

func TestConcurrencyLimitRefusals(t *testing.T) {
	e := newEnv(t, func(o *broker.Options) { o.MaxQueue = 1 })
	queued := make(chan string, 8)
	broker.SetQueuedHook(e.b, func(tool string) { queued <- tool })
	bl := newBlocker()
	e.goTool(t, slowTool("test.one", 0, 1, ""), bl.fn)

	first := make(chan error, 1)
	go func() {
		_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.one", Input: noInput, Caller: &operator})
		first <- err
	}()
	<-bl.started
	second := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.one", Input: noInput, Caller: &operator})
		if inv.ID != "" {
			t.Errorf("a call that never ran has a record")
		}
		second <- err
	}()
	<-queued
	// The queue (1 × limit 1) is full: the next call is refused at once.
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.one", Input: noInput, Caller: &operator})
	wantCode(t, err, switchboard.CodeRateLimited)
	if inv.ID != "" {
		t.Fatalf("a refused call has a record")
	}
	// The waiting call's deadline passes while the first still runs.
	wantCode(t, <-second, switchboard.CodeRateLimited)
	close(bl.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestBackendAnswersThatAreNotResults(t *testing.T) {
	e := newEnv(t, func(o *broker.Options) { o.MaxResultBytes = 1024 })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `"`+strings.Repeat("x", 4096)+`"`)
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<!doctype html><title>My App</title>")
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "pong")
		}
	}))
	t.Cleanup(srv.Close)
	for path, code := range map[string]switchboard.Code{
		"/big":  switchboard.CodePayloadTooLarge,
		"/html": switchboard.CodeUpstreamError,
		"/text": "",
	} {
		tool := slowTool("test.get"+strings.TrimPrefix(path, "/"), 0, 0, "")
		tool.Binding = &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: srv.URL + path}}
		e.register(t, tool)
		inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: tool.Name, Input: noInput, Caller: &operator})
		if code == "" {
			if err != nil || string(inv.Result) != `{"contentType":"text/plain","text":"pong"}` {
				t.Fatalf("%s: %s %v", path, inv.Result, err)
			}
			continue
		}
		wantCode(t, err, code)
		terminal(t, e, inv.ID, switchboard.StatusFailed, code)
	}
}

// Issue 14 item 3: every HTTP-bound call sends the backend an
// Idempotency-Key that is its invocation id — one per call, never shared.
func TestHTTPBindingSendsIdempotencyKey(t *testing.T) {
	e := newEnv(t, nil)
	keys := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	tool := slowTool("test.post", 0, 0, "")
	tool.Binding = &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: srv.URL + "/p"}}
	e.register(t, tool)
	var ids []string
	for range 2 {
		inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.post", Input: noInput, Caller: &operator})
		if err != nil {
			t.Fatal(err)
		}
		if got := <-keys; got != inv.ID {
			t.Fatalf("the backend got Idempotency-Key %q, want the invocation id %s", got, inv.ID)
		}
		ids = append(ids, inv.ID)
	}
	if ids[0] == ids[1] {
		t.Fatal("two calls shared a key")
	}
}
