package activity_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/sqlite"
)

func openAnchor(t *testing.T, dir string, d switchboard.Durability) *activity.Anchor {
	t.Helper()
	a, err := activity.OpenAnchor(dir, &activity.AnchorOptions{Durability: d})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func deleteFrom(t *testing.T, path string, id int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM activity WHERE id >= ?`, id); err != nil {
		t.Fatal(err)
	}
}

// Under durability process an OS crash may roll back the last commits
// (docs/architecture.md, Durability): a missing tail is reported as
// possibly that, and the start records it with cause possible-crash. The
// daemon did not stop cleanly here: its last checkpoint is a periodic one.
func TestAnchorTellsCrashRollbackApart(t *testing.T) {
	ctx := context.Background()
	st, path := openStore(t)
	dir := t.TempDir()
	a := openAnchor(t, dir, switchboard.DurabilityProcess)
	l := newLedger(t, st, &activity.Options{Anchor: a})
	appendN(t, l, 5, "user:admin")
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	deleteFrom(t, path, 5)
	r, _ := l.Verify(ctx)
	if r.OK || !r.PossibleCrash || !strings.Contains(r.Problem, "entry 5 is missing") || !strings.Contains(r.Problem, "crash") {
		t.Fatalf("a missing tail under durability process: %+v", r)
	}
	st2, _ := reopen(t, path)
	l2 := newLedger(t, st2, &activity.Options{Anchor: openAnchor(t, dir, switchboard.DurabilityProcess)})
	r, _ = l2.Verify(ctx)
	if !r.OK || len(r.Gaps) != 1 || r.Gaps[0].Cause != activity.CausePossibleCrash || r.Gaps[0].Entry != 5 {
		t.Fatalf("after the restart: %+v", r)
	}
	// The anchor's files are private.
	for _, name := range []string{activity.AnchorFile, activity.AnchorKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, fi.Mode(), err)
		}
	}
}

// A tail cut after a clean stop, with the machine not rebooted since, can
// not be a crash's rollback: the start records it as unexplained.
func TestAnchorCleanStopCutIsUnexplained(t *testing.T) {
	ctx := context.Background()
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		t.Skip("no boot id on this system: a clean stop cannot be told from a reboot")
	}
	st, path := openStore(t)
	dir := t.TempDir()
	a := openAnchor(t, dir, switchboard.DurabilityProcess)
	l := newLedger(t, st, &activity.Options{Anchor: a})
	appendN(t, l, 5, "user:admin")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, activity.AnchorFile))
	if err != nil || !strings.Contains(string(b), `"clean":true`) {
		t.Fatalf("anchor file after Close %q %v, want a clean checkpoint", b, err)
	}
	deleteFrom(t, path, 5)
	st2, _ := reopen(t, path)
	l2 := newLedger(t, st2, &activity.Options{Anchor: openAnchor(t, dir, switchboard.DurabilityProcess)})
	r, _ := l2.Verify(ctx)
	if !r.OK || len(r.Gaps) != 1 || r.Gaps[0].Cause != activity.CauseUnexplained {
		t.Fatalf("a tail cut after a clean stop: %+v", r)
	}
}

// A checkpoint file edited by hand (to match a cut ledger) is recorded as
// forged at start, not trusted.
func TestAnchorForgedFile(t *testing.T) {
	ctx := context.Background()
	st, path := openStore(t)
	dir := t.TempDir()
	a := openAnchor(t, dir, switchboard.DurabilityPower)
	l := newLedger(t, st, &activity.Options{Anchor: a})
	appendN(t, l, 5, "user:admin")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, activity.AnchorFile))
	if err != nil || !strings.Contains(string(b), `"seq":5`) {
		t.Fatalf("anchor file %q %v", b, err)
	}
	deleteFrom(t, path, 4)
	if err := os.WriteFile(filepath.Join(dir, activity.AnchorFile), []byte(strings.Replace(string(b), `"seq":5`, `"seq":3`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	st2, _ := reopen(t, path)
	l2 := newLedger(t, st2, &activity.Options{Anchor: openAnchor(t, dir, switchboard.DurabilityPower)})
	r, _ := l2.Verify(ctx)
	if len(r.Gaps) != 1 || r.Gaps[0].Cause != activity.CauseForged {
		t.Fatalf("a forged anchor file: %+v", r)
	}
}

// reopen opens path afresh, as a restarted daemon does (a store may cache
// the chain head).
func reopen(t *testing.T, path string) (*sqlite.Store, string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// A ledger cut back and written again reaches the checkpoint's entry
// number with another entry there: verify names it.
func TestAnchorCatchesRewrite(t *testing.T) {
	ctx := context.Background()
	st, path := openStore(t)
	l := newLedger(t, st, &activity.Options{Anchor: openAnchor(t, "", switchboard.DurabilityPower)})
	appendN(t, l, 5, "user:admin")
	deleteFrom(t, path, 4)
	st2, _ := reopen(t, path)
	for range 2 {
		if err := st2.ActivityAppend(ctx, &switchboard.ActivityEntry{Actor: "user:mallory", Verb: "test.verb", Target: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := l.Verify(ctx)
	if r.OK || r.BadID != 5 || !strings.Contains(r.Problem, "entry 5 is not the entry the daemon checkpoint") {
		t.Fatalf("a rewritten tail: %+v", r)
	}
}

// A start over a ledger with a hole where the checkpoint points records
// it and starts (a tampered database must not stop the daemon); verify
// names the hole.
func TestAnchorStartsOverAHole(t *testing.T) {
	ctx := context.Background()
	st, path := openStore(t)
	dir := t.TempDir()
	a := openAnchor(t, dir, switchboard.DurabilityPower)
	l := newLedger(t, st, &activity.Options{Anchor: a})
	appendN(t, l, 5, "user:admin")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 2, "user:admin")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM activity WHERE id = 5`); err != nil {
		t.Fatal(err)
	}
	st2, _ := reopen(t, path)
	l2, err := activity.New(ctx, st2, &activity.Options{Anchor: openAnchor(t, dir, switchboard.DurabilityPower)})
	if err != nil {
		t.Fatalf("start over a hole: %v", err)
	}
	r, _ := l2.Verify(ctx)
	if r.OK || r.BadID != 5 || !strings.Contains(r.Problem, "entry 5 is missing") {
		t.Fatalf("verify over a hole: %+v", r)
	}
	tail, _ := l2.Tail(ctx, switchboard.ActivityFilter{Verb: activity.VerbLedgerRollback, Limit: 1})
	if len(tail) != 1 || !strings.Contains(string(tail[0].Details), `"missing":{"from":5,"to":5}`) {
		t.Fatalf("the rollback entry: %+v", tail)
	}
}

