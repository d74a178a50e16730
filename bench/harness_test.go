package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The call-path harness: every number it reports is a ratio against a
// baseline measured in the same run, because on a shared machine absolute
// timings drift by tens of percent between minutes while a ratio of two
// paths measured side by side does not.
//
// One comparison runs `rounds` rounds. In each round every side (the
// baseline first in the list, then the paths compared with it) makes n
// calls with `inflight` callers:
//
//   - inflight 1: the sides are interleaved call by call (A B C A B C …),
//     so a burst of load hits all of them alike; a side's throughput is
//     n over the sum of its own call times;
//   - inflight > 1: the sides run one block each (n calls, inflight callers
//     taking the next call as they finish), throughput n over the block's
//     wall time; the block order rotates every round so no side always runs
//     first or last.
//
// Per round it keeps each side's p50, p99 and calls/s, and reports the
// minimum, median and maximum over the rounds of each, and of each side's
// ratios to the baseline (p50 ratio = side / baseline; throughput ratio =
// baseline / side, "how many times fewer calls per second").

// side is one path a comparison measures.
type side struct {
	name string
	call func(context.Context) error
}

// sideRound is what one side measured in one round.
type sideRound struct {
	p50, p99 time.Duration
	perSec   float64
}

// comparison is the outcome of runComparison: rounds[r][s] for round r and
// side s (s 0 the baseline).
type comparison struct {
	sides    []string
	inflight int
	n        int
	rounds   [][]sideRound
}

// minMedMax is min, median, max over rounds.
type minMedMax struct{ min, med, max float64 }

func minMedMaxOf(v []float64) minMedMax {
	s := slices.Clone(v)
	slices.Sort(s)
	return minMedMax{s[0], s[len(s)/2], s[len(s)-1]}
}

// of collects f over the rounds of side s.
func (c comparison) of(s int, f func(sideRound) float64) minMedMax {
	v := make([]float64, len(c.rounds))
	for r, rr := range c.rounds {
		v[r] = f(rr[s])
	}
	return minMedMaxOf(v)
}

// ratio collects f(side s, baseline) over the rounds.
func (c comparison) ratio(s int, f func(side, base sideRound) float64) minMedMax {
	v := make([]float64, len(c.rounds))
	for r, rr := range c.rounds {
		v[r] = f(rr[s], rr[0])
	}
	return minMedMaxOf(v)
}

func (c comparison) p50(s int) minMedMax {
	return c.of(s, func(r sideRound) float64 { return us(r.p50) })
}
func (c comparison) p99(s int) minMedMax {
	return c.of(s, func(r sideRound) float64 { return us(r.p99) })
}
func (c comparison) perSec(s int) minMedMax {
	return c.of(s, func(r sideRound) float64 { return r.perSec })
}

// p50Ratio is side p50 / baseline p50, per round.
func (c comparison) p50Ratio(s int) minMedMax {
	return c.ratio(s, func(x, b sideRound) float64 { return float64(x.p50) / float64(max(b.p50, 1)) })
}

// added is side p50 − baseline p50 in µs, per round.
func (c comparison) added(s int) minMedMax {
	return c.ratio(s, func(x, b sideRound) float64 { return us(x.p50 - b.p50) })
}

// slowdown is baseline calls/s / side calls/s, per round.
func (c comparison) slowdown(s int) minMedMax {
	return c.ratio(s, func(x, b sideRound) float64 { return b.perSec / x.perSec })
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// runComparison measures sides (sides[0] the baseline) as described above,
// after warm calls of each (connections, caches, the WAL, the JIT of
// nothing: Go has none, but pools and the page cache do).
func runComparison(tb testing.TB, n, inflight, rounds, warm int, sides ...side) comparison {
	tb.Helper()
	ctx := context.Background()
	for _, s := range sides {
		if _, _, err := runBlock(ctx, warm, max(1, min(inflight, warm)), s.call); err != nil {
			tb.Fatalf("warming %s: %v", s.name, err)
		}
	}
	c := comparison{inflight: inflight, n: n}
	for _, s := range sides {
		c.sides = append(c.sides, s.name)
	}
	for r := range rounds {
		res := make([]sideRound, len(sides))
		if inflight == 1 {
			lat := make([][]time.Duration, len(sides))
			for i := range lat {
				lat[i] = make([]time.Duration, 0, n)
			}
			for range n {
				for k := range sides {
					i := (k + r) % len(sides) // rotate who goes first each round
					t0 := time.Now()
					if err := sides[i].call(ctx); err != nil {
						tb.Fatalf("%s: %v", sides[i].name, err)
					}
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
			for i, l := range lat {
				var sum time.Duration
				for _, d := range l {
					sum += d
				}
				slices.Sort(l)
				res[i] = sideRound{p50: at(l, 0.5), p99: at(l, 0.99), perSec: float64(n) / sum.Seconds()}
			}
		} else {
			for k := range sides {
				i := (k + r) % len(sides)
				lat, wall, err := runBlock(ctx, n, inflight, sides[i].call)
				if err != nil {
					tb.Fatalf("%s: %v", sides[i].name, err)
				}
				res[i] = sideRound{p50: at(lat, 0.5), p99: at(lat, 0.99), perSec: float64(n) / wall.Seconds()}
			}
		}
		c.rounds = append(c.rounds, res)
	}
	return c
}

// runBlock makes n calls with inflight callers and returns the sorted
// latencies and the wall time. The first error stops the block.
func runBlock(ctx context.Context, n, inflight int, call func(context.Context) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var (
		mu      sync.Mutex
		next    int
		firstEr error
		wg      sync.WaitGroup
	)
	start := time.Now()
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				k := next
				next++
				stop := firstEr != nil
				mu.Unlock()
				if k >= n || stop {
					return
				}
				t0 := time.Now()
				if err := call(ctx); err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					return
				}
				lat[k] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	slices.Sort(lat)
	return lat, wall, firstEr
}

func at(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

// benchSize is how much a heavy run measures: SWITCHBOARD_BENCH_N calls per
// side and round (default def, and at least 20 per caller in flight) and
// SWITCHBOARD_BENCH_ROUNDS rounds (default 3).
func benchSize(def, inflight int) (n, rounds int) {
	n, rounds = def, 3
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	return max(n, 20*inflight), rounds
}

// fmtMMM prints "med (min–max)" with the given precision.
func fmtMMM(s minMedMax, prec int) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	if f(s.min) == f(s.max) {
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.min), f(s.max))
}

// fmtRate prints calls/s rounded to three significant figures, with
// thousands separators.
func fmtRate(s minMedMax) string {
	r := func(v float64) string {
		switch {
		case v >= 100_000:
			v = float64(int(v/1000+0.5)) * 1000
		case v >= 10_000:
			v = float64(int(v/100+0.5)) * 100
		case v >= 1000:
			v = float64(int(v/10+0.5)) * 10
		}
		return thousands(int(v + 0.5))
	}
	if r(s.min) == r(s.max) {
		return r(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", r(s.med), r(s.min), r(s.max))
}

func thousands(v int) string {
	s := strconv.Itoa(v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
