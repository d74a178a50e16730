package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// Tamper deletes the ledger entries with id >= from straight in the
// database, behind the store's back (the driver test's raw connection),
// as an attacker would: leaving the rest consistent. It returns a store
// opened afresh over the database, as a restarted daemon would see it
// (the old one may cache the chain head).
type Tamper func(t *testing.T, from int64) switchboard.Store

// ExerciseAnchor checks that the ledger's anchor catches a cut tail on a
// driver: open returns a fresh, empty store and a Tamper for it. Deleting
// the last entries fails verify while the daemon that wrote them runs
// (naming the range), is recorded as a ledger.rollback entry by the next
// start, and fails an operator's exported checkpoint for good; an
// untouched ledger verifies throughout.
func ExerciseAnchor(t *testing.T, open func(t *testing.T) (switchboard.Store, Tamper)) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, switchboard.Store, Tamper)
	}{
		{"TailCutWhileRunning", testAnchorTailCut},
		{"TailCutWhileStopped", testAnchorRestart},
		{"OperatorCheckpoint", testAnchorOperator},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, tamper := open(t)
			c.fn(t, s, tamper)
		})
	}
}

func anchoredLedger(t *testing.T, s switchboard.Store, dir string) (*activity.Ledger, *activity.Anchor) {
	t.Helper()
	a, err := activity.OpenAnchor(dir, &activity.AnchorOptions{Durability: switchboard.DurabilityPower})
	must(t, err)
	l, err := activity.New(context.Background(), s, &activity.Options{Anchor: a})
	must(t, err)
	return l, a
}

func appendEntries(t *testing.T, l *activity.Ledger, n int) {
	t.Helper()
	for i := range n {
		must(t, l.Append(context.Background(), entry(i)))
	}
}

func verifyOK(t *testing.T, l *activity.Ledger, entries int64) {
	t.Helper()
	r, err := l.Verify(context.Background())
	if err != nil || !r.OK || r.Entries != entries {
		t.Fatalf("an untouched ledger of %d entries: %+v, %v", entries, r, err)
	}
}

func testAnchorTailCut(t *testing.T, s switchboard.Store, tamper Tamper) {
	l, _ := anchoredLedger(t, s, t.TempDir())
	appendEntries(t, l, 10)
	verifyOK(t, l, 10)
	tamper(t, 8)
	r, err := l.Verify(context.Background())
	must(t, err)
	if r.OK || r.BadID != 8 || r.Missing == nil || *r.Missing != (activity.Range{From: 8, To: 10}) ||
		!strings.Contains(r.Problem, "entries 8–10 are missing") || !strings.Contains(r.Problem, "deleted") || r.PossibleCrash {
		t.Fatalf("the last 3 entries deleted: %+v", r)
	}
}

func testAnchorRestart(t *testing.T, s switchboard.Store, tamper Tamper) {
	ctx := context.Background()
	dir := t.TempDir()
	l, a := anchoredLedger(t, s, dir)
	appendEntries(t, l, 6)
	must(t, a.Close()) // the daemon stops: its checkpoint names entry 6
	// Restarting over an untouched ledger records nothing.
	l, a = anchoredLedger(t, s, dir)
	verifyOK(t, l, 6)
	appendEntries(t, l, 4)
	must(t, a.Close())
	s = tamper(t, 8)
	l, _ = anchoredLedger(t, s, dir)
	r, err := l.Verify(ctx)
	must(t, err)
	// Entries 8-10 went; the start recorded that as the next entry (8 on
	// a store that numbers entries by their place on one chain, 11 on one
	// that draws ids from a sequence and never reuses one).
	if !r.OK || r.Entries != 8 || (r.HeadID != 8 && r.HeadID != 11) || len(r.Gaps) != 1 ||
		r.Gaps[0] != (activity.Gap{Entry: r.HeadID, Missing: r.Gaps[0].Missing, Cause: activity.CauseUnexplained}) ||
		r.Gaps[0].Missing == nil || *r.Gaps[0].Missing != (activity.Range{From: 8, To: 10}) {
		t.Fatalf("after a restart over a cut ledger: %+v", r)
	}
	e, err := l.Get(ctx, r.HeadID)
	must(t, err)
	var d struct {
		Checkpoint struct{ Seq int64 } `json:"checkpoint"`
		HeadID     int64               `json:"headId"`
	}
	must(t, json.Unmarshal(e.Details, &d))
	if e.Verb != activity.VerbLedgerRollback || e.Actor != "system" || d.Checkpoint.Seq != 10 || d.HeadID != 7 {
		t.Fatalf("rollback entry %+v %s", e, e.Details)
	}
}

func testAnchorOperator(t *testing.T, s switchboard.Store, tamper Tamper) {
	ctx := context.Background()
	dir := t.TempDir()
	l, _ := anchoredLedger(t, s, dir)
	appendEntries(t, l, 5)
	cp, err := l.Checkpoint(ctx)
	must(t, err)
	if cp.Seq != 5 || cp.MAC == "" {
		t.Fatalf("exported checkpoint %+v", cp)
	}
	appendEntries(t, l, 2)
	if r, err := l.VerifyCheckpoint(ctx, cp); err != nil || !r.OK {
		t.Fatalf("the exported checkpoint on an untouched ledger: %+v %v", r, err)
	}
	forged := cp
	forged.Seq = 3
	if r, _ := l.VerifyCheckpoint(ctx, forged); r.OK || !strings.Contains(r.Problem, "signature") {
		t.Fatalf("a checkpoint edited by hand: %+v", r)
	}
	noted := switchboard.LedgerCheckpoint{Seq: cp.Seq, Hash: cp.Hash} // headId and headHash of a verify, kept unsigned
	if r, err := l.VerifyCheckpoint(ctx, noted); err != nil || !r.OK {
		t.Fatalf("an unsigned checkpoint on an untouched ledger: %+v %v", r, err)
	}
	noted.Hash = strings.Repeat("0", 64)
	if r, _ := l.VerifyCheckpoint(ctx, noted); r.OK || r.BadID != 5 {
		t.Fatalf("an unsigned checkpoint of another ledger: %+v", r)
	}
	// Cut back to entry 3 and restart, losing the daemon's own checkpoint
	// as an attacker with the data root would: the operator's still fails.
	s = tamper(t, 4)
	l2, err := activity.New(ctx, s, &activity.Options{Anchor: mustAnchor(t, dir)})
	must(t, err)
	r, err := l2.VerifyCheckpoint(ctx, cp)
	must(t, err)
	if r.OK || r.Missing == nil || r.Missing.From != 4 || !strings.Contains(r.Problem, "operator checkpoint") {
		t.Fatalf("operator checkpoint after the tail was cut: %+v", r)
	}
}

func mustAnchor(t *testing.T, dir string) *activity.Anchor {
	t.Helper()
	a, err := activity.OpenAnchor(dir, nil)
	must(t, err)
	return a
}
