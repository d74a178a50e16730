package postgres

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// A replica claimed while paused with a transaction open: the claimer's
// CutOff rolls that transaction back (its row lock no longer holds the
// claimer's writes up, its change never lands) and the paused store can
// open no session afterwards. Without CutOff the claimer's write below
// waits on the lock until the statement timeout.
func TestCutOffFencesAClaimedReplica(t *testing.T) {
	_, raw := openGroup(t) // a schema, and a raw connection to it for checks
	ctx := context.Background()
	var schema string
	mustNot(t, raw.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema))
	open := func() *Store {
		s, err := Open(ctx, os.Getenv("SWITCHBOARD_TEST_POSTGRES"), &Options{Schema: schema, MaxConns: 4, StatementTimeout: 2 * time.Second})
		mustNot(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	paused, survivor := open(), open()
	now := time.Now()
	for _, id := range []string{"rep_paused", "rep_survivor"} {
		mustNot(t, survivor.ReplicaRegister(ctx, switchboard.Replica{ID: id, Name: id, StartedAt: now, HeartbeatAt: now}))
	}
	mustNot(t, paused.Fence("rep_paused"))
	if err := paused.Fence("rep_other"); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("a second Fence: %v, want CONFLICT", err)
	}

	// The paused replica's open transaction holds the survivor's row.
	pc, err := paused.pool.Acquire(ctx)
	mustNot(t, err)
	defer pc.Release()
	var name string
	mustNot(t, pc.QueryRow(ctx, `SELECT current_setting('application_name')`).Scan(&name))
	if !strings.HasSuffix(name, " rep_paused") {
		t.Fatalf("the fenced store's session is named %q, want it to end in the replica id", name)
	}
	tx, err := pc.Begin(ctx)
	mustNot(t, err)
	_, err = tx.Exec(ctx, `UPDATE replicas SET addr = 'written while paused' WHERE id = 'rep_survivor'`)
	mustNot(t, err)

	if _, err := survivor.ReplicaClaim(ctx, "rep_paused", "rep_survivor", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	n, err := survivor.CutOff(ctx, "rep_paused")
	if err != nil || n < 1 {
		t.Fatalf("CutOff: %d sessions, %v", n, err)
	}
	if _, err := survivor.ReplicaHeartbeat(ctx, "rep_survivor", time.Now()); err != nil {
		t.Fatalf("the survivor's write after the cut-off: %v (the paused transaction still holds its row)", err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("the paused replica's transaction committed after it was cut off")
	}
	var addr string
	mustNot(t, raw.QueryRow(ctx, `SELECT addr FROM replicas WHERE id = 'rep_survivor'`).Scan(&addr))
	if addr != "" {
		t.Fatalf("the paused replica's change landed: addr %q", addr)
	}

	// Whatever session the paused store had is gone, and it opens none.
	var last error
	for range 6 {
		_, last = paused.ReplicaList(ctx)
		if last != nil && strings.Contains(last.Error(), "must not write") {
			break
		}
	}
	if switchboard.CodeOf(last) != switchboard.CodeUnavailable || !strings.Contains(last.Error(), "claimed by rep_survivor") {
		t.Fatalf("the cut-off store's read: %v, want UNAVAILABLE naming its claimer", last)
	}
	if _, err := paused.ReplicaList(ctx); err == nil {
		t.Fatal("the cut-off store opened a session again")
	}
	if by, ok := paused.FencedBy(); !ok || by != "rep_survivor" {
		t.Fatalf("FencedBy: %q %v, want rep_survivor", by, ok)
	}
	if _, ok := survivor.FencedBy(); ok {
		t.Fatal("the survivor's store says it was fenced")
	}
	// A store of no replica is not affected.
	if _, err := survivor.ReplicaList(ctx); err != nil {
		t.Fatal(err)
	}
}

// A session's name keeps the replica id at its end whatever the DSN's
// application_name: Postgres stores at most 63 bytes, and from version 16
// writes each non-ASCII byte as a four-byte \xNN escape, so a name that
// is not printable ASCII would lose the id CutOff looks for.
func TestSessionNameKeepsTheIDAtItsEnd(t *testing.T) {
	id := "rep_0123456789abcdef01234567"
	for _, base := range []string{"switchboard", "コールセンター", strings.Repeat("x", 80), "prod\tswitchboard"} {
		name := (&fenceState{base: base}).sessionName(id)
		if len(name) > maxAppName || !strings.HasSuffix(name, " "+id) {
			t.Errorf("base %q: session name %q, want at most %d bytes ending in the id", base, name, maxAppName)
		}
		for _, c := range []byte(name) {
			if c < 32 || c > 126 {
				t.Errorf("base %q: session name %q is not printable ASCII", base, name)
				break
			}
		}
	}
}
