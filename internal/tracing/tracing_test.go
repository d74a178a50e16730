package tracing_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/tracing"
)

func envOf(m map[string]string) *tracing.Options {
	return &tracing.Options{Getenv: func(k string) string { return m[k] }}
}

func TestSetupIsOffByDefault(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
		{"OTEL_SERVICE_NAME": "app"}, // naming the service asks for no exporter
	} {
		stop, on, err := tracing.Setup(context.Background(), envOf(env))
		if err != nil || on || stop(context.Background()) != nil {
			t.Errorf("Setup(%v) = on %v, %v; want off", env, on, err)
		}
	}
}

func TestSetupRefusesWhatItCannotExport(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER=zipkin"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http/protobuf"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, "http/protobuf"},
	} {
		_, on, err := tracing.Setup(context.Background(), envOf(tc.env))
		if err == nil || on || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Setup(%v) = on %v, %v; want an error naming %s", tc.env, on, err, tc.want)
		}
	}
}

// TestSetupExportsOverOTLPHTTP: with an OTLP endpoint in the environment,
// a span reaches a receiver as an OTLP/HTTP protobuf POST to /v1/traces,
// flushed by the returned shutdown, under service.name from
// OTEL_SERVICE_NAME.
func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	got := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			got <- b
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "switchboard-under-test")
	stop, on, err := tracing.Setup(context.Background(), nil)
	if err != nil || !on {
		t.Fatalf("Setup = on %v, %v", on, err)
	}
	_, span := tracing.StartTool(context.Background(), tracing.Tracer(nil), "tasks.create")
	tracing.End(span, nil)
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		for _, want := range []string{"execute_tool tasks.create", "switchboard-under-test", "gen_ai.tool.name"} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("the exported batch lacks %q", want)
			}
		}
	default:
		t.Fatal("nothing was exported by shutdown")
	}
}
