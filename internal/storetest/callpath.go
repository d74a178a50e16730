package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// testCallPathConcurrent: many callers at once make the call path's writes
// (create then finish, create finished), some of which must fail on their
// own (a finished record created again, a finish of a record already
// finished), as the drivers' group commit puts concurrent writes in one
// transaction. Every caller gets its own outcome, every acknowledged write
// is stored with the entry its caller was told, the failed ones left
// nothing, and the chain is exact.
func testCallPathConcurrent(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	const writers, each = 8, 12
	type told struct {
		e  *switchboard.ActivityEntry
		ok bool
	}
	results := make([][]told, writers)
	errs := make(chan error, writers*each)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		results[w] = make([]told, each)
		wg.Go(func() {
			<-start
			for i := range each {
				id := fmt.Sprintf("cp-%d-%d", w, i)
				e := entry(w*each + i)
				e.Details = json.RawMessage(`{"invocationId":"` + id + `"}`)
				results[w][i].e = e
				inv := switchboard.Invocation{ID: id, Tool: "t", Status: switchboard.StatusDispatched, Input: json.RawMessage(`{}`)}
				switch i % 4 {
				case 0, 1: // create, then finish
					if err := s.InvocationCreate(ctx, inv); err != nil {
						errs <- fmt.Errorf("%s: create: %w", id, err)
						continue
					}
					inv.Status, inv.Result = switchboard.StatusSucceeded, json.RawMessage(`{"ok":true}`)
					if _, err := s.InvocationFinish(ctx, inv, e, switchboard.InFlight...); err != nil {
						errs <- fmt.Errorf("%s: finish: %w", id, err)
						continue
					}
					results[w][i].ok = true
					if i%4 == 1 { // finishing it again fails on its own, and appends nothing
						again := entry(1000)
						if _, err := s.InvocationFinish(ctx, inv, again, switchboard.InFlight...); switchboard.CodeOf(err) != switchboard.CodeConflict || again.ID != 0 {
							errs <- fmt.Errorf("%s: second finish: %v (entry id %d), want CONFLICT and nothing appended", id, err, again.ID)
						}
					}
				case 2: // created finished
					inv.Status = switchboard.StatusSucceeded
					if err := s.InvocationCreateFinished(ctx, inv, e); err != nil {
						errs <- fmt.Errorf("%s: create finished: %w", id, err)
						continue
					}
					results[w][i].ok = true
				case 3: // created finished twice: the second is a CONFLICT and appends nothing
					inv.Status = switchboard.StatusSucceeded
					if err := s.InvocationCreateFinished(ctx, inv, e); err != nil {
						errs <- fmt.Errorf("%s: create finished: %w", id, err)
						continue
					}
					results[w][i].ok = true
					dup := entry(1001)
					if err := s.InvocationCreateFinished(ctx, inv, dup); switchboard.CodeOf(err) != switchboard.CodeConflict || dup.ID != 0 {
						errs <- fmt.Errorf("%s: created again: %v (entry id %d), want CONFLICT and nothing appended", id, err, dup.ID)
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	all := listAll(t, s)
	if err := verifyChain(all); err != nil {
		t.Fatal(err)
	}
	byID := map[int64]switchboard.ActivityEntry{}
	for _, e := range all {
		byID[e.ID] = e
	}
	n := 0
	for w := range results {
		for i, r := range results[w] {
			if !r.ok {
				continue
			}
			n++
			got, ok := byID[r.e.ID]
			if !ok || got.Hash != r.e.Hash || got.Target != r.e.Target {
				t.Fatalf("writer %d call %d was told entry %d (%s), the ledger has %+v", w, i, r.e.ID, r.e.Target, got)
			}
			inv, err := s.InvocationGet(ctx, fmt.Sprintf("cp-%d-%d", w, i))
			if err != nil || inv.Status != switchboard.StatusSucceeded {
				t.Fatalf("writer %d call %d: record %+v, %v", w, i, inv, err)
			}
		}
	}
	if len(all) != n {
		t.Fatalf("%d entries for %d acknowledged writes: a failed write left one", len(all), n)
	}
}
