package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDoctor checks a served data root: a binding's unset variable and a
// token file others can read fail, each with its fix; once fixed, every
// check passes (the ledger verifies, the daemon answers).
func TestDoctor(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a daemon")
	}
	t.Setenv("SWITCHBOARD_TOKEN", "")
	t.Setenv("SWITCHBOARD_STORE", "")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(manifest, []byte(`tools:
  - name: notes.add
    description: Add a note.
    class: mutate
    binding:
      http:
        method: POST
        url: http://127.0.0.1:1/notes
        headers:
          X-Api-Key: {env: OPS_DOCTOR_KEY}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	addr, _ := serveIn(t, data, "--manifest", manifest)
	tokPath := filepath.Join(data, "admin.token")
	if err := os.Chmod(tokPath, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "--addr", addr, "--data", data, "doctor")
	if code != 1 || !strings.Contains(errOut, "UNAVAILABLE: 2 checks failed") {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"fail  token", "fix: chmod 600 " + tokPath, "fail  bindings   $OPS_DOCTOR_KEY is not set; notes.add send it",
		"fix: export OPS_DOCTOR_KEY=", "ok    ledger", "ok    daemon", "ok    store"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if err := os.Chmod(tokPath, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPS_DOCTOR_KEY", "k")
	if code, out, errOut := run(t, "--addr", addr, "--data", data, "doctor"); code != 0 || strings.Contains(out, "fail") {
		t.Fatalf("doctor after the fixes: exit %d\n%s\n%s", code, out, errOut)
	}

	// A daemon given its token (--token, $SWITCHBOARD_TOKEN) has no token
	// file: the token given to doctor is the check.
	tok, err := os.ReadFile(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tokPath); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "--addr", addr, "--data", data, "--token", strings.TrimSpace(string(tok)), "doctor"); code != 0 || !strings.Contains(out, "ok    token      given by --token") {
		t.Fatalf("doctor with --token and no token file: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := run(t, "--addr", addr, "--data", data, "doctor"); code != 1 || !strings.Contains(out, "fail  token") {
		t.Fatalf("doctor with neither: exit %d\n%s", code, out)
	}
}

// TestDoctorAutovacuum: on a Postgres store doctor says whether the
// server runs autovacuum, a warning (with its fix) when it does not.
func TestDoctorAutovacuum(t *testing.T) {
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set SWITCHBOARD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("sbdoctor_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	var on bool
	if err := conn.QueryRow(ctx, `SELECT setting = 'on' FROM pg_settings WHERE name = 'autovacuum'`).Scan(&on); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	t.Setenv("SWITCHBOARD_TOKEN", "")
	t.Setenv("SWITCHBOARD_STORE", dsn+sep+"search_path="+schema)
	data := t.TempDir()
	_, out, _ := run(t, "--addr", "127.0.0.1:1", "--data", data, "doctor")
	want := []string{"ok    postgres   the server runs autovacuum"}
	if !on {
		want = []string{"warn  postgres   the server runs with autovacuum off", "fix: set autovacuum = on in postgresql.conf"}
	}
	for _, w := range append(want, "ok    store      Postgres opens") {
		if !strings.Contains(out, w) {
			t.Errorf("doctor output lacks %q (autovacuum on: %v):\n%s", w, on, out)
		}
	}
	if v := autovacuumVerdict(true); v.Status != "ok" {
		t.Errorf("autovacuum on: %+v, want ok", v)
	}
}
