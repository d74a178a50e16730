package mcpconformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/switchboardhq/switchboard/internal/daemon"
)

// shutdownTimeout bounds the graceful shutdown of Serve.
const shutdownTimeout = 5 * time.Second

// New builds a daemon over store with the fixtures registered, and
// returns it with its handler for the suite: the daemon's own, except that
// a request from loopback without an Authorization header (the suite sends
// no token) is sent with the daemon's admin token.
func New(ctx context.Context, opts daemon.Options) (*daemon.Daemon, http.Handler, error) {
	if opts.AdminToken == "" {
		opts.AdminToken = daemon.NewSecret()
	}
	opts.MCP = Options()
	d, err := daemon.New(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := Register(ctx, d.Registry, d.Broker); err != nil {
		_ = d.Close()
		return nil, nil, err
	}
	inner := d.Handler()
	bearer := "Bearer " + opts.AdminToken
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" && loopbackRemote(r) {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", bearer)
		}
		inner.ServeHTTP(w, r)
	})
	return d, h, nil
}

// Serve runs the fixture daemon on addr (loopback only) over a SQLite store
// in dir (a temporary directory when empty), writes its /mcp URL as the
// first line of stdout, and serves until ctx ends.
func Serve(ctx context.Context, addr, dir string, stdout, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer ln.Close()
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		return errors.New("the conformance server listens on loopback only")
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "switchboard-conformance-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	store, err := daemon.OpenStore(ctx, "", dir)
	if err != nil {
		return err
	}
	defer store.Close()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, h, err := New(ctx, daemon.Options{Store: store, Logger: log, AllowHosts: []string{"localhost", "127.0.0.1", "::1"}})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(func() { _ = d.Close() })
	fmt.Fprintf(stdout, "http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

func loopbackRemote(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
