package session

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// An event sent on a replica that does not hold the tab's stream reaches
// the stream where it is, in the one log of that stream: its ids follow
// the holder's own, a resume with Last-Event-ID replays it once, and an
// event too large for the bus is refused, not lost.
func TestReplicasSendReachesTheStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, b, c := r.m[0], r.m[1], r.m[2]
		cr, err := a.Create(r.ctx, "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		id := cr.SessionID
		conn, err := a.Attach(r.ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		// c sends before a's announcement arrived: the store says where
		// the stream is.
		if err := c.Send(r.ctx, id, "app.first", []byte(`{"n":1}`)); err != nil {
			t.Fatalf("send on c right after the attach: %v", err)
		}
		synctest.Wait() // a's announcement reaches b
		if err := b.Send(r.ctx, id, "approval.request", []byte(`{"n":2}`)); err != nil {
			t.Fatalf("send on b: %v", err)
		}
		// SendHere is for a replica telling the tabs it holds: b holds none.
		wantCode(t, b.SendHere(r.ctx, id, "app.not", nil), switchboard.CodeSessionGone)
		if err := a.Send(r.ctx, id, "app.third", []byte(`{"n":3}`)); err != nil {
			t.Fatalf("send on a: %v", err)
		}
		var ids []string
		for i, want := range []string{"app.first", "approval.request", "app.third"} {
			ev := next(t, conn)
			if ev.Kind != want || ev.ID == "" || !strings.Contains(string(ev.Data), `"n":`+string(rune('1'+i))) {
				t.Fatalf("event %d on a's stream: %+v, want %s", i, ev, want)
			}
			ids = append(ids, ev.ID)
		}
		if ids[0] == ids[1] || ids[1] == ids[2] {
			t.Fatalf("event ids %v are not one sequence", ids)
		}

		// The stream drops and resumes after the first event: the two
		// later ones come again, once, under the same ids.
		conn.Close()
		again, err := a.Attach(r.ctx, id, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range ids[1:] {
			if ev := next(t, again); ev.ID != want {
				t.Fatalf("replayed event %d: %+v, want id %s", i, ev, want)
			}
		}
		if ev, ok := again.Next(); ok {
			t.Fatalf("replayed more than the two unseen events: %+v", ev)
		}

		// Too large to cross: refused with a code, nothing queued on a.
		big := []byte(`{"x":"` + strings.Repeat("x", bus.MaxPayload) + `"}`)
		wantCode(t, b.Send(r.ctx, id, "app.big", big), switchboard.CodePayloadTooLarge)
		if err := a.Send(r.ctx, id, "app.big", big); err != nil {
			t.Fatalf("the same event on the replica holding the stream: %v", err)
		}
		if ev := next(t, again); ev.Kind != "app.big" {
			t.Fatalf("after the refused relay: %+v, want only a's own app.big", ev)
		}

		// A session no replica holds is SESSION_GONE everywhere.
		gone, err := b.Create(r.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.m {
			wantCode(t, m.Send(r.ctx, gone.SessionID, "app.x", nil), switchboard.CodeSessionGone)
		}
		if err := c.Close(r.ctx, id); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantCode(t, b.Send(r.ctx, id, "app.late", nil), switchboard.CodeSessionGone)
	})
}

// A run bound on replica c to a tab whose stream replica a holds sends its
// browser calls there; when the tab's stream moves from the run's own
// replica to another, the run's calls follow it.
func TestReplicasBindRunElsewhere(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, b, c := r.m[0], r.m[1], r.m[2]
		// Two tabs advertise the tool, so an unbound call is ambiguous.
		var ids []string
		var conns []*Conn
		for _, m := range []*Manager{a, b} {
			cr, err := m.Create(r.ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			conn, err := m.Attach(r.ctx, cr.SessionID, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Advertise(r.ctx, cr.SessionID, []switchboard.Tool{navTool()}); err != nil {
				t.Fatal(err)
			}
			ids, conns = append(ids, cr.SessionID), append(conns, conn)
		}
		synctest.Wait()
		_, err := c.Resolve(r.ctx, "nav.goto", "", "run-c", nil)
		wantCode(t, err, switchboard.CodeInvalidInput)

		c.BindRun("run-c", ids[0])
		tg, err := c.Resolve(r.ctx, "nav.goto", "", "run-c", nil)
		if err != nil || tg.SessionID != ids[0] {
			t.Fatalf("the run bound on c to a's tab resolves %+v %v", tg, err)
		}
		inv, done := callOn(t, r.ctx, r.b[2], broker.CallRequest{Tool: "nav.goto", SessionID: ids[0], RunID: "run-c", Input: []byte(`{"page":"media"}`), Caller: &operator})
		if req := request(t, next(t, conns[0])); req.InvocationID != inv.ID || req.RunID != "run-c" {
			t.Fatalf("a's tab got %+v", req)
		}
		if _, err := r.answer(0, ids[0], "run-c", inv.ID, ok(`{"url":"/media"}`)); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.inv.Status != switchboard.StatusSucceeded {
			t.Fatalf("the run's call on c: %+v %v", got.inv, got.err)
		}

		// A call naming a run of another replica, with no binding here,
		// goes to the run's stored tab (wherever its stream is).
		rec := switchboard.RunRecord{RunInfo: switchboard.RunInfo{RunID: "run-stored", ThreadID: "t", SessionID: ids[0],
			Status: switchboard.RunRunning, Harness: "loop", CreatedAt: time.Now()}, Replica: "replica-c"}
		if err := r.store.RunCreate(r.ctx, rec); err != nil {
			t.Fatal(err)
		}
		tg, err = b.Resolve(r.ctx, "nav.goto", "", "run-stored", nil)
		if err != nil || tg.SessionID != ids[0] {
			t.Fatalf("a call on b naming c's run resolves %+v %v", tg, err)
		}

		// A run bound on b to b's own tab; the tab's stream moves to c.
		b.BindRun("run-b", ids[1])
		conns[1].Close()
		if _, err := c.Attach(r.ctx, ids[1], ""); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // b lets the tab go; c announces it
		if b.Connected(ids[1]) {
			t.Fatal("b still holds the tab that moved to c")
		}
		tg, err = b.Resolve(r.ctx, "nav.goto", "", "run-b", nil)
		if err != nil || tg.SessionID != ids[1] {
			t.Fatalf("the run on b after its tab moved to c resolves %+v %v", tg, err)
		}

		// A tab that is nowhere binds nothing: the run's calls choose as
		// unbound ones do.
		nowhere, err := a.Create(r.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		c.BindRun("run-nowhere", nowhere.SessionID)
		_, err = c.Resolve(r.ctx, "nav.goto", "", "run-nowhere", nil)
		wantCode(t, err, switchboard.CodeInvalidInput) // two tabs: ambiguous, not SESSION_GONE
	})
}
