package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// TestDurabilitySetsSynchronous: process keeps WAL's synchronous=NORMAL
// (1), power fsyncs every commit with FULL (2), on the writer and the
// readers alike; anything else is refused before the file is touched.
func TestDurabilitySetsSynchronous(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		d    switchboard.Durability
		want int
	}{{"", 1}, {switchboard.DurabilityProcess, 1}, {switchboard.DurabilityPower, 2}} {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "db"), &Options{Durability: tc.d})
		if err != nil {
			t.Fatal(err)
		}
		var w, r int
		if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&w); err != nil {
			t.Fatal(err)
		}
		if err := s.r.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&r); err != nil {
			t.Fatal(err)
		}
		if w != tc.want || r != tc.want {
			t.Errorf("durability %q: synchronous writer %d readers %d, want %d", tc.d, w, r, tc.want)
		}
		s.Close()
	}
	path := filepath.Join(t.TempDir(), "db")
	if _, err := Open(ctx, path, &Options{Durability: "disk"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("durability disk: %v, want INVALID_INPUT", err)
	}
}
