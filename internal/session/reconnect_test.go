package session

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboardhq/switchboard"
)

// A tab whose stream drops stops being offered at once; a call waiting on
// it fails with SESSION_GONE when the reconnect window passes (not the keep
// window, not its timeout); the session is still kept, so the tab resumes
// with its tools when it comes back within the keep window, and the failed
// call's request is not run then.
func TestReconnectWindowFailsCallsKeepWindowResumes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Heartbeat: 15 * time.Second, Reconnect: 5 * time.Second}, time.Hour)
		a, connA := f.live(navTool())
		b, _ := f.live(navTool())
		var gone atomic.Int32
		cancelWatch, err := f.m.WatchGone(a.SessionID, func() { gone.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		defer cancelWatch()
		_, done := f.call("nav.goto", a.SessionID, `{"page":"a"}`)
		next(t, connA)

		start := time.Now()
		connA.Close() // killed without pagehide: the stream just ends
		if info, _ := f.m.Info(f.ctx, a.SessionID); info.State != switchboard.TabReconnecting || info.Connected || !info.ExpiresAt.Equal(start.Add(30*time.Second)) {
			t.Fatalf("right after the drop: %+v", info)
		}
		for _, tl := range f.m.LiveTools() {
			if tl.Origin.SessionID == a.SessionID {
				t.Fatal("a dropped tab's tools are still offered")
			}
		}
		// Looked up by name (the call metrics' class), only b offers it.
		if tl, ok := f.m.LiveTool("nav.goto"); !ok || tl.Origin.SessionID != b.SessionID || tl.Class != navTool().Class {
			t.Fatalf("nav.goto by name with a dropped and a connected tab: %+v %v", tl, ok)
		}
		if tl, ok := f.m.LiveTool("nav.elsewhere"); ok {
			t.Fatalf("a tool no tab advertised: %+v", tl)
		}
		// Not counted for ambiguity: b is the one connected tab.
		if tg, err := f.m.Resolve(f.ctx, "nav.goto", "", "", nil); err != nil || tg.SessionID != b.SessionID {
			t.Fatalf("implicit resolve with a dropped and a connected tab: %+v %v", tg, err)
		}

		got := <-done
		if got.inv.Status != switchboard.StatusFailed || got.inv.Error.Code != switchboard.CodeSessionGone {
			t.Fatalf("the call on the dropped tab: %+v", got.inv)
		}
		if el := time.Since(start); el != 5*time.Second {
			t.Fatalf("SESSION_GONE after %s, want the reconnect window (5s)", el)
		}
		info, _ := f.m.Info(f.ctx, a.SessionID)
		if info.State != switchboard.TabDisconnected || len(info.Tools) != 1 || info.Pending != 0 {
			t.Fatalf("past the reconnect window: %+v", info)
		}
		if _, err := f.m.Resolve(f.ctx, "nav.goto", a.SessionID, "", nil); switchboard.CodeOf(err) != switchboard.CodeSessionGone {
			t.Fatalf("a call naming the tab past the window: %v; want SESSION_GONE at once", err)
		}
		synctest.Wait()
		if gone.Load() != 0 {
			t.Fatal("WatchGone fired at the reconnect window; the session is still kept")
		}

		// A reload within the keep window resumes: same session, same tools,
		// and the failed call is not replayed.
		time.Sleep(10 * time.Second)
		connA = f.attach(a.SessionID, "")
		if ev, ok := connA.Next(); ok {
			t.Fatalf("the resumed stream replays %s %s, a call that already failed", ev.Kind, ev.Data)
		}
		if tg, err := f.m.Resolve(f.ctx, "nav.goto", a.SessionID, "", nil); err != nil || tg.SessionID != a.SessionID {
			t.Fatalf("the resumed tab: %+v %v", tg, err)
		}
		if info, _ := f.m.Info(f.ctx, a.SessionID); info.State != switchboard.TabConnected || !info.ExpiresAt.IsZero() {
			t.Fatalf("after the reload: %+v", info)
		}

		// Dropped for good: gone when the keep window passes.
		connA.Close()
		drop := time.Now()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if gone.Load() != 1 {
			t.Fatalf("WatchGone fired %d times by the end of the keep window, want 1", gone.Load())
		}
		if info, err := f.m.Info(f.ctx, a.SessionID); err != nil || info.State != switchboard.TabGone || time.Since(drop) != 30*time.Second {
			t.Fatalf("past the keep window: %+v %v", info, err)
		}
	})
}

// A call naming a tab that is reconnecting waits for the stream and is
// delivered on it when it comes back within the window; the only tab
// advertising a tool takes an implicit call while it reconnects.
func TestCallWaitsForReconnectingTab(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Heartbeat: 15 * time.Second, Reconnect: 5 * time.Second}, time.Hour)
		a, conn := f.live(navTool())
		conn.Close()
		time.Sleep(time.Second)
		inv, done := f.call("nav.goto", "", `{"page":"a"}`) // implicit: the one tab, reconnecting
		time.Sleep(3 * time.Second)                         // 4s after the drop: inside the window
		conn = f.attach(a.SessionID, "")
		req := request(t, next(t, conn))
		if req.InvocationID != inv.ID {
			t.Fatalf("the resumed stream got %s, want %s", req.InvocationID, inv.ID)
		}
		time.Sleep(time.Minute) // the old windows must not fire on the resumed tab
		if _, err := f.result(a.SessionID, req.RunID, inv.ID, ok(`{"page":"a"}`)); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.inv.Status != switchboard.StatusSucceeded {
			t.Fatalf("a call that waited for the reconnect: %+v", got.inv)
		}

		// Two tabs reconnecting and none connected: nobody is guessed.
		b, connB := f.live(navTool())
		conn.Close()
		connB.Close()
		_, err := f.m.Resolve(f.ctx, "nav.goto", "", "", nil)
		if switchboard.CodeOf(err) != switchboard.CodeToolUnavailable {
			t.Fatalf("two reconnecting tabs: %v; want TOOL_UNAVAILABLE naming them", err)
		}
		if ids, _ := switchboard.AsError(err).Details.(map[string]any)["reconnecting"].([]string); len(ids) != 2 {
			t.Fatalf("details of %v lack the reconnecting tabs %s, %s", err, a.SessionID, b.SessionID)
		}
	})
}

// The reconnect window may not outlast the keep window.
func TestReconnectWindowBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Heartbeat: time.Second})
	if f.m.Reconnect() != 2*time.Second {
		t.Fatalf("default reconnect window with a 2s keep window: %s, want 2s", f.m.Reconnect())
	}
	if _, err := New(Options{Store: f.store, Grace: time.Second, Reconnect: 2 * time.Second}); err == nil {
		t.Fatal("a reconnect window longer than the keep window was accepted")
	}
	m, err := New(Options{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	if m.Reconnect() != DefaultReconnect {
		t.Fatalf("default reconnect window: %s, want %s", m.Reconnect(), DefaultReconnect)
	}
}
