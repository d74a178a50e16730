package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

const adminToken = "example-admin-token"

// startDaemon serves a real daemon over SQLite.
func startDaemon(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close(); st.Close() })
	return srv.URL
}

// TestOpenSession opens a session from each example (Go in process, Node
// and Python as the README runs them) against a real daemon, and checks a
// wrong token is refused with the daemon's error.
func TestOpenSession(t *testing.T) {
	base := startDaemon(t)
	s, err := openSession(context.Background(), base, adminToken, "user:42", []string{"tasks.*"})
	if err != nil || s.SessionID == "" || !strings.Contains(s.SessionToken, ".") {
		t.Fatalf("go: %+v %v", s, err)
	}
	if _, err := openSession(context.Background(), base, "wrong", "user:42", nil); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("go, wrong token: %v", err)
	}

	for _, c := range [][]string{{"node", "session.mjs"}, {"python3", "session.py"}} {
		if _, err := exec.LookPath(c[0]); err != nil {
			t.Logf("skipping the %s example: %s not found", c[0], c[0])
			continue
		}
		run := func(token string) (string, error) {
			cmd := exec.Command(c[0], c[1], "user:7")
			cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+base, "SWITCHBOARD_TOKEN="+token)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := run(adminToken)
		var got Session
		if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.SessionID == "" || got.SessionToken == "" {
			t.Errorf("%s: %v %q", c[1], err, out)
		}
		if out, err := run("wrong"); err == nil || !strings.Contains(out, "UNAUTHORIZED") {
			t.Errorf("%s, wrong token: %v %q", c[1], err, out)
		}
	}
}
