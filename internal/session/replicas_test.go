package session

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/sqlite"
)

// replicas is three Managers on one store and one bus, each announcing its
// tabs (Options.Presence): three serve replicas in one process, with every
// request of a tab free to reach any of them.
type replicas struct {
	t     *testing.T
	ctx   context.Context
	store *sqlite.Store
	m     [3]*Manager
	b     [3]*broker.Broker // each replica's broker, over its Manager
}

func newReplicas(t *testing.T) *replicas {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewLocal()
	r := &replicas{t: t, ctx: ctx, store: st}
	for i := range r.m {
		id := "replica-" + string(rune('a'+i))
		if err := st.ReplicaRegister(ctx, switchboard.Replica{ID: id, Name: id, StartedAt: time.Now(), HeartbeatAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		m, err := New(Options{Store: st, Bus: b, Presence: true, Replica: id, Heartbeat: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r.m[i], r.b[i] = m, newBroker(t, st, b, m, time.Hour)
	}
	t.Cleanup(func() {
		for _, m := range r.m {
			m.Shutdown()
		}
		st.Close()
	})
	return r
}

// answer posts a tab's answer to replica i, as its return path does.
func (r *replicas) answer(i int, sessionID, runID, invID string, res switchboard.BrowserActionResult) (switchboard.Invocation, error) {
	return answer(r.ctx, r.b[i], r.m[i], broker.Answer{SessionID: sessionID, RunID: runID, InvocationID: invID, Result: res})
}

// until waits for cond on m, re-checking whenever m's live tools may have
// changed (its own tabs, or another replica's announcement).
func until(t *testing.T, m *Manager, what string, cond func() bool) {
	t.Helper()
	ch := make(chan struct{}, 1)
	stop := m.SubscribeTools(ch)
	defer stop()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s: not within a minute", what)
		}
	}
}

func toolNames(tools []switchboard.Tool) []string {
	out := []string{}
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// A tab's advertisement PUT on replica b, its stream on replica a and a
// call made on replica c: the call reaches the tab, the tab's result
// POSTed on b answers it, and a new advertisement on b is what a serves
// and c offers.
func TestReplicasAdvertisementStreamAndCallApart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, b, c := r.m[0], r.m[1], r.m[2]
		cr, err := c.Create(r.ctx, "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		id := cr.SessionID
		if _, err := b.Advertise(r.ctx, id, []switchboard.Tool{navTool()}); err != nil {
			t.Fatal(err)
		}
		if info, err := c.Info(r.ctx, id); err != nil || info.State != switchboard.TabConnecting || len(info.Tools) != 1 {
			t.Fatalf("advertised on b, no stream yet, seen from c: %+v %v", info, err)
		}
		conn, err := a.Attach(r.ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := a.Tools(r.ctx, id); !slices.Equal(toolNames(got), []string{"nav.goto"}) {
			t.Fatalf("a, holding the stream, serves %v; want the advertisement stored through b", toolNames(got))
		}

		tg, err := c.Resolve(r.ctx, "nav.goto", id, "", nil)
		if err != nil || tg.SessionID != id {
			t.Fatalf("resolve on c of the tab attached to a: %+v %v", tg, err)
		}
		inv, done := callOn(t, r.ctx, r.b[2], broker.CallRequest{Tool: "nav.goto", SessionID: id, RunID: "run-1", Input: []byte(`{"page":"media"}`), Caller: &operator})
		req := request(t, next(t, conn))
		if req.InvocationID != inv.ID {
			t.Fatalf("the tab on a got %s, want %s", req.InvocationID, inv.ID)
		}
		if _, err := r.answer(1, id, "run-1", inv.ID, ok(`{"url":"/media"}`)); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.err != nil || got.inv.Status != switchboard.StatusSucceeded || string(got.inv.Result) != `{"url":"/media"}` {
			t.Fatalf("the caller on c: %+v %v", got.inv, got.err)
		}

		// A new advertisement through b: a serves it, c offers it.
		if _, err := b.Advertise(r.ctx, id, []switchboard.Tool{navTool(), scrollTool()}); err != nil {
			t.Fatal(err)
		}
		// A call naming the tab right after the PUT resolves on every
		// replica, whether or not the news has reached it (the store has it).
		for i, m := range r.m {
			if tg, err := m.Resolve(r.ctx, "ui.scroll_to", id, "", nil); err != nil || tg.Output == nil {
				t.Fatalf("replica %d resolves the tool advertised a moment ago: %+v %v", i, tg, err)
			}
		}
		until(t, a, "a reloads the advertisement stored through b", func() bool {
			got, _ := a.Tools(r.ctx, id)
			return len(got) == 2
		})
		until(t, c, "c offers the tab's new tools", func() bool {
			return slices.Equal(toolNames(c.LiveTools()), []string{"nav.goto", "ui.scroll_to"})
		})
		if tl, ok := c.LiveTool("ui.scroll_to"); !ok || tl.Origin.SessionID != id {
			t.Fatalf("c finds the tab's tool by name: %+v %v", tl, ok)
		}
		// Every replica lists and shows the tab the same way.
		synctest.Wait()
		for i, m := range r.m {
			list, err := m.List(r.ctx)
			if err != nil || len(list) != 1 || list[0].ID != id || list[0].State != switchboard.TabConnected ||
				list[0].Replica != "replica-a" || len(list[0].Tools) != 2 || list[0].User != "user:alice" {
				t.Fatalf("replica %d lists %+v %v", i, list, err)
			}
			info, err := m.Info(r.ctx, id)
			if err != nil || info.State != switchboard.TabConnected || info.Replica != "replica-a" {
				t.Fatalf("replica %d shows %+v %v", i, info, err)
			}
		}
	})
}

// A call on another replica in the instant after a tab attaches, before
// the holder's announcement arrives, waits for it instead of answering
// SESSION_GONE: the store already says where the stream is.
func TestReplicasCallRightAfterAttachWaits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, c := r.m[0], r.m[2]
		cr, err := a.Create(r.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		id := cr.SessionID
		if _, err := a.Advertise(r.ctx, id, []switchboard.Tool{navTool()}); err != nil {
			t.Fatal(err)
		}
		// The stream's attach is recorded, its announcement not yet heard.
		if err := r.store.SessionStream(r.ctx, id, "replica-a", true, time.Now()); err != nil {
			t.Fatal(err)
		}
		type resolved struct {
			tg  broker.Target
			err error
		}
		done := make(chan resolved, 1)
		go func() {
			tg, err := c.Resolve(r.ctx, "nav.goto", id, "", nil)
			done <- resolved{tg, err}
		}()
		synctest.Wait()
		select {
		case got := <-done:
			t.Fatalf("resolve on c answered before a announced the tab: %+v %v", got.tg, got.err)
		default:
		}
		if _, err := a.Attach(r.ctx, id, ""); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.err != nil || got.tg.SessionID != id {
			t.Fatalf("resolve on c once a announced the tab: %+v %v", got.tg, got.err)
		}

		// With no announcement at all (its replica hangs), the wait is
		// bounded and the answer is SESSION_GONE; a stream recorded on a
		// replica that stopped (or was never registered) is not waited for.
		cr2, err := a.Create(r.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := r.store.ReplicaRegister(r.ctx, switchboard.Replica{ID: "replica-hung", Name: "hung", StartedAt: time.Now(), HeartbeatAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, holder := range []string{"replica-hung", "replica-stopped", "replica-unknown"} {
			if holder == "replica-stopped" {
				if err := r.store.ReplicaRegister(r.ctx, switchboard.Replica{ID: holder, Name: holder, StartedAt: time.Now(), HeartbeatAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
				if err := r.store.ReplicaStop(r.ctx, holder, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.store.SessionStream(r.ctx, cr2.SessionID, holder, true, time.Now()); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = c.Resolve(r.ctx, "nav.goto", cr2.SessionID, "", nil)
			wantCode(t, err, switchboard.CodeSessionGone)
			want := time.Duration(0)
			if holder == "replica-hung" {
				want = attachWait
			}
			if waited := time.Since(start); waited != want {
				t.Fatalf("stream on %s: waited %s, want %s", holder, waited, want)
			}
		}
	})
}

// Ending a session on a replica that does not hold its stream ends the
// stream where it is, and every replica then shows it closed.
func TestReplicasCloseReachesTheStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, b := r.m[0], r.m[1]
		cr, err := a.Create(r.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := a.Attach(r.ctx, cr.SessionID, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(r.ctx, cr.SessionID); err != nil {
			t.Fatal(err)
		}
		<-conn.Done()
		wantCode(t, conn.Err(), switchboard.CodeSessionGone)
		synctest.Wait() // the replicas hear that a's tab is gone
		for i, m := range r.m {
			info, err := m.Info(r.ctx, cr.SessionID)
			if err != nil || info.State != switchboard.TabClosed {
				t.Fatalf("replica %d after the close: %+v %v", i, info, err)
			}
			if list, _ := m.List(r.ctx); len(list) != 0 {
				t.Fatalf("replica %d still lists %+v", i, list)
			}
		}
	})
}

// A tab whose stream reconnects to another replica (the load balancer sent
// it elsewhere) is held there: the replica it left lets it go quietly —
// calls waiting on it are not failed — and the calls still dispatched to
// it are delivered on the new stream.
func TestReplicasStreamMoves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, b, c := r.m[0], r.m[1], r.m[2]
		cr, err := a.Create(r.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		id := cr.SessionID
		connA, err := a.Attach(r.ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Advertise(r.ctx, id, []switchboard.Tool{navTool()}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		_, err = c.Resolve(r.ctx, "nav.goto", id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		inv, done := callOn(t, r.ctx, r.b[2], broker.CallRequest{Tool: "nav.goto", SessionID: id, RunID: "run-1", Input: []byte(`{"page":"media"}`), Caller: &operator})
		first := request(t, next(t, connA))
		connA.Close() // the network blinks before the tab answers

		connB, err := b.Attach(r.ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		again := request(t, next(t, connB))
		if again.InvocationID != first.InvocationID {
			t.Fatalf("the stream on b got %s, want the open call %s", again.InvocationID, first.InvocationID)
		}
		if got, _ := b.Tools(r.ctx, id); len(got) != 1 {
			t.Fatalf("b serves %v, want the stored advertisement", got)
		}
		// Past a's reconnect and keep windows, the caller is still waiting.
		time.Sleep(time.Hour - time.Minute)
		synctest.Wait()
		select {
		case got := <-done:
			t.Fatalf("the call ended while the tab was held by b: %+v %v", got.inv, got.err)
		default:
		}
		if _, err := r.answer(0, id, "run-1", inv.ID, ok(`{"url":"/media"}`)); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.inv.Status != switchboard.StatusSucceeded {
			t.Fatalf("the caller on c: %+v %v", got.inv, got.err)
		}
		for i, m := range r.m {
			if info, err := m.Info(r.ctx, id); err != nil || info.State != switchboard.TabConnected || info.Replica != "replica-b" {
				t.Fatalf("replica %d shows %+v %v", i, info, err)
			}
		}
	})
}

// ShowsPanels: a connected tab whose renderer attached, here or on another
// replica. MarkPanels tells the tool watchers at once (MCP clients hear
// list_changed: the panel tools are offered now), and a tab leaving ends
// it everywhere.
func TestShowsPanelsHereAndOnOtherReplicas(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, b := r.m[0], r.m[1]
		cr, err := a.Create(r.ctx, "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := a.Attach(r.ctx, cr.SessionID, "")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if a.ShowsPanels() || b.ShowsPanels() {
			t.Fatal("a tab without a renderer shows panels")
		}
		ch := make(chan struct{}, 1)
		stop := a.SubscribeTools(ch)
		defer stop()
		a.MarkPanels(cr.SessionID)
		select {
		case <-ch:
		default:
			t.Fatal("MarkPanels did not tell the tool watchers")
		}
		if !a.ShowsPanels() {
			t.Fatal("a: the renderer attached, and ShowsPanels is false")
		}
		until(t, b, "b hears of the renderer", b.ShowsPanels)
		conn.Close()
		if a.ShowsPanels() {
			t.Fatal("a: the tab left, and ShowsPanels is true")
		}
		until(t, b, "b hears the tab left", func() bool { return !b.ShowsPanels() })
	})
}

// A replica that dies (here: shut down, its row left as a kill leaves it)
// held a tab's stream. Once a survivor claimed it, ReplicaGone ends the
// call another replica delivered to that tab SESSION_GONE at once, and
// after the keep window announces the tab gone to the watchers, unless the
// tab reattached meanwhile.
func TestReplicaGoneEndsCallsOnItsTabs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t)
		a, b, c := r.m[0], r.m[1], r.m[2]
		open := func() string {
			cr, err := c.Create(r.ctx, "user:alice")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Advertise(r.ctx, cr.SessionID, []switchboard.Tool{navTool()}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Attach(r.ctx, cr.SessionID, ""); err != nil {
				t.Fatal(err)
			}
			return cr.SessionID
		}
		lost, back := open(), open()
		synctest.Wait()
		inv, done := callOn(t, r.ctx, r.b[2], broker.CallRequest{Tool: "nav.goto", SessionID: lost, Input: []byte(`{"page":"media"}`), Caller: &operator})
		synctest.Wait()
		var mu sync.Mutex
		gone := map[string]bool{}
		seen := func() (bool, bool) {
			mu.Lock()
			defer mu.Unlock()
			return gone[lost], gone[back]
		}
		for _, id := range []string{lost, back} {
			if _, err := c.WatchGone(id, func() { mu.Lock(); gone[id] = true; mu.Unlock() }); err != nil {
				t.Fatal(err)
			}
		}
		a.Shutdown() // its streams end; the store still says they are a's
		n, err := b.ReplicaGone(r.ctx, "replica-a")
		if err != nil || n != 2 {
			t.Fatalf("ReplicaGone: %d %v, want both tabs", n, err)
		}
		got := <-done
		if got.inv.ID != inv.ID || got.inv.Status != switchboard.StatusFailed || got.inv.Error == nil || got.inv.Error.Code != switchboard.CodeSessionGone {
			t.Fatalf("the call on c to the dead replica's tab: %+v %v, want failed SESSION_GONE", got.inv, got.err)
		}
		// One tab reattaches to b within the keep window; the other does not.
		if _, err := b.Attach(r.ctx, back, ""); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if l, k := seen(); l || k {
			t.Fatalf("gone announced before the keep window: %v %v", l, k)
		}
		time.Sleep(b.opts.Grace + time.Second)
		synctest.Wait()
		if l, k := seen(); !l || k {
			t.Fatalf("after the keep window gone announced for the lost tab %v, the reattached one %v; want only the lost one", l, k)
		}
	})
}
