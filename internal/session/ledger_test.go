package session

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// entries returns the whole ledger.
func (f *fixture) entries() []switchboard.ActivityEntry {
	f.t.Helper()
	es, err := f.store.ActivityList(f.ctx, switchboard.ActivityFilter{Limit: 1000})
	if err != nil {
		f.t.Fatal(err)
	}
	return es
}

// Issue 15 item 2: whoever ends a browser call writes its outcome and its
// ledger entry in one transaction — the tab's result, the caller going
// away, and a result that reaches a replica where nobody waits (the entry
// is then built from the record alone).
func TestEndingACallWritesItsLedgerEntry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())

	var mu sync.Mutex
	var observed []switchboard.ActivityEntry
	withLedger := func(inv switchboard.Invocation, tg *broker.Target) {
		tg.Entry = func(rec switchboard.Invocation) *switchboard.ActivityEntry {
			return &switchboard.ActivityEntry{Actor: "user:alice", Verb: "tool.call", Target: rec.Tool,
				Details: json.RawMessage(`{"invocationId":"` + rec.ID + `","status":"` + string(rec.Status) + `"}`)}
		}
		tg.Observe = func(e switchboard.ActivityEntry) {
			mu.Lock()
			observed = append(observed, e)
			mu.Unlock()
		}
	}

	// The tab answers.
	inv, tg := f.dispatch("nav.goto", c.SessionID, "", `{"page":"a"}`)
	withLedger(inv, &tg)
	done := f.await(f.ctx, inv, tg)
	req := request(t, next(t, conn))
	if _, err := f.m.Result(f.ctx, c.SessionID, req.RunID, inv.ID, ok(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.err != nil || got.inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("await: %+v %v", got.inv, got.err)
	}
	es := f.entries()
	if len(es) != 1 || len(observed) != 1 || observed[0].ID != es[0].ID || es[0].Hash == "" ||
		string(es[0].Details) != `{"invocationId":"`+inv.ID+`","status":"succeeded"}` {
		t.Fatalf("ledger %+v, observed %+v; want the call's one entry, observed once", es, observed)
	}

	// The caller goes away: CANCELLED, with its entry.
	inv, tg = f.dispatch("nav.goto", c.SessionID, "", `{"page":"b"}`)
	withLedger(inv, &tg)
	cctx, cancel := context.WithCancel(f.ctx)
	done = f.await(cctx, inv, tg)
	request(t, next(t, conn))
	cancel()
	if got := <-done; got.inv.Status != switchboard.StatusCancelled {
		t.Fatalf("await: %+v %v", got.inv, got.err)
	}
	if es := f.entries(); len(es) != 2 || string(es[1].Details) != `{"invocationId":"`+inv.ID+`","status":"cancelled"}` || len(observed) != 2 {
		t.Fatalf("ledger after the cancel: %+v", es)
	}

	// A result where nobody waits for it (another replica's call).
	inv, _ = f.dispatch("nav.goto", c.SessionID, "", `{"page":"c"}`)
	if _, err := f.m.Result(f.ctx, c.SessionID, runPath(inv.RunID), inv.ID, ok(`1`)); err != nil {
		t.Fatal(err)
	}
	es = f.entries()
	if len(es) != 3 || es[2].Target != "nav.goto" || string(es[2].Provenance) != `{"derivedFrom":"site-html"}` {
		t.Fatalf("ledger after a result nobody awaited: %+v", es)
	}
	var d struct {
		InvocationID string             `json:"invocationId"`
		Status       switchboard.Status `json:"status"`
	}
	if err := json.Unmarshal(es[2].Details, &d); err != nil || d.InvocationID != inv.ID || d.Status != switchboard.StatusSucceeded {
		t.Fatalf("its details: %s", es[2].Details)
	}
}
