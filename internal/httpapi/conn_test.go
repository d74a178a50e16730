package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// guard bounds a read that hangs without the fix; the tests assert
// what is read, never how long it took.
const guard = time.Minute

// serveConn starts the daemon's HTTP server (httpapi.NewHTTPServer) over a
// registry-only API on a loopback listener and returns its address.
func serveConn(t *testing.T, so *httpapi.ServerOptions, o httpapi.Options) string {
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
	o.Registry, o.AdminToken = reg, token
	h, err := httpapi.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewHTTPServer(h, so)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// RELIABILITY row 27: an unauthenticated POST that announces 100,000
// bytes of body and sends one gets its 401 without the daemon waiting for
// the rest (it does not read the body), and the connection is closed. The
// client reads the answer before it would send more: without the fix the
// read hangs (net/http drains an unread body before it answers).
func TestUnauthenticatedBodyNotAwaited(t *testing.T) {
	t.Parallel()
	addr := serveConn(t, nil, httpapi.Options{})
	for _, auth := range []string{"", "Authorization: Bearer wrong\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(guard))
		req := "POST /api/v1/tools HTTP/1.1\r\nHost: " + addr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n["
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: no answer before the body was sent: %v", auth, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "UNAUTHORIZED") || !res.Close {
			t.Fatalf("%q: %d close=%v %s; want 401 UNAUTHORIZED and Connection: close", auth, res.StatusCode, res.Close, b)
		}
	}
}

// An authenticated request whose body stops coming is answered once its
// body's read deadline passes, instead of holding the connection.
func TestSlowBodyBounded(t *testing.T) {
	t.Parallel()
	addr := serveConn(t, nil, httpapi.Options{BodyReadTimeout: 50 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	req := "POST /api/v1/tools HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n["
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a body that stopped: %v", err)
	}
	res.Body.Close()
	if res.StatusCode < 400 || !res.Close {
		t.Fatalf("a body that stopped: %d close=%v; want an error and Connection: close", res.StatusCode, res.Close)
	}
}

// IdleTimeout closes a keep-alive connection that sends no next request:
// the client's read after its answer ends with the server's close.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	addr := serveConn(t, &httpapi.ServerOptions{IdleTimeout: 50 * time.Millisecond}, httpapi.Options{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Close {
		t.Fatalf("healthz: %d close=%v; want 200 on a kept-alive connection", res.StatusCode, res.Close)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("an idle connection: %v; want it closed by the server (EOF)", err)
	}
}

// The defaults are the named constants.
func TestHTTPServerDefaults(t *testing.T) {
	t.Parallel()
	s := httpapi.NewHTTPServer(http.NotFoundHandler(), nil)
	if s.ReadHeaderTimeout != httpapi.ReadHeaderTimeout || s.IdleTimeout != httpapi.IdleTimeout || s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Fatalf("server timeouts: header %s idle %s read %s write %s", s.ReadHeaderTimeout, s.IdleTimeout, s.ReadTimeout, s.WriteTimeout)
	}
}
