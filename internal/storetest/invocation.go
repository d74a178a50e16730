package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func invocation(id string, status switchboard.Status) switchboard.Invocation {
	return switchboard.Invocation{
		ID:          id,
		RunID:       "run-1",
		Tool:        "orders.search",
		ToolVersion: 7,
		Surface:     switchboard.SurfaceAPI,
		Caller:      "agent:alice",
		AgentID:     "agt_alice",
		User:        "user:alice",
		Status:      status,
		// Odd spacing and key order: JSON must come back byte for byte.
		Input:      json.RawMessage(`{"z": "<q>",  "a":[1, 2.50, {"b":null}]}`),
		InputBytes: 41,
		CreatedAt:  base,
		UpdatedAt:  base,
	}
}

// stored is inv as a store returns it: times at microseconds in UTC.
func stored(inv switchboard.Invocation) switchboard.Invocation {
	inv.CreatedAt, inv.UpdatedAt, inv.FinishedAt = micro(inv.CreatedAt), micro(inv.UpdatedAt), micro(inv.FinishedAt)
	return inv
}

func wantInvocation(t *testing.T, want, got switchboard.Invocation) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Fatalf("invocation (-want +got):\n%s", diff)
	}
	for _, ts := range []time.Time{got.CreatedAt, got.UpdatedAt, got.FinishedAt} {
		if !ts.IsZero() && ts.Location() != time.UTC {
			t.Fatalf("time %v is not in UTC", ts)
		}
	}
}

func testInvocationCreateGet(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	_, err := s.InvocationGet(ctx, "inv-1")
	wantCode(t, err, switchboard.CodeNotFound)

	inv := invocation("inv-1", switchboard.StatusPending)
	must(t, s.InvocationCreate(ctx, inv))
	got, err := s.InvocationGet(ctx, inv.ID)
	must(t, err)
	wantInvocation(t, stored(inv), got)

	dup := invocation("inv-1", switchboard.StatusDispatched)
	dup.Tool = "other"
	err = s.InvocationCreate(ctx, dup)
	wantCode(t, err, switchboard.CodeConflict)
	if !errors.Is(err, switchboard.ErrConflict) {
		t.Fatalf("%v does not match ErrConflict", err)
	}
	got, err = s.InvocationGet(ctx, inv.ID)
	must(t, err)
	wantInvocation(t, stored(inv), got)

	// A terminal record with every field set round-trips too.
	full := invocation("inv-2", switchboard.StatusFailed)
	full.SessionID = "sess-1"
	full.Surface = switchboard.SurfaceBrowser
	full.Result = json.RawMessage(`[ 1,2 ]`)
	full.ResultBytes = 7
	full.Error = switchboard.Errorf(switchboard.CodeUpstreamError, "backend said %d", 502).
		WithDetails(map[string]any{"status": float64(502), "retry": true})
	full.FinishedAt = base.Add(1500 * time.Microsecond)
	full.DurationMs = 1.5
	full.ApprovalID = "apr_full"
	must(t, s.InvocationCreate(ctx, full))
	got, err = s.InvocationGet(ctx, full.ID)
	must(t, err)
	wantInvocation(t, stored(full), got)

	bad := invocation("inv-3", switchboard.StatusPending)
	bad.Input = json.RawMessage(`{"a":`)
	wantCode(t, s.InvocationCreate(ctx, bad), switchboard.CodeInvalidInput)
	_, err = s.InvocationGet(ctx, bad.ID)
	wantCode(t, err, switchboard.CodeNotFound)
}

func testInvocationCAS(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	inv := invocation("inv-1", switchboard.StatusPending)
	must(t, s.InvocationCreate(ctx, inv))

	upd := stored(inv)
	upd.Status = switchboard.StatusDispatched
	upd.SessionID = "sess-9"
	upd.UpdatedAt = base.Add(time.Second)
	got, err := s.InvocationUpdate(ctx, upd, switchboard.StatusPending, switchboard.StatusAwaitingApproval)
	must(t, err)
	wantInvocation(t, stored(upd), got)

	// Only mutable fields move: id, run, tool, input and creation stay.
	done := got
	done.Status = switchboard.StatusSucceeded
	done.Result = json.RawMessage(`{"ok": true}`)
	done.ResultBytes = 12
	done.UpdatedAt = base.Add(2 * time.Second)
	done.FinishedAt = base.Add(2 * time.Second)
	done.DurationMs = 2000
	sneaky := done
	sneaky.Tool, sneaky.RunID, sneaky.Caller = "other", "run-2", "mallory"
	sneaky.User, sneaky.ApprovalID = "user:mallory", "apr_other"
	sneaky.Input = json.RawMessage(`{"rewritten":true}`)
	sneaky.CreatedAt = base.Add(time.Hour)
	got, err = s.InvocationUpdate(ctx, sneaky, switchboard.StatusDispatched)
	must(t, err)
	wantInvocation(t, stored(done), got)

	// A failed compare changes nothing and returns the current record.
	late := done
	late.Status = switchboard.StatusTimedOut
	late.Error = switchboard.Errorf(switchboard.CodeTimeout, "too late")
	got, err = s.InvocationUpdate(ctx, late, switchboard.StatusPending, switchboard.StatusDispatched)
	wantCode(t, err, switchboard.CodeConflict)
	if !errors.Is(err, switchboard.ErrConflict) {
		t.Fatalf("%v does not match ErrConflict", err)
	}
	wantInvocation(t, stored(done), got)
	got, err = s.InvocationGet(ctx, inv.ID)
	must(t, err)
	wantInvocation(t, stored(done), got)

	_, err = s.InvocationUpdate(ctx, invocation("nope", switchboard.StatusFailed), switchboard.StatusPending)
	wantCode(t, err, switchboard.CodeNotFound)
}

