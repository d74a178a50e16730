package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// TestTraceparentReachesTheBackend: a call with a W3C traceparent
// continues the caller's trace — its execute_tool span is the caller's
// span's child — and the HTTP binding's backend receives a traceparent of
// the same trace whose parent is that execute_tool span. With tracing off
// the caller's context still travels to the backend unchanged.
func TestTraceparentReachesTheBackend(t *testing.T) {
	for _, on := range []bool{true, false} {
		rec := tracetest.NewSpanRecorder()
		var tp trace.TracerProvider = noop.NewTracerProvider()
		if on {
			tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		}
		got := make(chan string, 1)
		backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- r.Header.Get("Traceparent")
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"id":"t1"}`))
		}))
		t.Cleanup(backend.Close)
		f := tracedFixture(t, tp, backend.URL)
		status, body := f.do(t, "POST", "/api/v1/tools/tasks.create/call", `{"input":{"title":"Ship"}}`,
			map[string]string{"Traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
		if status != http.StatusOK || body["status"] != "succeeded" {
			t.Fatalf("tracing %v: %d %v", on, status, body)
		}
		parts := strings.Split(<-got, "-")
		if len(parts) != 4 || parts[1] != callerTrace {
			t.Fatalf("tracing %v: the backend got traceparent %q; want trace %s", on, strings.Join(parts, "-"), callerTrace)
		}
		if !on {
			if parts[2] != callerSpan {
				t.Errorf("tracing off: the backend's parent span is %s; want the caller's %s", parts[2], callerSpan)
			}
			continue
		}
		spans := rec.Ended()
		if len(spans) != 1 || spans[0].Name() != "execute_tool tasks.create" {
			t.Fatalf("spans %v", spans)
		}
		s := spans[0]
		if s.SpanContext().TraceID().String() != callerTrace || s.Parent().SpanID().String() != callerSpan || !s.Parent().IsRemote() {
			t.Errorf("execute_tool span %s/%s, parent %s; want the caller's trace and span", s.SpanContext().TraceID(), s.SpanContext().SpanID(), s.Parent().SpanID())
		}
		if parts[2] != s.SpanContext().SpanID().String() {
			t.Errorf("the backend's parent span is %s; want the execute_tool span %s", parts[2], s.SpanContext().SpanID())
		}
	}
}

// tracedFixture serves the API with a broker recording to tp and one
// HTTP-bound tool whose backend is at backend.
func tracedFixture(t *testing.T, tp trace.TracerProvider, backend string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{Store: st, Registry: reg, TracerProvider: tp})
	t.Cleanup(b.Close)
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`),
		Binding:     &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend + "/tasks"}},
	}}); err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: token, Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, store: st}
}
