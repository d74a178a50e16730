package cluster_test

import (
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/cluster"
)

// An interest is first once per replica and item, stays while renewed,
// is dropped when not renewed within the TTL, and is forgotten by a take.
func TestInterests(t *testing.T) {
	s := cluster.Interests{TTL: time.Minute}
	t0 := time.Unix(1_000_000, 0)
	if !s.Add("inv_1", "rep_b", t0) || s.Add("inv_1", "rep_b", t0.Add(time.Second)) {
		t.Fatal("a renewal was taken for a first interest, or the first for a renewal")
	}
	if !s.Add("inv_1", "rep_c", t0.Add(2*time.Second)) {
		t.Fatal("another replica's interest is not a first")
	}
	got := s.List("inv_1", false, t0.Add(2*time.Second))
	slices.Sort(got)
	if !slices.Equal(got, []string{"rep_b", "rep_c"}) {
		t.Fatalf("List = %v", got)
	}
	// rep_b renews; rep_c does not, and is dropped once the TTL passed.
	s.Add("inv_1", "rep_b", t0.Add(50*time.Second))
	s.Add("inv_2", "rep_d", t0.Add(90*time.Second))
	if got := s.List("inv_1", true, t0.Add(90*time.Second)); !slices.Equal(got, []string{"rep_b"}) {
		t.Fatalf("after the TTL: %v, want the renewed rep_b only", got)
	}
	if got := s.List("inv_1", false, t0.Add(90*time.Second)); len(got) != 0 {
		t.Fatalf("a take left %v", got)
	}
	if got := s.List("inv_2", false, t0.Add(90*time.Second)); !slices.Equal(got, []string{"rep_d"}) {
		t.Fatalf("another item: %v", got)
	}
}

// An interest not renewed within the TTL is not listed even before a
// prune has dropped it (the owner of a long run would otherwise tell a
// replica whose followers left of every flush until the run ends), and
// the asker's next interest is a first again, so the owner answers it at
// once as it answers any first.
func TestInterestsExpiredBeforeAPrune(t *testing.T) {
	s := cluster.Interests{TTL: time.Minute}
	t0 := time.Unix(1_000_000, 0)
	s.Add("run_1", "rep_d", t0)                     // a prune at t0
	s.Add("run_2", "rep_b", t0.Add(10*time.Second)) // rep_b never renews
	s.Add("run_3", "rep_e", t0.Add(61*time.Second)) // a prune: rep_b is 51 s old, kept
	// At t0+75s rep_b's interest is 65 s old; the next prune is after t0+121s.
	if got := s.List("run_2", false, t0.Add(75*time.Second)); len(got) != 0 {
		t.Fatalf("an interest past its TTL is listed: %v", got)
	}
	if !s.Add("run_2", "rep_b", t0.Add(80*time.Second)) {
		t.Fatal("an interest after the last one expired is taken for a renewal")
	}
	if got := s.List("run_2", false, t0.Add(81*time.Second)); !slices.Equal(got, []string{"rep_b"}) {
		t.Fatalf("a renewed interest: %v", got)
	}
}
