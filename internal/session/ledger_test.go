package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard"
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

// Whoever ends a browser call writes its outcome and its ledger entry in
// one transaction — the tab's answer (the broker's Complete), the caller
// going away (the broker), and an answer that reaches a replica where
// nobody waits (the entry is then built from the record alone).
func TestEndingACallWritesItsLedgerEntry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	details := func(e switchboard.ActivityEntry) (d struct {
		InvocationID string             `json:"invocationId"`
		Status       switchboard.Status `json:"status"`
	}) {
		if err := json.Unmarshal(e.Details, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}

	// The tab answers.
	inv, done := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
	req := request(t, next(t, conn))
	if _, err := f.result(c.SessionID, req.RunID, inv.ID, ok(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.err != nil || got.inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("call: %+v %v", got.inv, got.err)
	}
	es := f.entries()
	if len(es) != 1 || es[0].Hash == "" || details(es[0]).InvocationID != inv.ID || details(es[0]).Status != switchboard.StatusSucceeded {
		t.Fatalf("ledger %+v; want the call's one entry", es)
	}

	// The caller goes away: CANCELLED, with its entry.
	cctx, cancel := context.WithCancel(f.ctx)
	inv, done = f.callCtx(cctx, "nav.goto", c.SessionID, `{"page":"b"}`)
	request(t, next(t, conn))
	cancel()
	if got := <-done; got.inv.Status != switchboard.StatusCancelled {
		t.Fatalf("call: %+v %v", got.inv, got.err)
	}
	if es := f.entries(); len(es) != 2 || details(es[1]).InvocationID != inv.ID || details(es[1]).Status != switchboard.StatusCancelled {
		t.Fatalf("ledger after the cancel: %+v", es)
	}

	// A result where nobody waits for it (another replica's call).
	inv, _ = f.dispatch("nav.goto", c.SessionID, "", `{"page":"c"}`)
	if _, err := f.result(c.SessionID, runPath(inv.RunID), inv.ID, ok(`1`)); err != nil {
		t.Fatal(err)
	}
	es = f.entries()
	if len(es) != 3 || es[2].Target != "nav.goto" || string(es[2].Provenance) != `{"derivedFrom":"site-html"}` {
		t.Fatalf("ledger after a result nobody awaited: %+v", es)
	}
	if d := details(es[2]); d.InvocationID != inv.ID || d.Status != switchboard.StatusSucceeded {
		t.Fatalf("its details: %s", es[2].Details)
	}
}
