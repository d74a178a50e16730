// Package ratelimit is a token-bucket limiter keyed by string, used by the
// broker to bound calls per principal and per tool (RATE_LIMITED with a
// retry-after), so a runaway agent cannot flood the app. A bucket holds up
// to Burst tokens and refills at PerSecond; each call takes one. Buckets
// live in memory, per daemon process.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// maxKeys bounds the buckets kept; past it, full (idle) buckets are
// dropped, which forgets nothing since a full bucket is the initial state.
const maxKeys = 10_000

// Rate is a refill rate and a bucket size. A zero PerSecond means
// unlimited.
type Rate struct {
	PerSecond float64 `json:"perSecond" yaml:"perSecond"`
	Burst     int     `json:"burst" yaml:"burst"`
}

// Limiter hands out tokens per key. Safe for concurrent use.
type Limiter struct {
	rate Rate
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New returns a limiter for rate; now may be nil (time.Now).
func New(rate Rate, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	if rate.Burst < 1 {
		rate.Burst = max(1, int(math.Ceil(rate.PerSecond)))
	}
	return &Limiter{rate: rate, now: now, buckets: map[string]*bucket{}}
}

// Allow takes a token for key. When none is left it takes nothing and
// returns false with how long until one is.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	if l == nil || l.rate.PerSecond <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxKeys {
			l.sweepLocked(now)
		}
		b = &bucket{tokens: float64(l.rate.Burst), at: now}
		l.buckets[key] = b
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate.PerSecond * float64(time.Second))
	return false, max(wait, time.Millisecond)
}

func (l *Limiter) refill(b *bucket, now time.Time) {
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = math.Min(float64(l.rate.Burst), b.tokens+dt*l.rate.PerSecond)
		b.at = now
	}
}

// sweepLocked drops buckets that have refilled completely.
func (l *Limiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= float64(l.rate.Burst) {
			delete(l.buckets, k)
		}
	}
}
