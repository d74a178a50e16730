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

// testInvocationFinish checks InvocationFinish: the swap and the entry land
// together, a failed swap appends nothing, and concurrent finishes keep one
// winner per record and one unforked chain.
func testInvocationFinish(t *testing.T, s switchboard.Store) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, switchboard.Store)
	}{
		{"Swap", testFinishSwap},
		{"ConflictAppendsNothing", testFinishConflict},
		{"Rejects", testFinishRejects},
		{"Race", testFinishRace},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, s) })
	}
}

// finished is inv moved to succeeded at base + d.
func finished(inv switchboard.Invocation, d time.Duration, result string) switchboard.Invocation {
	inv = stored(inv)
	inv.Status = switchboard.StatusSucceeded
	inv.Result = json.RawMessage(result)
	inv.ResultBytes = len(result)
	inv.UpdatedAt, inv.FinishedAt = micro(base.Add(d)), micro(base.Add(d))
	inv.DurationMs = float64(d.Microseconds()) / 1000
	return inv
}

// callEntry is the ledger entry of a finished call.
func callEntry(inv switchboard.Invocation) *switchboard.ActivityEntry {
	return &switchboard.ActivityEntry{
		Ts: inv.FinishedAt, Actor: "agent:alice", Verb: "tool.call", Target: inv.Tool,
		Details: json.RawMessage(fmt.Sprintf(`{"invocationId": %q, "status": %q}`, inv.ID, inv.Status)),
	}
}

func testFinishSwap(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.ActivityAppend(ctx, entry(0))) // the finish continues an existing chain
	before := listAll(t, s)
	inv := invocation("fin-swap", switchboard.StatusDispatched)
	must(t, s.InvocationCreate(ctx, inv))
	done := finished(inv, 1500*time.Microsecond, `{"ok": true}`)
	e := callEntry(done)
	want := *e
	got, err := s.InvocationFinish(ctx, done, e, switchboard.InFlight...)
	must(t, err)
	wantInvocation(t, done, got)
	if got, err = s.InvocationGet(ctx, inv.ID); err != nil {
		t.Fatal(err)
	}
	wantInvocation(t, done, got)

	all := listAll(t, s)
	if len(all) != len(before)+1 {
		t.Fatalf("ledger grew from %d to %d entries, want one more", len(before), len(all))
	}
	last := all[len(all)-1]
	if diff := cmp.Diff(last, *e); diff != "" {
		t.Fatalf("InvocationFinish did not fill e with the stored entry (-stored +e):\n%s", diff)
	}
	want.ID, want.Chain, want.Seq, want.PrevHash, want.Hash, want.Ts = last.ID, last.Chain, last.Seq, prevOnChain(before, last), last.Hash, micro(want.Ts)
	if diff := cmp.Diff(want, last); diff != "" {
		t.Fatalf("stored entry (-want +got):\n%s", diff)
	}
	if err := verifyChain(all); err != nil {
		t.Fatal(err)
	}
}

// testFinishConflict: a failed compare returns the current record with
// CONFLICT, appends nothing, leaves e untouched, and the chain continues
// from its real head afterwards.
func testFinishConflict(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	inv := invocation("fin-conflict", switchboard.StatusDispatched)
	must(t, s.InvocationCreate(ctx, inv))
	first := finished(inv, time.Millisecond, `{"first": true}`)
	if _, err := s.InvocationFinish(ctx, first, callEntry(first), switchboard.InFlight...); err != nil {
		t.Fatal(err)
	}
	before := listAll(t, s)

	late := stored(inv)
	late.Status = switchboard.StatusTimedOut
	late.Error = switchboard.Errorf(switchboard.CodeTimeout, "too late")
	late.UpdatedAt, late.FinishedAt = micro(base.Add(time.Second)), micro(base.Add(time.Second))
	e := callEntry(late)
	untouched := *e
	got, err := s.InvocationFinish(ctx, late, e, switchboard.InFlight...)
	wantCode(t, err, switchboard.CodeConflict)
	wantInvocation(t, first, got)
	if diff := cmp.Diff(untouched, *e); diff != "" {
		t.Fatalf("a failed finish changed e (-before +after):\n%s", diff)
	}
	if after := listAll(t, s); len(after) != len(before) {
		t.Fatalf("a failed finish appended: %d entries, then %d", len(before), len(after))
	}

	_, err = s.InvocationFinish(ctx, finished(invocation("fin-nope", switchboard.StatusDispatched), 0, `1`),
		callEntry(inv), switchboard.InFlight...)
	wantCode(t, err, switchboard.CodeNotFound)

	next := entry(1)
	must(t, s.ActivityAppend(ctx, next))
	all := listAll(t, s)
	if len(all) != len(before)+1 || next.PrevHash != before[len(before)-1].Hash {
		t.Fatalf("append after failed finishes: %d entries, prevHash %q; want %d after %q",
			len(all), next.PrevHash, len(before)+1, before[len(before)-1].Hash)
	}
	if err := verifyChain(all); err != nil {
		t.Fatal(err)
	}
}

