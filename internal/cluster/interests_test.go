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
	got := s.List("inv_1", false)
	slices.Sort(got)
	if !slices.Equal(got, []string{"rep_b", "rep_c"}) {
		t.Fatalf("List = %v", got)
	}
	// rep_b renews; rep_c does not, and is dropped once the TTL passed.
	s.Add("inv_1", "rep_b", t0.Add(50*time.Second))
	s.Add("inv_2", "rep_d", t0.Add(90*time.Second))
	if got := s.List("inv_1", true); !slices.Equal(got, []string{"rep_b"}) {
		t.Fatalf("after the TTL: %v, want the renewed rep_b only", got)
	}
	if got := s.List("inv_1", false); len(got) != 0 {
		t.Fatalf("a take left %v", got)
	}
	if got := s.List("inv_2", false); !slices.Equal(got, []string{"rep_d"}) {
		t.Fatalf("another item: %v", got)
	}
}
