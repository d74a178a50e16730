package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboardhq/switchboard/internal/tracing"
)

// traceFlushTimeout bounds how long serve waits, on exit, for the spans
// still buffered to reach the collector.
const traceFlushTimeout = 5 * time.Second

// startTracing installs OpenTelemetry tracing when the OTEL_* environment
// asks for it (docs/operations.md, "Traces") and returns what flushes it.
func startTracing(ctx context.Context, log *slog.Logger) (stop func(), err error) {
	shutdown, on, err := tracing.Setup(ctx, &tracing.Options{Version: buildVersion().Version})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if on {
		log.InfoContext(ctx, "exporting traces over OTLP/HTTP")
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushTimeout)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.WarnContext(ctx, "traces not flushed", "err", err)
		}
	}, nil
}
