package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// testInvocationList: newest first (creation time, then ID), each filter
// alone and together, the limit, and records that come back whole.
func testInvocationList(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	got, err := s.InvocationList(ctx, switchboard.InvocationFilter{})
	must(t, err)
	if got == nil || len(got) != 0 {
		t.Fatalf("empty store: %#v, want an empty list", got)
	}
	var want []switchboard.Invocation
	for i := range 6 {
		inv := invocation(fmt.Sprintf("inv-%d", i), switchboard.StatusSucceeded)
		inv.CreatedAt = base.Add(time.Duration(i/2) * time.Second) // pairs share a time: ID breaks the tie
		inv.UpdatedAt = inv.CreatedAt
		if i%2 == 1 {
			inv.Status, inv.Caller, inv.RunID = switchboard.StatusFailed, "user:admin", ""
		}
		if i/2 == 1 {
			inv.SessionID = "tab-x"
		}
		if i >= 4 { // one agent name acting for another user
			inv.User = "user:bob"
		}
		must(t, s.InvocationCreate(ctx, inv))
		want = append(want, stored(inv))
	}
	slices.Reverse(want)
	ids := func(invs []switchboard.Invocation) string {
		var out []string
		for _, inv := range invs {
			out = append(out, inv.ID)
		}
		return fmt.Sprint(out)
	}
	got, err = s.InvocationList(ctx, switchboard.InvocationFilter{})
	must(t, err)
	if ids(got) != ids(want) {
		t.Fatalf("order %s, want %s", ids(got), ids(want))
	}
	wantInvocation(t, want[0], got[0])
	for _, c := range []struct {
		f    switchboard.InvocationFilter
		want string
	}{
		{switchboard.InvocationFilter{Limit: 2}, "[inv-5 inv-4]"},
		{switchboard.InvocationFilter{Status: switchboard.StatusFailed}, "[inv-5 inv-3 inv-1]"},
		{switchboard.InvocationFilter{Caller: "agent:alice"}, "[inv-4 inv-2 inv-0]"},
		{switchboard.InvocationFilter{RunID: "run-1", Limit: 1}, "[inv-4]"},
		{switchboard.InvocationFilter{SessionID: "tab-x"}, "[inv-3 inv-2]"},
		{switchboard.InvocationFilter{SessionID: "tab-x", Status: switchboard.StatusFailed}, "[inv-3]"},
		{switchboard.InvocationFilter{Status: switchboard.StatusFailed, Caller: "agent:alice"}, "[]"},
		{switchboard.InvocationFilter{User: "user:bob"}, "[inv-5 inv-4]"},
		{switchboard.InvocationFilter{Caller: "agent:alice", User: "user:alice"}, "[inv-2 inv-0]"},
	} {
		got, err := s.InvocationList(ctx, c.f)
		must(t, err)
		if ids(got) != c.want {
			t.Errorf("%+v: %s, want %s", c.f, ids(got), c.want)
		}
	}
}

// testJobList: newest first, by status and caller, limited.
func testJobList(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	for i := range 4 {
		j := switchboard.Job{ID: fmt.Sprintf("job-%d", i), Tool: "deck.export", Caller: "agent:a", Status: switchboard.JobRunning,
			Progress: float64(i) / 4, CreatedAt: base.Add(time.Duration(i) * time.Second)}
		if i%2 == 1 {
			j.Caller, j.Status = "user:admin", switchboard.JobSucceeded
		}
		j.User = "user:alice"
		if i == 2 { // the same agent name acting for another user
			j.User = "user:bob"
		}
		must(t, s.JobCreate(ctx, j))
	}
	ids := func(f switchboard.JobFilter) string {
		t.Helper()
		js, err := s.JobList(ctx, f)
		must(t, err)
		var out []string
		for _, j := range js {
			out = append(out, fmt.Sprintf("%s@%g", j.ID, j.Progress))
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		f    switchboard.JobFilter
		want string
	}{
		{switchboard.JobFilter{}, "[job-3@0.75 job-2@0.5 job-1@0.25 job-0@0]"},
		{switchboard.JobFilter{Status: switchboard.JobRunning}, "[job-2@0.5 job-0@0]"},
		{switchboard.JobFilter{Caller: "user:admin", Limit: 1}, "[job-3@0.75]"},
		{switchboard.JobFilter{Caller: "agent:a", User: "user:alice"}, "[job-0@0]"},
		{switchboard.JobFilter{User: "user:bob"}, "[job-2@0.5]"},
	} {
		if got := ids(c.f); got != c.want {
			t.Errorf("%+v: %s, want %s", c.f, got, c.want)
		}
	}
}
