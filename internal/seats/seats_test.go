package seats_test

import (
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
	"github.com/switchboardhq/switchboard/internal/seats"
)

func TestSeats(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	s := seats.New("MCP sessions", seats.Limits{Max: 2, Rate: ratelimit.Rate{PerSecond: 1, Burst: 3}}, func() time.Time { return now })
	r1, err := s.Take("agent:a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take("agent:a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take("agent:a"); switchboard.CodeOf(err) != switchboard.CodeRateLimited {
		t.Fatalf("a third seat: %v; want RATE_LIMITED (at most 2 held)", err)
	}
	if _, err := s.Take("agent:b"); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	r1()
	r1() // once
	if s.Held("agent:a") != 1 {
		t.Fatalf("held %d after one release, want 1", s.Held("agent:a"))
	}
	// The third token of the burst is left: one more open, then the rate.
	if _, err := s.Take("agent:a"); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Take("agent:a") // at Max again
	if r != nil {
		t.Fatal("a seat past Max")
	}
	var nilSeats *seats.Seats
	if rel, err := nilSeats.Take("x"); err != nil || rel == nil {
		t.Fatal("nil seats refuse")
	}
}

func TestSeatsRate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	s := seats.New("agent sessions", seats.Limits{Rate: ratelimit.Rate{PerSecond: 1, Burst: 2}}, func() time.Time { return now })
	for range 2 {
		if _, err := s.Take("agent:a"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Take("agent:a")
	if switchboard.CodeOf(err) != switchboard.CodeRateLimited {
		t.Fatalf("past the burst: %v; want RATE_LIMITED", err)
	}
	now = now.Add(time.Second)
	if _, err := s.Take("agent:a"); err != nil {
		t.Fatalf("a second later: %v", err)
	}
}