// A checkpoint signed with another data root's key verifies when Vouch
// names a replica that says it signed it, and the report names that
// replica; one this daemon signed, or one nobody vouches for, names none.
func TestVerifyCheckpointVouchedBy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := openStore(t)
	a := openAnchor(t, t.TempDir(), "")
	la := newLedger(t, st, &activity.Options{Anchor: a})
	appendN(t, la, 3, "user:admin")
	cp, err := la.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	lb := newLedger(t, st, &activity.Options{Anchor: openAnchor(t, t.TempDir(), ""),
		Vouch: func(_ context.Context, c switchboard.LedgerCheckpoint) string {
			asked++
			if a.Valid(c) {
				return "rep_a"
			}
			return ""
		}})
	if r, err := lb.VerifyCheckpoint(ctx, cp); err != nil || !r.OK || r.VouchedBy != "rep_a" {
		t.Fatalf("A's checkpoint on B: %+v %v, want ok, vouched for by rep_a", r, err)
	}
	edited := cp
	edited.Seq = 2
	if r, _ := lb.VerifyCheckpoint(ctx, edited); r.OK || r.VouchedBy != "" || !strings.Contains(r.Problem, "signature") {
		t.Fatalf("an edited checkpoint on B: %+v", r)
	}
	own, err := lb.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	asked = 0
	if r, err := lb.VerifyCheckpoint(ctx, own); err != nil || !r.OK || r.VouchedBy != "" || asked != 0 {
		t.Fatalf("B's own checkpoint: %+v %v (asked %d), want checked here", r, err, asked)
	}
}
