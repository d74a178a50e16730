package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

// testInvocationCreateFinished checks InvocationCreateFinished: a terminal
// record and its ledger entry land together, an existing id writes
// nothing, bad input is refused before anything is written, and
// concurrent writers keep one unforked chain.
func testInvocationCreateFinished(t *testing.T, s switchboard.Store) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, switchboard.Store)
	}{
		{"Lands", testCreateFinishedLands},
		{"ConflictAppendsNothing", testCreateFinishedConflict},
		{"Rejects", testCreateFinishedRejects},
		{"Race", testCreateFinishedRace},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, s) })
	}
}

func testCreateFinishedLands(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.ActivityAppend(ctx, entry(0))) // continues an existing chain
	before := listAll(t, s)
	done := finished(invocation("cf-lands", switchboard.StatusDispatched), 800*time.Microsecond, `{"rows": [1, 2]}`)
	e := callEntry(done)
	want := *e
	must(t, s.InvocationCreateFinished(ctx, done, e))
	got, err := s.InvocationGet(ctx, done.ID)
	must(t, err)
	wantInvocation(t, done, got)

	all := listAll(t, s)
	if len(all) != len(before)+1 {
		t.Fatalf("ledger grew from %d to %d entries, want one more", len(before), len(all))
	}
	last := all[len(all)-1]
	if diff := cmp.Diff(last, *e); diff != "" {
		t.Fatalf("InvocationCreateFinished did not fill e with the stored entry (-stored +e):\n%s", diff)
	}
	want.ID, want.Chain, want.Seq, want.PrevHash, want.Hash, want.Ts = last.ID, last.Chain, last.Seq, prevOnChain(before, last), last.Hash, micro(want.Ts)
	if diff := cmp.Diff(want, last); diff != "" {
		t.Fatalf("stored entry (-want +got):\n%s", diff)
	}
	// A record created finished is terminal: a late compare-and-swap from
	// an in-flight state loses.
	late := done
	late.Status = switchboard.StatusTimedOut
	_, err = s.InvocationFinish(ctx, late, callEntry(late), switchboard.InFlight...)
	wantCode(t, err, switchboard.CodeConflict)
	if err := verifyChain(listAll(t, s)); err != nil {
		t.Fatal(err)
	}
}

// testCreateFinishedConflict: an id that exists (finished or in flight)
// is CONFLICT; nothing is appended, e is untouched, the stored record is
// unchanged, and the chain continues from its real head afterwards.
func testCreateFinishedConflict(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	first := finished(invocation("cf-conflict", switchboard.StatusDispatched), time.Millisecond, `{"first": true}`)
	must(t, s.InvocationCreateFinished(ctx, first, callEntry(first)))
	inflight := invocation("cf-inflight", switchboard.StatusDispatched)
	must(t, s.InvocationCreate(ctx, inflight))
	before := listAll(t, s)

	for _, tc := range []struct {
		id   string
		want switchboard.Invocation
	}{{first.ID, first}, {inflight.ID, stored(inflight)}} {
		again := finished(invocation(tc.id, switchboard.StatusDispatched), 2*time.Millisecond, `{"second": true}`)
		e := callEntry(again)
		untouched := *e
		wantCode(t, s.InvocationCreateFinished(ctx, again, e), switchboard.CodeConflict)
		if diff := cmp.Diff(untouched, *e); diff != "" {
			t.Fatalf("a refused create changed e (-before +after):\n%s", diff)
		}
		got, err := s.InvocationGet(ctx, tc.id)
		must(t, err)
		wantInvocation(t, tc.want, got)
	}
	if after := listAll(t, s); len(after) != len(before) {
		t.Fatalf("refused creates appended: %d entries, then %d", len(before), len(after))
	}
	next := entry(1)
	must(t, s.ActivityAppend(ctx, next))
	all := listAll(t, s)
	if len(all) != len(before)+1 || next.PrevHash != before[len(before)-1].Hash {
		t.Fatalf("append after refused creates: %d entries, prevHash %q; want %d after %q",
			len(all), next.PrevHash, len(before)+1, before[len(before)-1].Hash)
	}
	if err := verifyChain(all); err != nil {
		t.Fatal(err)
	}
}