// testInvocationCASRace: many goroutines race to finish one dispatched
// call; exactly one wins and every loser sees the winner's record.
func testInvocationCASRace(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.InvocationCreate(ctx, invocation("inv-1", switchboard.StatusDispatched)))
	const n = 16
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		recs  [n]switchboard.Invocation
		errs  [n]error
	)
	for i := range n {
		wg.Go(func() {
			u := stored(invocation("inv-1", switchboard.StatusSucceeded))
			u.Result = json.RawMessage(fmt.Sprintf(`{"winner":%d}`, i))
			<-start
			recs[i], errs[i] = s.InvocationUpdate(ctx, u, switchboard.StatusDispatched)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("goroutines %d and %d both won the compare-and-swap", winner, i)
		case err == nil:
			winner = i
		default:
			wantCode(t, err, switchboard.CodeConflict)
		}
	}
	if winner < 0 {
		t.Fatal("no goroutine won the compare-and-swap")
	}
	final, err := s.InvocationGet(ctx, "inv-1")
	must(t, err)
	for i := range recs {
		wantInvocation(t, final, recs[i])
	}
	if want := fmt.Sprintf(`{"winner":%d}`, winner); string(final.Result) != want {
		t.Fatalf("stored result %s, want the winner's %s", final.Result, want)
	}
}

func testInvocationFailInFlight(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	all := []switchboard.Status{
		switchboard.StatusPending, switchboard.StatusAwaitingApproval, switchboard.StatusDispatched,
		switchboard.StatusSucceeded, switchboard.StatusCancelled,
	}
	for _, st := range all {
		must(t, s.InvocationCreate(ctx, invocation(string(st), st)))
	}
	must(t, s.InvocationCreate(ctx, invocation("kept", switchboard.StatusAwaitingApproval)))
	at := base.Add(10 * time.Second)
	cause := switchboard.Errorf(switchboard.CodeOutcomeUnknown, "daemon restarted; outcome unknown")
	var seen []string
	resolve := func(inv switchboard.Invocation) (*switchboard.Error, *switchboard.ActivityEntry) {
		seen = append(seen, inv.ID)
		if inv.ID == "kept" {
			return nil, nil // an approval that outlives the restart
		}
		return cause, &switchboard.ActivityEntry{Ts: at, Actor: "system", Verb: "tool.call", Target: inv.ID}
	}
	n, err := s.InvocationFailInFlight(ctx, at, resolve)
	must(t, err)
	if n != 3 || len(seen) != 4 {
		t.Fatalf("ended %d records (want 3), visited %v (want the 4 in flight)", n, seen)
	}
	for _, st := range all {
		got, err := s.InvocationGet(ctx, string(st))
		must(t, err)
		want := stored(invocation(string(st), st))
		if !st.Terminal() {
			want.Status = switchboard.StatusFailed
			want.Error = &switchboard.Error{Code: cause.Code, Message: cause.Message}
			want.UpdatedAt, want.FinishedAt = micro(at), micro(at)
			want.DurationMs = 10000
		}
		wantInvocation(t, want, got)
	}
	if got, err := s.InvocationGet(ctx, "kept"); err != nil || got.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("the record resolve kept: %+v %v", got, err)
	}
	// Each ended record has its ledger entry.
	entries, err := s.ActivityList(ctx, switchboard.ActivityFilter{})
	must(t, err)
	if len(entries) != 3 {
		t.Fatalf("%d ledger entries, want one per ended record", len(entries))
	}
	seen = nil
	n, err = s.InvocationFailInFlight(ctx, at, resolve)
	must(t, err)
	if n != 0 || len(seen) != 1 {
		t.Fatalf("second pass ended %d records (want 0), visited %v", n, seen)
	}
}

