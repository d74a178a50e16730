package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// RELIABILITY row 15: a dropped stream resumed with Last-Event-ID gets every
// event it missed, once, and nothing it already had.
func TestResumeNoGapsNoDuplicates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	var invs []string
	for i := range 3 {
		inv, _ := f.call("nav.goto", c.SessionID, fmt.Sprintf(`{"page":"p%d"}`, i))
		invs = append(invs, inv.ID)
	}
	first := next(t, conn) // the tab saw p0 only, then the stream dropped
	conn.Close()
	for i := 3; i < 5; i++ { // dispatched while disconnected
		inv, _ := f.call("nav.goto", c.SessionID, fmt.Sprintf(`{"page":"p%d"}`, i))
		invs = append(invs, inv.ID)
	}
	// Calls dispatch concurrently, so compare as sets; ids must still rise.
	seen := request(t, first).InvocationID
	conn = f.attach(c.SessionID, first.ID)
	var got []string
	lastID := first.ID
	for range 4 {
		ev := next(t, conn)
		if seqOf(ev.ID) <= seqOf(lastID) {
			t.Fatalf("event id %s after %s", ev.ID, lastID)
		}
		got = append(got, request(t, ev).InvocationID)
		lastID = ev.ID
	}
	if !sameSet(got, without(invs, seen)) {
		t.Fatalf("resumed after %s: got %v, want %v", first.ID, got, without(invs, seen))
	}
	if ev, ok := conn.Next(); ok {
		t.Fatalf("duplicate after resume: %+v", ev)
	}
	// Answer one; resuming from the end again yields nothing new.
	req1 := got[0]
	rec, _ := f.store.InvocationGet(f.ctx, req1)
	if _, err := f.result(c.SessionID, rec.RunID, req1, ok(`1`)); err != nil {
		t.Fatal(err)
	}
	conn = f.attach(c.SessionID, lastID)
	if ev, ok := conn.Next(); ok {
		t.Fatalf("nothing new since %s, got %+v", lastID, ev)
	}
	// A fresh stream (no Last-Event-ID) gets every open request: not p1,
	// which was acknowledged.
	conn = f.attach(c.SessionID, "")
	got = nil
	for range 4 {
		got = append(got, request(t, next(t, conn)).InvocationID)
	}
	if want := without(invs, req1); !sameSet(got, want) {
		t.Fatalf("fresh stream: got %v, want %v", got, want)
	}
	// An id from another epoch (a restarted daemon) counts as no id at all.
	conn = f.attach(c.SessionID, "deadbeef-2")
	got = nil
	for range 4 {
		got = append(got, request(t, next(t, conn)).InvocationID)
	}
	if want := without(invs, req1); !sameSet(got, want) {
		t.Fatalf("foreign epoch should replay every open request: got %v, want %v", got, want)
	}
}

// A cancel for a request the tab had seen survives a reconnect; one for a
// request it never saw is not sent at all.
func TestCancelAcrossReconnect(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, conn := f.live(navTool())
	ctxA, cancelA := contextWithCancel(f)
	invA, doneA := f.callCtx(ctxA, "nav.goto", c.SessionID, `{"page":"a"}`)
	seen := next(t, conn)
	conn.Close()
	ctxB, cancelB := contextWithCancel(f)
	invB, doneB := f.callCtx(ctxB, "nav.goto", c.SessionID, `{"page":"b"}`)
	cancelA()
	cancelB()
	<-doneA
	<-doneB
	conn = f.attach(c.SessionID, seen.ID)
	ev := next(t, conn)
	var msg struct{ InvocationID string }
	_ = json.Unmarshal(ev.Data, &msg)
	if ev.Kind != KindCancel || msg.InvocationID != invA.ID {
		t.Fatalf("after reconnect: %s %s, want a cancel of %s", ev.Kind, ev.Data, invA.ID)
	}
	if ev, ok := conn.Next(); ok {
		t.Fatalf("the never-seen request %s should vanish without a trace, got %s %s", invB.ID, ev.Kind, ev.Data)
	}
}

// RELIABILITY row 16: a reader that stops reading is cut off once its
// backlog passes the bound; what it missed stays for its resume.
func TestSlowReaderDisconnected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxQueued: 4})
	c, conn := f.live(navTool())
	for i := range 5 {
		f.call("nav.goto", c.SessionID, fmt.Sprintf(`{"page":"p%d"}`, i))
	}
	<-conn.Done()
	wantCode(t, conn.Err(), switchboard.CodeUnavailable)
	conn.Close()
	conn = f.attach(c.SessionID, "")
	var pages []string
	for range 5 {
		var in struct{ Page string }
		_ = json.Unmarshal(request(t, next(t, conn)).Input, &in)
		pages = append(pages, in.Page)
	}
	if !sameSet(pages, []string{"p0", "p1", "p2", "p3", "p4"}) {
		t.Fatalf("after the slow reader reconnected: %v", pages)
	}
}

func TestNewStreamReplacesOld(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, old := f.live(navTool())
	conn := f.attach(c.SessionID, "")
	<-old.Done()
	wantCode(t, old.Err(), switchboard.CodeConflict)
	old.Close() // the old handler returning must not detach the new stream
	inv, _ := f.call("nav.goto", c.SessionID, `{"page":"a"}`)
	if got := request(t, next(t, conn)); got.InvocationID != inv.ID {
		t.Fatalf("new stream got %+v", got)
	}
	var hello struct {
		SessionID   string `json:"sessionId"`
		HeartbeatMs int64  `json:"heartbeatMs"`
	}
	ev := conn.Hello()
	if err := json.Unmarshal(ev.Data, &hello); err != nil || ev.ID != "" || ev.Kind != KindReady || hello.SessionID != c.SessionID || hello.HeartbeatMs != 1000 {
		t.Fatalf("hello %+v %s", ev, ev.Data)
	}
}

func seqOf(id string) uint64 {
	_, seq, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseUint(seq, 10, 64)
	return n
}

func without(all []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == drop })
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
