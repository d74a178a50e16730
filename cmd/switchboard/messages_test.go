package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// registerManifest registers manifestYAML on the daemon at url.
func registerManifest(t *testing.T, url string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(file, []byte(manifestYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "--addr", url, "--token", testToken, "tools", "register", file); code != 0 {
		t.Fatalf("register: %d %q", code, errs)
	}
}

// TestCallBodyWithoutInputWrapper: a tool's fields sent at the top level of
// a call body are told how to wrap them, not only that a field is unknown.
func TestCallBodyWithoutInputWrapper(t *testing.T) {
	url := startDaemon(t)
	registerManifest(t, url)
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/tools/tasks.create/call",
		strings.NewReader(`{"projectId": "p1", "title": "x"}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env switchboard.ErrorEnvelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error == nil {
		t.Fatalf("status %d, decode %v", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusBadRequest || env.Error.Code != switchboard.CodeInvalidInput ||
		!strings.Contains(env.Error.Message, `{"input": {"projectId": ...}}`) {
		t.Errorf("status %d, %s: %s", resp.StatusCode, env.Error.Code, env.Error.Message)
	}
}

// TestServeOnABusyPort: an address already in use is UNAVAILABLE, named,
// and said to be in use, not INTERNAL.
func TestServeOnABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("SWITCHBOARD_STORE", "")
	addr := ln.Addr().String()
	code, _, errs := run(t, "serve", "--addr", addr, "--data", t.TempDir(), "--token", testToken)
	if code != 1 || !strings.Contains(errs, "error: UNAVAILABLE: cannot listen on "+addr+": the address is already in use") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
