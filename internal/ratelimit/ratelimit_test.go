package ratelimit_test

import (
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/ratelimit"
)

func TestBucket(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := ratelimit.New(ratelimit.Rate{PerSecond: 10, Burst: 3}, func() time.Time { return now })
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("call %d within the burst was refused", i)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("past the burst: ok=%v wait=%v, want refused with ~100ms", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key shares a's bucket")
	}
	now = now.Add(wait)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("no token after the advertised wait")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("refilled more than one token in 100ms at 10/s")
	}
	now = now.Add(time.Hour)
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("refill beyond the burst: call %d refused", i)
		}
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("the bucket grew beyond its burst")
	}
}

func TestUnlimited(t *testing.T) {
	t.Parallel()
	var nilLimiter *ratelimit.Limiter
	l := ratelimit.New(ratelimit.Rate{}, nil)
	for range 1000 {
		if ok, _ := l.Allow("x"); !ok {
			t.Fatal("a zero rate limited a call")
		}
		if ok, _ := nilLimiter.Allow("x"); !ok {
			t.Fatal("a nil limiter limited a call")
		}
	}
}