// testCreateFinishedRejects: a status that is not terminal, a missing
// entry or a broken one, and a cancelled context are refused, and neither
// the record nor an entry is written.
func testCreateFinishedRejects(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	before := len(listAll(t, s))
	done := finished(invocation("cf-rejects", switchboard.StatusDispatched), time.Millisecond, `{}`)
	running := invocation("cf-rejects", switchboard.StatusDispatched)
	wantCode(t, s.InvocationCreateFinished(ctx, running, callEntry(running)), switchboard.CodeInvalidInput)
	bad := callEntry(done)
	bad.Details = json.RawMessage(`{"broken":`)
	wantCode(t, s.InvocationCreateFinished(ctx, done, bad), switchboard.CodeInvalidInput)
	wantCode(t, s.InvocationCreateFinished(ctx, done, nil), switchboard.CodeInvalidInput)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	wantCode(t, s.InvocationCreateFinished(cctx, done, callEntry(done)), switchboard.CodeCancelled)
	_, err := s.InvocationGet(ctx, done.ID)
	wantCode(t, err, switchboard.CodeNotFound)
	if n := len(listAll(t, s)) - before; n != 0 {
		t.Fatalf("refused creates appended %d entries", n)
	}
}

// testCreateFinishedRace: many writers at once, each creating finished
// records while others append plain entries and finish in-flight records:
// every record lands with exactly its one entry, and the chain does not
// fork.
func testCreateFinishedRace(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	const writers, each = 8, 4
	before := len(listAll(t, s))
	for w := range writers {
		for i := range each {
			must(t, s.InvocationCreate(ctx, invocation(fmt.Sprintf("cf-race-open-%d-%d", w, i), switchboard.StatusDispatched)))
		}
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, 3*writers*each)
		ents  sync.Map // entry id → invocation id
	)
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range each {
				done := finished(invocation(fmt.Sprintf("cf-race-%d-%d", w, i), switchboard.StatusDispatched), time.Millisecond, `1`)
				e := callEntry(done)
				if err := s.InvocationCreateFinished(ctx, done, e); err != nil {
					errs <- err
					continue
				}
				ents.Store(e.ID, done.ID)
				open := finished(invocation(fmt.Sprintf("cf-race-open-%d-%d", w, i), switchboard.StatusDispatched), time.Millisecond, `2`)
				fe := callEntry(open)
				if _, err := s.InvocationFinish(ctx, open, fe, switchboard.InFlight...); err != nil {
					errs <- err
					continue
				}
				ents.Store(fe.ID, open.ID)
				if err := s.ActivityAppend(ctx, entry(i)); err != nil {
					errs <- err
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all := listAll(t, s)
	if err := verifyChain(all); err != nil {
		t.Fatal(err)
	}
	if n, want := len(all)-before, 3*writers*each; n != want {
		t.Fatalf("ledger grew by %d entries, want %d", n, want)
	}
	for _, e := range all[before:] {
		id, ok := ents.Load(e.ID)
		if !ok {
			continue // a plain append
		}
		var d struct {
			InvocationID string `json:"invocationId"`
		}
		if err := json.Unmarshal(e.Details, &d); err != nil || d.InvocationID != id {
			t.Fatalf("entry %d names invocation %q, want %v (%v)", e.ID, d.InvocationID, id, err)
		}
		got, err := s.InvocationGet(ctx, id.(string))
		must(t, err)
		if got.Status != switchboard.StatusSucceeded {
			t.Fatalf("invocation %s is %s after its entry landed", got.ID, got.Status)
		}
	}
}
