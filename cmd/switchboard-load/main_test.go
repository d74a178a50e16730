package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The CI configuration of the load-and-fault driver (issue 14, "Tests and
// the load driver"): 300 calls with their own keys at concurrency 16, two
// SIGKILLs of a real `switchboard serve`, on SQLite and (with
// SWITCHBOARD_TEST_POSTGRES) Postgres. Nothing may be stuck, lost or run
// twice.
func TestLoadWithKills(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	bin := filepath.Join(t.TempDir(), "switchboard")
	build := exec.Command("go", "build", "-o", bin, "github.com/switchboardhq/switchboard/cmd/switchboard")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build switchboard: %v", err)
	}
	stores := map[string]string{"sqlite": ""}
	if dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES"); dsn != "" {
		stores["postgres"] = pgStore(t, dsn)
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Bin: bin, Store: store, Calls: 300, Concurrency: 16, Kills: 2,
				Work: 5 * time.Millisecond, Deadline: 90 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r)
			if !r.OK() || r.Kills != 2 || r.Succeeded+r.OutcomeUnknown+r.Failed != 300 {
				t.Fatalf("%s: %v", name, r)
			}
		})
	}
}

// pgStore is dsn with a fresh schema (dropped at the end) as search_path.
func pgStore(t *testing.T, dsn string) string {
	ctx := context.Background()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "sbload_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			c.Close(ctx)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
