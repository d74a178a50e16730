package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/telemetry"
)

// listenMetrics opens --metrics-addr, when given, and moves GET /metrics
// off the API onto it. That listener asks for no token (Prometheus's
// usual scrape), so it belongs on an interface only the scraper reaches.
func (f *serveFlags) listenMetrics(opts *daemon.Options) (net.Listener, error) {
	if f.metricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", f.metricsAddr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "cannot listen on --metrics-addr %s: the address is already in use; pass another", f.metricsAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on --metrics-addr %s: %w", f.metricsAddr, err)
	}
	opts.MetricsElsewhere = true
	return ln, nil
}

// serveMetrics serves d's metrics on ln and returns what stops it.
func serveMetrics(ln net.Listener, d *daemon.Daemon, log *slog.Logger) func() {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.Metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	log.Info("metrics at http://" + ln.Addr().String() + "/metrics (no token: keep this address private)")
	return func() { _ = srv.Close() }
}

// checkTelemetryURL refuses a --telemetry-url that cannot receive POSTs,
// at start rather than as drops later.
// telemetrySecretEnv holds the telemetry webhook's signing key: read from
// the environment only, so it never shows in ps or a config file.
const telemetrySecretEnv = "SWITCHBOARD_TELEMETRY_SECRET"

func checkTelemetryURL(raw string) error {
	if raw == "" {
		if os.Getenv(telemetrySecretEnv) != "" {
			return fmt.Errorf("$%s is set but --telemetry-url is not: name the webhook it signs for", telemetrySecretEnv)
		}
		return nil
	}
	if s := os.Getenv(telemetrySecretEnv); s != "" {
		if err := telemetry.CheckSecret(s); err != nil {
			return fmt.Errorf("$%s: %v", telemetrySecretEnv, err)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--telemetry-url must be an absolute http or https URL, such as https://collector.example/events")
	}
	return nil
}
