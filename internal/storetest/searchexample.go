package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func example(tool, query, caller, inv string, at time.Time) switchboard.SearchExample {
	return switchboard.SearchExample{Tool: tool, Query: query, Caller: caller, InvocationID: inv, At: at}
}

// testSearchExample checks the learned-search examples: once per (tool,
// query, caller), aggregated by distinct callers and last use, deleted by
// tool and by reversed invocation.
func testSearchExample(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	add := func(ex switchboard.SearchExample) { t.Helper(); must(t, s.SearchExampleAdd(ctx, ex, 0, 0)) }
	add(example("deck.export", "brand slides", "c1", "i1", base))
	add(example("deck.export", "brand slides", "c2", "i2", base.Add(time.Second)))
	add(example("deck.export", "brand slides", "c1", "i3", base.Add(3*time.Second))) // a repeat moves time only
	add(example("deck.export", "make a pdf", "c1", "i4", base.Add(2*time.Second)))
	add(example("users.list", "who is here", "c2", "i2", base))

	got, err := s.SearchExampleList(ctx, "deck.export")
	must(t, err)
	want := []switchboard.LearnedQuery{
		{Tool: "deck.export", Query: "brand slides", Callers: 2, LastUsed: base.Add(3 * time.Second).Truncate(time.Microsecond)},
		{Tool: "deck.export", Query: "make a pdf", Callers: 1, LastUsed: base.Add(2 * time.Second).Truncate(time.Microsecond)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("SearchExampleList(deck.export) (-want +got):\n%s", d)
	}
	all, err := s.SearchExampleList(ctx, "")
	must(t, err)
	if len(all) != 3 || all[2].Tool != "users.list" {
		t.Fatalf("SearchExampleList(\"\") = %+v", all)
	}
	none, err := s.SearchExampleList(ctx, "nope")
	must(t, err)
	if none == nil || len(none) != 0 {
		t.Fatalf("unknown tool lists %v, want an empty slice", none)
	}

	// A reversal of i2 takes back c2's examples of both tools.
	tools, err := s.SearchExampleDeleteInvocation(ctx, "i2")
	must(t, err)
	slices.Sort(tools)
	if !slices.Equal(tools, []string{"deck.export", "users.list"}) {
		t.Fatalf("DeleteInvocation tools = %v", tools)
	}
	got, err = s.SearchExampleList(ctx, "deck.export")
	must(t, err)
	if len(got) != 2 || got[0].Callers != 1 {
		t.Fatalf("after reversal: %+v", got)
	}
	tools, err = s.SearchExampleDeleteInvocation(ctx, "i-unknown")
	must(t, err)
	if len(tools) != 0 {
		t.Fatalf("unknown invocation deleted %v", tools)
	}

	n, err := s.SearchExampleDelete(ctx, "deck.export")
	must(t, err)
	if n != 2 {
		t.Fatalf("SearchExampleDelete = %d, want 2", n)
	}
	if got, _ := s.SearchExampleList(ctx, ""); len(got) != 0 {
		t.Fatalf("left after deletes: %+v", got)
	}

	// What one invocation taught a tool is replaced when a later call
	// after the same search changes it; the same invocation's example of
	// another tool, and another caller's of the same query, stay.
	add(example("deck.export", "export the deck then resize the image", "c1", "i7", base))
	add(example("image.resize", "export the deck then resize the image", "c1", "i8", base))
	add(example("deck.export", "export the deck then resize the image", "c2", "i9", base))
	add(example("deck.export", "export the deck", "c1", "i7", base))
	got, err = s.SearchExampleList(ctx, "deck.export")
	must(t, err)
	if len(got) != 2 || got[0].Query != "export the deck" && got[1].Query != "export the deck" {
		t.Fatalf("after a replacement deck.export holds %+v, want c1's \"export the deck\" and c2's whole request", got)
	}
	for _, q := range got {
		if q.Callers != 1 {
			t.Fatalf("after a replacement deck.export holds %+v: one caller each", got)
		}
	}
	if got, _ := s.SearchExampleList(ctx, "image.resize"); len(got) != 1 {
		t.Fatalf("a replacement for deck.export touched image.resize: %+v", got)
	}
	_, err = s.SearchExampleDelete(ctx, "deck.export")
	must(t, err)
	_, err = s.SearchExampleDelete(ctx, "image.resize")
	must(t, err)

	for _, bad := range []switchboard.SearchExample{
		example("", "q", "c", "i", base), example("t", "", "c", "i", base), example("t", "q", "", "i", base),
	} {
		if err := s.SearchExampleAdd(ctx, bad, 0, 0); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("SearchExampleAdd(%+v) = %v, want INVALID_INPUT", bad, err)
		}
	}
}

// testSearchExampleBounds checks that one caller's examples stay bounded:
// per tool and overall, the newest are kept, and other callers' are not
// touched.
func testSearchExampleBounds(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	for i, q := range []string{"a one", "a two", "a three", "a four"} {
		// Each call is its own invocation: one invocation's example of a
		// tool under another query would replace it.
		must(t, s.SearchExampleAdd(ctx, example("t1", q, "spam", fmt.Sprint("i", i), base.Add(time.Duration(i)*time.Second)), 2, 3))
	}
	must(t, s.SearchExampleAdd(ctx, example("t1", "a one", "honest", "j", base), 2, 3))
	got, err := s.SearchExampleList(ctx, "t1")
	must(t, err)
	var qs []string
	for _, l := range got {
		qs = append(qs, l.Query)
	}
	// spam keeps its 2 newest of t1; honest's "a one" stays.
	if want := []string{"a four", "a three", "a one"}; !slices.Equal(qs, want) {
		t.Fatalf("per-tool bound kept %v, want %v", qs, want)
	}
	for i, tool := range []string{"t2", "t3"} {
		must(t, s.SearchExampleAdd(ctx, example(tool, "b", "spam", fmt.Sprint("i", 10+i), base.Add(time.Duration(10+i)*time.Second)), 2, 3))
	}
	all, err := s.SearchExampleList(ctx, "")
	must(t, err)
	spam := 0
	for _, l := range all {
		if l.Tool != "t1" || l.Query != "a one" {
			spam++
		}
	}
	// spam's overall bound: 3 newest (t3 b, t2 b, t1 "a four").
	if spam != 3 {
		t.Fatalf("overall bound left %d of spam's examples, want 3: %+v", spam, all)
	}

	// Retention deletes the oldest first, at most limit.
	n, err := s.SearchExampleExpire(ctx, base.Add(time.Hour), 1)
	must(t, err)
	if n != 1 {
		t.Fatalf("SearchExampleExpire(limit 1) = %d", n)
	}
	n, err = s.SearchExampleExpire(ctx, base.Add(11*time.Second), 100)
	must(t, err)
	left, _ := s.SearchExampleList(ctx, "")
	if n != 2 || len(left) != 1 || left[0].Tool != "t3" {
		t.Fatalf("expire deleted %d, left %+v", n, left)
	}
	if _, err := s.SearchExampleExpire(ctx, time.Time{}, 1); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("expire without a bound: %v", err)
	}
}
