// Package tracing is switchboard's OpenTelemetry tracing: Setup installs a
// tracer provider configured by the standard OTEL_* environment variables
// (off unless an exporter is asked for), and the helpers here are the one
// home of the span names and gen_ai.* attributes of the GenAI semantic
// conventions that the agent runtime (invoke_agent, chat) and the broker
// (execute_tool) record, and of the W3C trace context that the HTTP API and
// /mcp accept and HTTP bindings send on.
//
// Spans never carry prompt or completion text, tool arguments or results,
// user ids or secrets: only names, ids the daemon minted, token counts and
// frozen error codes.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of every switchboard span.
const Scope = "github.com/switchboardhq/switchboard"

// ServiceName is service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const ServiceName = "switchboard"

// Propagator is the W3C trace context (traceparent, tracestate): what the
// HTTP API and /mcp read from callers and HTTP bindings write to backends.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Options configures Setup. A nil *Options means defaults.
type Options struct {
	// Getenv reads the environment (default os.Getenv); the exporter
	// itself reads OTEL_EXPORTER_OTLP_* from the process environment.
	Getenv func(string) string
	// Version is service.version (the module version), if known.
	Version string
}

// Setup installs a tracer provider as OpenTelemetry's global one when the
// environment asks for an exporter, and returns the function that flushes
// and stops it. Tracing is off by default: with OTEL_TRACES_EXPORTER unset
// and no OTLP endpoint set, or OTEL_TRACES_EXPORTER=none, or
// OTEL_SDK_DISABLED=true, nothing is installed, every span is a no-op and
// enabled is false. OTEL_TRACES_EXPORTER=otlp (or an OTLP endpoint alone)
// exports over OTLP/HTTP; other exporters and the gRPC protocol are
// refused with an error saying what is supported.
func Setup(ctx context.Context, opts *Options) (shutdown func(context.Context) error, enabled bool, err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	env := func(k string) string { return strings.TrimSpace(o.Getenv(k)) }
	off := func(context.Context) error { return nil }
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return off, false, nil
	}
	switch exp := strings.ToLower(env("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return off, false, nil
	case "":
		if env("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return off, false, nil
		}
	case "otlp":
	default:
		return nil, false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: switchboard exports traces over otlp (OTLP/HTTP) or none", exp)
	}
	proto := env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = env("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: switchboard exports traces over http/protobuf (the collector's port 4318)", proto)
	}
	exp, err := otlptracehttp.New(ctx) // reads OTEL_EXPORTER_OTLP_* itself
	if err != nil {
		return nil, false, fmt.Errorf("otlp trace exporter: %w", err)
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(ServiceName))}
	if o.Version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(o.Version)))
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults above.
	attrs = append(attrs, resource.WithTelemetrySDK(), resource.WithFromEnv())
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		return nil, false, fmt.Errorf("trace resource: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER(_ARG); the default is
	// parentbased_always_on, so a caller's sampling decision is kept.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	return tp.Shutdown, true, nil
}

// Tracer is the switchboard tracer of tp, or of the global provider when
// tp is nil (a no-op until Setup or an embedder installs one).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(Scope)
}

// Extract returns ctx carrying the W3C trace context of a caller's request
// headers, so the spans the request starts continue the caller's trace.
// Without tracing installed the context still travels: an HTTP binding's
// backend receives the caller's trace.
func Extract(ctx context.Context, h http.Header) context.Context {
	return Propagator.Extract(ctx, propagation.HeaderCarrier(h))
}
