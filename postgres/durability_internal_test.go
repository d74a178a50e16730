package postgres

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

// TestDurabilitySetsSynchronousCommit: process turns synchronous_commit
// off on every connection, power turns it on, and the default leaves the
// server's setting.
func TestDurabilitySetsSynchronousCommit(t *testing.T) {
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	// A schema of its own: the shared test database's public schema may
	// hold another branch's migrations.
	schema := fmt.Sprintf("sbtest_durability_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			conn.Close(ctx)
		}
	})
	var server string
	for _, tc := range []struct {
		d    switchboard.Durability
		want string
	}{{"", ""}, {switchboard.DurabilityProcess, "off"}, {switchboard.DurabilityPower, "on"}} {
		s, err := Open(ctx, dsn, &Options{Schema: schema, Durability: tc.d})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := s.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if tc.d == "" {
			server = got
			continue
		}
		if got != tc.want {
			t.Errorf("durability %q: synchronous_commit %q, want %q", tc.d, got, tc.want)
		}
	}
	if server == "" {
		t.Error("the default read no synchronous_commit")
	}
	if _, err := Open(ctx, dsn, &Options{Schema: schema, Durability: "disk"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("durability disk: %v, want INVALID_INPUT", err)
	}
}
