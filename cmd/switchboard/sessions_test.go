package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestSessionsCommands: `sessions` lists the open tabs, `show` one with its
// tools and contexts, `end` closes it; typos get did-you-mean, for the
// subcommand and for the id.
func TestSessionsCommands(t *testing.T) {
	url := startDaemon(t)
	ctx := context.Background()
	admin := client.New(url, testToken, nil)
	cred, err := admin.CreateSession(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	tab := admin.Tab(cred)
	nav := switchboard.Tool{Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}}}`)}
	if _, err := tab.Advertise(ctx, []switchboard.Tool{nav}); err != nil {
		t.Fatal(err)
	}
	stream, err := tab.Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if _, err := stream.Next(); err != nil { // session.ready: the stream is attached
		t.Fatal(err)
	}
	tabClient := client.New(url, cred.SessionToken, nil)
	report := map[string]any{"contexts": []map[string]any{{"id": "route:/media", "kind": "page", "label": "Media", "attention": "focused", "panels": []any{}}}}
	if err := tabClient.Do(ctx, "PUT", "/api/v1/sessions/"+cred.SessionID+"/context", report, nil); err != nil {
		t.Fatal(err)
	}
	g := []string{"--addr", url, "--token", testToken}

	code, out, errs := run(t, append(g, "sessions")...)
	if code != 0 || !strings.Contains(out, cred.SessionID) || !strings.Contains(out, "connected") || !strings.Contains(out, "alice") ||
		!strings.Contains(out, "nav.goto") || errs != "1 session\n" {
		t.Fatalf("sessions: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(g, "sessions", "list", "--json")...)
	var items []switchboard.SessionInfo
	if code != 0 || json.Unmarshal([]byte(out), &items) != nil || len(items) != 1 || items[0].State != switchboard.TabConnected || len(items[0].Contexts) != 1 {
		t.Fatalf("sessions list --json: %d %q", code, out)
	}
	code, out, _ = run(t, append(g, "sessions", "show", cred.SessionID)...)
	for _, want := range []string{cred.SessionID + "  connected", "user", "alice", "1 tool:", "nav.goto", "1 context:", "route:/media", "pending calls"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("sessions show: %d, %q lacks %q", code, out, want)
		}
	}

	// Typos: the subcommand, and an id one character off.
	if code, _, errs := run(t, append(g, "sessions", "shw", cred.SessionID)...); code != 2 || !strings.Contains(errs, `did you mean show?`) {
		t.Fatalf("sessions shw: %d %q", code, errs)
	}
	typo := cred.SessionID[:len(cred.SessionID)-1] + "x"
	if strings.HasSuffix(cred.SessionID, "x") {
		typo = cred.SessionID[:len(cred.SessionID)-1] + "y"
	}
	if code, _, errs := run(t, append(g, "sessions", "show", typo)...); code != 1 || !strings.Contains(errs, "NOT_FOUND") || !strings.Contains(errs, "did you mean "+cred.SessionID+"?") {
		t.Fatalf("sessions show with a typo: %d %q", code, errs)
	}
	if code, _, errs := run(t, append(g, "sessions", "end")...); code != 2 || !strings.Contains(errs, "one or more session IDs") {
		t.Fatalf("sessions end with no id: %d %q", code, errs)
	}

	// end closes the session: its stream ends and show says closed.
	if code, out, errs := run(t, append(g, "sessions", "end", cred.SessionID)...); code != 0 || out != cred.SessionID+" ended\n" {
		t.Fatalf("sessions end: %d %q %q", code, out, errs)
	}
	if _, err := stream.Next(); err == nil {
		t.Fatal("the ended session's stream goes on")
	}
	code, out, _ = run(t, append(g, "sessions", "show", cred.SessionID, "--json")...)
	var info switchboard.SessionInfo
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.State != switchboard.TabClosed {
		t.Fatalf("show after end: %d %q", code, out)
	}
	if code, _, errs := run(t, append(g, "sessions", "end", "ses_nope")...); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("end unknown: %d %q", code, errs)
	}
	if code, _, errs := run(t, append(g, "sessions")...); code != 0 || errs != "0 sessions\n" {
		t.Fatalf("sessions after end: %d %q", code, errs)
	}
}

// TestServeSessionWindows: --reconnect-window and the config's sessions
// section reach the daemon (the stream's hello frame reports them), and
// windows it could not honour stop serve with the flag's and keys' names.
func TestServeSessionWindows(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		yaml string
		args []string
		want string
	}{
		"not a duration":       {"sessions:\n  reconnectWindow: soon\n", nil, "sessions.reconnectWindow must be a duration"},
		"keep under reconnect": {"sessions:\n  keepWindow: 2s\n", nil, "longer than sessions.keepWindow 2s"},
		"zero flag":            {"", []string{"--reconnect-window", "0s"}, "--reconnect-window (sessions.reconnectWindow) must be positive"},
	} {
		args := append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:1"}, tc.args...)
		if tc.yaml != "" {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", path)
		}
		if code, _, errs := run(t, args...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q (want it to mention %q)", name, code, errs, tc.want)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("SWITCHBOARD_STORE", "")
	cfg := filepath.Join(dir, "windows.yaml")
	if err := os.WriteFile(cfg, []byte("sessions:\n  reconnectWindow: 1s\n  keepWindow: 10s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serr bytes.Buffer
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", addr, "--data", dir, "--token", testToken, "--config", cfg, "--reconnect-window", "2s"}, nil, &bytes.Buffer{}, &serr)
	}()
	defer func() { cancel(); <-done }()
	admin := client.New(addr, testToken, nil)
	for deadline := time.Now().Add(10 * time.Second); admin.Health(ctx) != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not come up: %s", serr.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a port another goroutine opens
	}
	cred, err := admin.CreateSession(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := admin.Tab(cred).Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	ev, err := stream.Next()
	var hello struct{ GraceMs, ReconnectMs int64 }
	if err != nil || json.Unmarshal(ev.Data, &hello) != nil || hello.ReconnectMs != 2000 || hello.GraceMs != 10000 {
		t.Fatalf("hello %s %v: want reconnectMs 2000 (the flag wins over the file) and graceMs 10000", ev.Data, err)
	}
}
