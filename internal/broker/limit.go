package broker

import (
	"context"
	"sync"
)

// limiter bounds calls in flight per tool. A call over the limit waits, in
// arrival order, for a slot — bounded by its own deadline — rather than
// failing at once: bursts from one agent are normal and a short wait is
// kinder than an error. A tool with more than maxQueue×limit calls already
// waiting refuses new ones at once, so a runaway caller cannot pile up
// goroutines. The limit is read on every call, so a re-registered tool's new
// MaxConcurrency applies to the next call.
type limiter struct {
	maxQueue int

	mu    sync.Mutex
	tools map[string]*slots
	// queued, when set (tests), is called after a call starts waiting.
	queued func(tool string)
}

// slots is one tool's state: how many calls run and who waits, FIFO.
type slots struct {
	running int
	waiters []*waiter
}

type waiter struct {
	ready   chan struct{} // closed when a slot is handed over
	granted bool
}

// errQueueFull and errNoSlot are mapped to coded errors by the broker,
// which knows the tool's name and the caller's context.
type queueFull struct{ waiting, limit int }

func (queueFull) Error() string { return "queue full" }

func newLimiter(maxQueue int) *limiter {
	return &limiter{maxQueue: maxQueue, tools: map[string]*slots{}}
}

// acquire takes a slot for tool, waiting while limit calls run. It returns
// the function that gives the slot back (call it exactly once), or
// queueFull, or ctx's error when ctx ends first.
func (l *limiter) acquire(ctx context.Context, tool string, limit int) (func(), error) {
	l.mu.Lock()
	s := l.tools[tool]
	if s == nil {
		s = &slots{}
		l.tools[tool] = s
	}
	if s.running < limit && len(s.waiters) == 0 {
		s.running++
		l.mu.Unlock()
		return l.releaser(tool, limit), nil
	}
	if len(s.waiters) >= l.maxQueue*limit {
		n := len(s.waiters)
		l.mu.Unlock()
		return nil, queueFull{waiting: n, limit: limit}
	}
	w := &waiter{ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	hook := l.queued
	l.mu.Unlock()
	if hook != nil {
		hook(tool)
	}
	select {
	case <-w.ready:
		return l.releaser(tool, limit), nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.granted { // handed a slot while giving up: pass it on
		l.releaseLocked(tool, limit)
		return nil, ctx.Err()
	}
	for i, x := range s.waiters {
		if x == w {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			break
		}
	}
	l.gcLocked(tool, s)
	return nil, ctx.Err()
}

func (l *limiter) releaser(tool string, limit int) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.releaseLocked(tool, limit)
			l.mu.Unlock()
		})
	}
}

// releaseLocked frees one slot and hands it to the first waiter.
func (l *limiter) releaseLocked(tool string, limit int) {
	s := l.tools[tool]
	s.running--
	for s.running < limit && len(s.waiters) > 0 {
		w := s.waiters[0]
		s.waiters = s.waiters[1:]
		w.granted = true
		s.running++
		close(w.ready)
	}
	l.gcLocked(tool, s)
}

func (l *limiter) gcLocked(tool string, s *slots) {
	if s.running == 0 && len(s.waiters) == 0 {
		delete(l.tools, tool)
	}
}

// load reports calls running and waiting for tool.
func (l *limiter) load(tool string) (running, waiting int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.tools[tool]; s != nil {
		return s.running, len(s.waiters)
	}
	return 0, 0
}
