package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// Issue 14 item 11: a DSN's password on the command line shows in ps, so
// the daemon warns about it and takes the DSN from a file instead.
func TestStoreFromFlags(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]bool{
		"postgres://app:hunter2@db:5432/sb":                   true,
		"postgres://db:5432/sb?password=hunter2":              true,
		"host=db user=app password=hunter2 dbname=sb":         true,
		"postgres://app@db:5432/sb?sslmode=disable":           false,
		"postgres://postgres@127.0.0.1:5432/test":             false,
		"host=db user=app dbname=sb passfile=/run/secrets/pg": false,
	} {
		if got := dsnHasPassword(dsn); got != want {
			t.Errorf("%s: password %v, want %v", dsn, got, want)
		}
		if _, warn, _ := storeFromFlags(dsn, "", true); warn != want {
			t.Errorf("%s on the command line: warn %v, want %v", dsn, warn, want)
		}
		if _, warn, _ := storeFromFlags(dsn, "", false); warn {
			t.Errorf("%s from $SWITCHBOARD_STORE: warned", dsn)
		}
	}
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte("postgres://app:hunter2@db/sb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if dsn, warn, err := storeFromFlags("", file, false); err != nil || warn || dsn != "postgres://app:hunter2@db/sb" {
		t.Errorf("--store-file: %q %v %v", dsn, warn, err)
	}
	if _, _, err := storeFromFlags("postgres://x", file, true); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("--store and --store-file together: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	if _, _, err := storeFromFlags("", empty, false); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("empty --store-file: %v", err)
	}
}
