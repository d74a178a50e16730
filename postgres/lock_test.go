package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/postgres"
)

// A presence lock is held on a connection of its own: it shows in
// LocksHeld from any store on the database, a second holder is refused,
// a terminated backend is replaced and the lock retaken (relocked is
// called), and release or the store's Close frees it.
func TestHoldLock(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	ctx := context.Background()
	a, b := open(t, dsn, schema), open(t, dsn, schema)

	relocked := make(chan struct{}, 1)
	release, err := a.HoldLock(ctx, "rep_a", func() { relocked <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.HoldLock(ctx, "rep_a", nil); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("a second holder: %v, want CONFLICT", err)
	}
	held := func(name string) bool {
		t.Helper()
		got, err := b.LocksHeld(ctx, []string{name, "rep_nobody"})
		if err != nil {
			t.Fatal(err)
		}
		if got["rep_nobody"] {
			t.Fatal("a lock nobody took is held")
		}
		return got[name]
	}
	if !held("rep_a") {
		t.Fatal("the lock is not held")
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	k := uint64(lockKey("rep_a"))
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND classid::bigint = $1 AND objid::bigint = $2`,
		int64(k>>32), int64(uint32(k))).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the lock's backend: %d %v", n, err)
	}
	select {
	case <-relocked:
	case <-time.After(30 * time.Second):
		t.Fatal("the lock was not retaken after its connection dropped")
	}
	if !held("rep_a") {
		t.Fatal("the retaken lock is not held")
	}

	// The server ends a closed session a moment after the client hangs up.
	freed := func(name string) bool {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if !held(name) {
				return true
			}
		}
		return false
	}
	release()
	if !freed("rep_a") {
		t.Fatal("the lock is held after release")
	}
	if _, err := a.HoldLock(ctx, "rep_b", nil); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if !freed("rep_b") {
		t.Fatal("the lock is held after its store closed")
	}
}

func lockKey(name string) int64 { return postgres.LockKey(name) }
