package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// newTestDaemon is a daemon on a fresh SQLite store behind an HTTP server,
// admin token testToken, closed when the test ends.
func newTestDaemon(t *testing.T) (*daemon.Daemon, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: testToken})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); d.Close(); st.Close() })
	return d, srv
}
