package session

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestSendQueuesResumableEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live()
	if !f.m.Connected(c.SessionID) {
		t.Fatal("a tab with a stream is not connected")
	}
	if err := f.m.Send(f.ctx, c.SessionID, "panel.open", []byte(`{"instanceId":"p1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Send(f.ctx, c.SessionID, "panel.update", []byte(`{"instanceId":"p1","version":2}`)); err != nil {
		t.Fatal(err)
	}
	first, second := next(t, conn), next(t, conn)
	if first.Kind != "panel.open" || second.Kind != "panel.update" || first.ID == "" || string(second.Data) != `{"instanceId":"p1","version":2}` {
		t.Fatalf("events %+v %+v", first, second)
	}
	// A stream that resumes after the first gets the second, once.
	conn.Close()
	again := f.attach(c.SessionID, first.ID)
	if ev := next(t, again); ev.ID != second.ID || ev.Kind != "panel.update" {
		t.Fatalf("resumed with %+v", ev)
	}
	if _, more := again.Next(); more {
		t.Fatal("resume repeated an event")
	}
	// A fresh stream (no resume point) gets only open requests, not
	// application events it cannot place.
	again.Close()
	fresh := f.attach(c.SessionID, "")
	if _, any := fresh.Next(); any {
		t.Fatal("a fresh stream replayed application events")
	}
}

func TestSendRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, _ := f.live()
	for kind, code := range map[string]switchboard.Code{
		"":                       switchboard.CodeInvalidInput,
		"browser.action.request": switchboard.CodeInvalidInput, // the dispatch protocol's own
		"session.ready":          switchboard.CodeInvalidInput,
		"panel.open\nevent: x":   switchboard.CodeInvalidInput, // would forge a frame
		"Panel.Open":             switchboard.CodeInvalidInput,
		strings.Repeat("a", 65):  switchboard.CodeInvalidInput,
	} {
		if err := f.m.Send(f.ctx, c.SessionID, kind, nil); switchboard.CodeOf(err) != code {
			t.Errorf("kind %q: %v", kind, err)
		}
	}
	if err := f.m.Send(f.ctx, c.SessionID, "panel.open", make([]byte, maxEventBytes+1)); switchboard.CodeOf(err) != switchboard.CodePayloadTooLarge {
		t.Errorf("oversize: %v", err)
	}
	idle := f.open() // never connected here
	if err := f.m.Send(f.ctx, idle.SessionID, "panel.open", nil); switchboard.CodeOf(err) != switchboard.CodeSessionGone {
		t.Errorf("no tab: %v", err)
	}
	if f.m.Connected(idle.SessionID) {
		t.Error("a session without a stream is connected")
	}
}

func TestSendRetainsABoundedLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxQueued: 1000})
	c, conn := f.live()
	var firstID string
	for i := range maxRetainedEvents + 10 {
		if err := f.m.Send(f.ctx, c.SessionID, "panel.update", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			firstID = next(t, conn).ID
		}
	}
	conn.Close()
	resumed := f.attach(c.SessionID, firstID)
	n := 0
	for _, ok := resumed.Next(); ok; _, ok = resumed.Next() {
		n++
	}
	if n != maxRetainedEvents {
		t.Fatalf("resume got %d events, want the newest %d", n, maxRetainedEvents)
	}
}

func TestWatchGoneAndUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, _ := f.live()
	gone := 0
	cancel, err := f.m.WatchGone(c.SessionID, func() { gone++ })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if u, err := f.m.User(f.ctx, c.SessionID); err != nil || u != "user:alice" {
		t.Fatalf("user %q %v", u, err)
	}
	if err := f.m.Close(f.ctx, c.SessionID); err != nil {
		t.Fatal(err)
	}
	if gone != 1 || f.m.Connected(c.SessionID) {
		t.Fatalf("gone called %d times; connected %v", gone, f.m.Connected(c.SessionID))
	}
	if err := f.m.Send(f.ctx, c.SessionID, "panel.open", nil); switchboard.CodeOf(err) != switchboard.CodeSessionGone {
		t.Fatalf("send to a closed tab: %v", err)
	}
}
