package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 14 item 5: deleting the last entries of the ledger in the database
// fails `activity verify` on the daemon that wrote them, naming the
// missing range, and fails a checkpoint the operator exported before.
func TestCLIVerifyCatchesCutTail(t *testing.T) {
	url, dbPath, _ := startGoverned(t)
	admin := []string{"--addr", url, "--token", testToken}
	for i := range 4 {
		if code, _, errs := run(t, append(admin, "tools", "call", "tasks.create", "--input", fmt.Sprintf(`{"title":"t%d"}`, i))...); code != 0 {
			t.Fatalf("call: %d %q", code, errs)
		}
	}
	code, out, errs := run(t, append(admin, "activity", "checkpoint")...)
	var cp struct {
		Seq  int64  `json:"seq"`
		Hash string `json:"hash"`
		MAC  string `json:"mac"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cp) != nil || cp.Seq == 0 || cp.MAC == "" {
		t.Fatalf("checkpoint: %d %q %q", code, out, errs)
	}
	file := filepath.Join(t.TempDir(), "cp.json")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = run(t, append(admin, "activity", "verify", "--checkpoint", file)...); code != 0 ||
		!strings.Contains(out, "consistent with the daemon's checkpoint and "+file) {
		t.Fatalf("verify an untouched ledger against the export: %d %q %q", code, out, errs)
	}

	// A hand-edited checkpoint is refused; so is a document of another shape.
	forged := strings.Replace(string(mustRead(t, file)), fmt.Sprintf(`"seq":%d`, cp.Seq), fmt.Sprintf(`"seq":%d`, cp.Seq-1), 1)
	bad := filepath.Join(t.TempDir(), "forged.json")
	must(t, os.WriteFile(bad, []byte(forged), 0o600))
	if code, _, errs = run(t, append(admin, "activity", "verify", "--checkpoint", bad)...); code != 1 || !strings.Contains(errs, "signature does not verify") {
		t.Fatalf("verify against a forged checkpoint: %d %q", code, errs)
	}
	must(t, os.WriteFile(bad, []byte(`{"seq":1,"Hash":"x"}`), 0o600))
	if code, _, errs = run(t, append(admin, "activity", "verify", "--checkpoint", bad)...); code != 1 ||
		!strings.Contains(errs, "INVALID_INPUT") || !strings.Contains(errs, `"Hash"`) {
		t.Fatalf("verify against a malformed checkpoint: %d %q", code, errs)
	}

	db, err := sql.Open("sqlite", dbPath)
	must(t, err)
	defer db.Close()
	var head int64
	must(t, db.QueryRow(`SELECT max(id) FROM activity`).Scan(&head))
	if _, err := db.Exec(`DELETE FROM activity WHERE id > ?`, head-3); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("entries %d–%d are missing", head-2, head)
	code, _, errs = run(t, append(admin, "activity", "verify")...)
	if code != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "deleted") {
		t.Fatalf("verify after the last 3 entries were deleted: %d %q, want %q", code, errs, want)
	}
	// The export named the head, now deleted: it fails too.
	code, _, errs = run(t, append(admin, "activity", "verify", "--checkpoint", file)...)
	if cp.Seq != head || code != 1 || !strings.Contains(errs, "operator checkpoint") || !strings.Contains(errs, want) {
		t.Fatalf("verify --checkpoint after the cut: %d %q", code, errs)
	}
	if code, _, errs = run(t, append(admin, "activity", "checkpoint")...); code != 1 || !strings.Contains(errs, "no checkpoint is issued") {
		t.Fatalf("checkpoint of a cut ledger: %d %q", code, errs)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}