// testFinishRejects: bad input is refused before anything is written, the
// record included.
func testFinishRejects(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	inv := invocation("fin-rejects", switchboard.StatusDispatched)
	must(t, s.InvocationCreate(ctx, inv))
	before := len(listAll(t, s))
	done := finished(inv, time.Millisecond, `{}`)
	bad := callEntry(done)
	bad.Details = json.RawMessage(`{"broken":`)
	_, err := s.InvocationFinish(ctx, done, bad, switchboard.InFlight...)
	wantCode(t, err, switchboard.CodeInvalidInput)
	_, err = s.InvocationFinish(ctx, done, nil, switchboard.InFlight...)
	wantCode(t, err, switchboard.CodeInvalidInput)
	_, err = s.InvocationFinish(ctx, done, callEntry(done))
	wantCode(t, err, switchboard.CodeInvalidInput)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.InvocationFinish(cctx, done, callEntry(done), switchboard.InFlight...)
	wantCode(t, err, switchboard.CodeCancelled)

	got, err := s.InvocationGet(ctx, inv.ID)
	must(t, err)
	wantInvocation(t, stored(inv), got)
	if n := len(listAll(t, s)) - before; n != 0 {
		t.Fatalf("refused finishes appended %d entries", n)
	}
}

// testFinishRace: goroutines race to finish the same records while others
// append plain entries. Each record has exactly one winner, whose entry is
// the only one for it; losers get the winner's record; the chain does not
// fork.
func testFinishRace(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	const records, racers, appenders = 4, 6, 2
	before := len(listAll(t, s))
	for r := range records {
		must(t, s.InvocationCreate(ctx, invocation(fmt.Sprintf("fin-race-%d", r), switchboard.StatusDispatched)))
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		recs  [records][racers]switchboard.Invocation
		errs  [records][racers]error
		ents  [records][racers]*switchboard.ActivityEntry
		aerrs = make(chan error, appenders*records)
	)
	for r := range records {
		for i := range racers {
			wg.Go(func() {
				inv := finished(invocation(fmt.Sprintf("fin-race-%d", r), switchboard.StatusDispatched),
					time.Duration(i+1)*time.Millisecond, fmt.Sprintf(`{"winner":%d}`, i))
				ents[r][i] = callEntry(inv)
				<-start
				recs[r][i], errs[r][i] = s.InvocationFinish(ctx, inv, ents[r][i], switchboard.InFlight...)
			})
		}
	}
	for a := range appenders {
		wg.Go(func() {
			<-start
			for i := range records {
				if err := s.ActivityAppend(ctx, entry(a*records+i)); err != nil {
					aerrs <- err
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(aerrs)
	for err := range aerrs {
		t.Fatal(err)
	}

	all := listAll(t, s)
	if err := verifyChain(all); err != nil {
		t.Fatal(err)
	}
	byID := map[int64]switchboard.ActivityEntry{}
	for _, e := range all {
		byID[e.ID] = e
	}
	if n, want := len(all)-before, records+appenders*records; n != want {
		t.Fatalf("ledger grew by %d entries, want %d (one per record, plus the plain appends)", n, want)
	}
	for r := range records {
		winner := -1
		for i, err := range errs[r] {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("record %d: racers %d and %d both won", r, winner, i)
			case err == nil:
				winner = i
			default:
				wantCode(t, err, switchboard.CodeConflict)
				if ents[r][i].ID != 0 || ents[r][i].Hash != "" {
					t.Fatalf("record %d: losing racer %d's entry was assigned id %d", r, i, ents[r][i].ID)
				}
			}
		}
		if winner < 0 {
			t.Fatalf("record %d: no racer won", r)
		}
		final, err := s.InvocationGet(ctx, fmt.Sprintf("fin-race-%d", r))
		must(t, err)
		for i := range recs[r] {
			wantInvocation(t, final, recs[r][i])
		}
		won := ents[r][winner]
		if stored, ok := byID[won.ID]; !ok || stored.Hash != won.Hash {
			t.Fatalf("record %d: the winner's entry %d is not in the ledger as returned", r, won.ID)
		}
	}
}
