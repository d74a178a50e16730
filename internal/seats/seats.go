// Package seats bounds the sessions each principal holds at once and how
// fast it opens new ones (one token opening thousands
// of MCP or agent sessions). A seat is taken when a session opens and
// given back when it ends; counts live in memory, per daemon process.
package seats

import (
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
)

// Limits are one kind of session's caps per principal. A zero Max means
// no cap on sessions held; a zero Rate.PerSecond no cap on opening.
type Limits struct {
	// Max is how many sessions of the kind one principal may hold at once.
	Max int `json:"max" yaml:"max"`
	// Rate bounds how fast one principal opens them.
	Rate ratelimit.Rate `json:"rate" yaml:"rate"`
}

// Or fills l's zero fields from d; a negative Max or Rate.PerSecond turns
// that cap off (zero, which New reads as none).
func (l Limits) Or(d Limits) Limits {
	switch {
	case l.Max == 0:
		l.Max = d.Max
	case l.Max < 0:
		l.Max = 0
	}
	switch {
	case l.Rate.PerSecond == 0:
		l.Rate = d.Rate
	case l.Rate.PerSecond < 0:
		l.Rate = ratelimit.Rate{}
	}
	return l
}

// Seats counts the sessions of one kind per principal. Safe for
// concurrent use; a nil *Seats admits everything.
type Seats struct {
	what   string // "MCP sessions", for messages
	limits Limits
	rate   *ratelimit.Limiter

	mu   sync.Mutex
	held map[string]int
}

// New returns the seats of sessions called what, under limits; now may be
// nil (time.Now).
func New(what string, limits Limits, now func() time.Time) *Seats {
	return &Seats{what: what, limits: limits, rate: ratelimit.New(limits.Rate, now), held: map[string]int{}}
}

// Take reserves a seat for principal: RATE_LIMITED (with retryAfterMs)
// when it opens sessions faster than the rate or already holds Max.
// release gives the seat back; calling it more than once gives back one.
func (s *Seats) Take(principal string) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits.Max > 0 && s.held[principal] >= s.limits.Max {
		return nil, switchboard.Errorf(switchboard.CodeRateLimited,
			"%s already holds %d %s, the most one principal may; end one (or let idle ones expire) before opening another", principal, s.held[principal], s.what).
			WithDetails(map[string]any{"limit": s.what, "max": s.limits.Max, "retryAfterMs": int64(1000)})
	}
	if ok, wait := s.rate.Allow(principal); !ok {
		return nil, switchboard.Errorf(switchboard.CodeRateLimited, "%s opens %s too fast; retry in %s", principal, s.what, wait.Round(time.Millisecond)).
			WithDetails(map[string]any{"limit": s.what, "retryAfterMs": max(wait.Milliseconds(), 1),
				"perSecond": s.limits.Rate.PerSecond, "burst": s.limits.Rate.Burst})
	}
	s.held[principal]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.held[principal]--; s.held[principal] <= 0 {
				delete(s.held, principal)
			}
		})
	}, nil
}

// Held reports how many seats principal holds.
func (s *Seats) Held(principal string) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[principal]
}
