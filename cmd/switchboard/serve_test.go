package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// serveLog is serve's stderr: it keeps the log and hands over the address
// serve logs once it listens (the signal to start talking to it).
type serveLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addrc chan string
}

var listening = regexp.MustCompile(`switchboard listening"? addr=http://(\S+)`)

func (l *serveLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if m := listening.FindSubmatch(l.buf.Bytes()); m != nil && l.addrc != nil {
		l.addrc <- string(m[1])
		l.addrc = nil
	}
	return len(p), nil
}

func (l *serveLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startServe runs `serve --addr addr` over a fresh data root and returns
// the port it listens on, its log and its data root; the daemon stops (and
// must exit 0) when the test ends.
func startServe(t *testing.T, addr string) (port string, log *serveLog, data string) {
	t.Helper()
	t.Setenv("SWITCHBOARD_TOKEN", "")
	t.Setenv("SWITCHBOARD_STORE", "")
	data = t.TempDir()
	log = &serveLog{addrc: make(chan string, 1)}
	addrc := log.addrc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- Run(ctx, []string{"serve", "--addr", addr, "--data", data}, nil, &bytes.Buffer{}, log) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, log.String())
		}
	})
	select {
	case a := <-addrc:
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		return port, log, data
	case code := <-done:
		done <- code
		t.Fatalf("serve exited %d before listening: %s", code, log.String())
	}
	return "", nil, ""
}

// RELIABILITY row 3, exposed bind: the daemon listens on loopback unless
// told otherwise; on a non-loopback address (--addr 0.0.0.0:PORT) it
// serves only with a token (the admin token is created if none is given;
// a request without it is 401) and logs a warning saying who can reach it.
func TestServeExposedBindWarnsAndNeedsToken(t *testing.T) {
	host, _, err := net.SplitHostPort(client.DefaultAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Fatalf("the default address %s is not loopback", client.DefaultAddr)
	}
	const warning = "listening on a non-loopback address"

	port, log, data := startServe(t, "0.0.0.0:0")
	if !strings.Contains(log.String(), warning) {
		t.Errorf("no warning for a non-loopback bind: %s", log.String())
	}
	url := "http://127.0.0.1:" + port + "/api/v1/tools"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token on an exposed bind: %d, want 401", resp.StatusCode)
	}
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the admin token on an exposed bind: %d, want 200", resp.StatusCode)
	}
	// The ledger's anchor key is created private beside the database.
	if fi, err := os.Stat(filepath.Join(data, activity.AnchorKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v", activity.AnchorKeyFile, fi, err)
	}

	_, log, _ = startServe(t, "127.0.0.1:0")
	if strings.Contains(log.String(), warning) {
		t.Errorf("a loopback bind warned: %s", log.String())
	}
}

// The embedded authorization server's library (zitadel/oidc's pkg/op)
// logs its refusals through slog's process-wide default: serve routes
// that to its own logger, so a refused authorization request is a line
// of the daemon's log in the daemon's format, not a plain log-package
// line on the process's stderr.
func TestServeLogsOAuthLibraryThroughItsLogger(t *testing.T) {
	port, log, _ := startServe(t, "127.0.0.1:0")
	resp, err := http.Get("http://127.0.0.1:" + port + "/oauth/authorize?client_id=sbc_unknown&response_type=code&scope=mcp" +
		"&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&code_challenge=abc&code_challenge_method=S256")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("authorize for an unknown client: %d, want 400", resp.StatusCode)
	}
	if !regexp.MustCompile(`level=WARN msg="auth request[^"]*" oidc_error\.parent[^\n]*sbc_unknown`).MatchString(log.String()) {
		t.Fatalf("the library's refusal is not in serve's log:\n%s", log.String())
	}
}

// A daemon bound to a loopback alias (127.0.0.2: one of several replicas
// on one host) serves requests addressed to it by that address; a name is
// still refused (DNS-rebinding protection).
func TestServeLoopbackAliasAcceptsItsOwnAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no loopback alias here: %v", err)
	}
	ln.Close()
	port, _, _ := startServe(t, "127.0.0.2:0")
	get := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.2:"+port+"/healthz", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("127.0.0.2:" + port); code != http.StatusOK {
		t.Errorf("Host 127.0.0.2:%s on a daemon bound there: %d, want 200", port, code)
	}
	if code := get("rebind.example:" + port); code != http.StatusForbidden {
		t.Errorf("Host rebind.example: %d, want 403", code)
	}
}

// --help must not print a secret read from the environment as a flag's
// default: the admin token, or a store URL with its password.
func TestHelpHidesSecretDefaults(t *testing.T) {
	t.Setenv("SWITCHBOARD_TOKEN", "tok-secret-123")
	t.Setenv("SWITCHBOARD_STORE", "postgres://sb:pw-secret-456@db/sb")
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"tools", "call", "--help"}} {
		var out bytes.Buffer
		Run(context.Background(), args, nil, &out, &out)
		if s := out.String(); strings.Contains(s, "tok-secret-123") || strings.Contains(s, "pw-secret-456") {
			t.Errorf("%v prints a secret: %s", args, s)
		}
	}
}

// A daemon bound to a loopback alias serves its console at that address,
// so its code previews must let that console frame them.
func TestServeLoopbackAliasFramesPreviews(t *testing.T) {
	for _, a := range []string{"127.0.0.2:0", "127.0.0.3:0"} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Skipf("no loopback alias here: %v", err)
		}
		ln.Close()
	}
	t.Setenv("SWITCHBOARD_TOKEN", "")
	t.Setenv("SWITCHBOARD_STORE", "")
	log := &serveLog{addrc: make(chan string, 1)}
	addrc := log.addrc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.2:0", "--data", t.TempDir(), "--preview-addr", "127.0.0.3:0"}, nil, &bytes.Buffer{}, log)
	}()
	defer func() {
		cancel()
		<-done
	}()
	var addr string
	select {
	case addr = <-addrc:
	case code := <-done:
		done <- code
		t.Fatalf("serve exited %d before listening: %s", code, log.String())
	}
	origin := regexp.MustCompile(`sandboxed code preview origin"? addr=(\S+)`).FindStringSubmatch(log.String())
	if origin == nil {
		t.Fatalf("no preview origin in the log: %s", log.String())
	}
	resp, err := http.Get(origin[1] + "/p/0123")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "http://"+addr) {
		t.Fatalf("the preview's CSP does not let the console at http://%s frame it: %q", addr, csp)
	}
}