func testSession(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	_, err := s.SessionGet(ctx, "sess-1")
	wantCode(t, err, switchboard.CodeNotFound)
	wantCode(t, s.SessionClose(ctx, "sess-1", base), switchboard.CodeNotFound)

	sess := switchboard.Session{ID: "sess-1", TokenHash: "sha256:abc", Principal: "alice", CreatedAt: base}
	must(t, s.SessionCreate(ctx, sess))
	wantCode(t, s.SessionCreate(ctx, sess), switchboard.CodeConflict)
	want := sess
	want.CreatedAt = micro(base)
	got, err := s.SessionGet(ctx, sess.ID)
	must(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("session (-want +got):\n%s", diff)
	}

	must(t, s.SessionClose(ctx, sess.ID, base.Add(time.Minute)))
	// Closing again succeeds and keeps the first close time.
	must(t, s.SessionClose(ctx, sess.ID, base.Add(2*time.Minute)))
	want.ClosedAt = micro(base.Add(time.Minute))
	got, err = s.SessionGet(ctx, sess.ID)
	must(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("closed session (-want +got):\n%s", diff)
	}
	if got.CreatedAt.Location() != time.UTC || got.ClosedAt.Location() != time.UTC {
		t.Fatal("session times are not in UTC")
	}

	// The scope the app gave the session's user round-trips.
	scoped := switchboard.Session{ID: "sess-2", TokenHash: "sha256:def", Principal: "bob", CreatedAt: base,
		Scope: switchboard.SessionScope{Allow: []string{"tasks.list", "nav.*"}, Deny: []string{"tasks.delete"},
			PanelScope: switchboard.PanelScope{Panels: []string{"project.*"}, Slots: []string{"sidebar"}}}}
	must(t, s.SessionCreate(ctx, scoped))
	want = scoped
	want.CreatedAt = micro(base)
	got, err = s.SessionGet(ctx, scoped.ID)
	must(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("scoped session (-want +got):\n%s", diff)
	}

	// A session's canvas narrowing is written with it and read back as
	// stored; a session without one reads none.
	narrowed := switchboard.Session{ID: "sess-3", TokenHash: "sha256:ghi", CreatedAt: base,
		Canvas: json.RawMessage(`{"allowCodePreview":false,"hitlOnCompose":true}`)}
	must(t, s.SessionCreate(ctx, narrowed))
	got, err = s.SessionGet(ctx, narrowed.ID)
	must(t, err)
	var gotCanvas map[string]bool
	if err := json.Unmarshal(got.Canvas, &gotCanvas); err != nil || len(gotCanvas) != 2 || !gotCanvas["hitlOnCompose"] {
		t.Fatalf("session canvas = %s (%v), want the narrowing as written", got.Canvas, err)
	}
	if got, _ := s.SessionGet(ctx, scoped.ID); got.Canvas != nil {
		t.Fatalf("session without a narrowing reads canvas %s", got.Canvas)
	}
	bad := switchboard.Session{ID: "sess-4", CreatedAt: base, Canvas: json.RawMessage(`{not json`)}
	wantCode(t, s.SessionCreate(ctx, bad), switchboard.CodeInvalidInput)
	_, err = s.SessionGet(ctx, bad.ID)
	wantCode(t, err, switchboard.CodeNotFound) // nothing half-written
}

func testSetting(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	_, err := s.SettingGet(ctx, "canvas.host")
	wantCode(t, err, switchboard.CodeNotFound)
	must(t, s.SettingPut(ctx, "canvas.host", json.RawMessage(`{"preset":"open"}`), base))
	must(t, s.SettingPut(ctx, "canvas.host", json.RawMessage(`{"preset":"guarded"}`), base.Add(time.Second)))
	got, err := s.SettingGet(ctx, "canvas.host")
	must(t, err)
	var v struct{ Preset string }
	if err := json.Unmarshal(got, &v); err != nil || v.Preset != "guarded" {
		t.Fatalf("setting = %s (%v), want the last value put", got, err)
	}
	wantCode(t, s.SettingPut(ctx, "canvas.host", json.RawMessage(`{oops`), base), switchboard.CodeInvalidInput)
	wantCode(t, s.SettingPut(ctx, "", json.RawMessage(`{}`), base), switchboard.CodeInvalidInput)
	got, err = s.SettingGet(ctx, "canvas.host")
	must(t, err)
	if json.Unmarshal(got, &v) != nil || v.Preset != "guarded" {
		t.Fatalf("a refused put changed the setting to %s", got)
	}
	_, err = s.SettingGet(ctx, "other")
	wantCode(t, err, switchboard.CodeNotFound)
}
