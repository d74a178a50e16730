package bus

import (
	"context"
	"slices"
	"sync"

	"github.com/switchboardhq/switchboard"
)

// Local is the in-process Bus: Publish calls the topic's handlers on the
// publishing goroutine. Safe for concurrent use.
type Local struct {
	mu     sync.RWMutex
	topics map[string][]*sub // copy on write: Publish reads a snapshot
	closed bool
}

type sub struct{ h Handler }

var _ Bus = (*Local)(nil)

// NewLocal returns an empty in-process bus.
func NewLocal() *Local { return &Local{topics: map[string][]*sub{}} }

// Publish calls every handler subscribed to topic when Publish started. A
// handler cancelled concurrently may still see this one message.
func (b *Local) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := checkPayload(topic, payload); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return switchboard.Errorf(switchboard.CodeOf(err), "publish on %s: %w", topic, err)
	}
	b.mu.RLock()
	subs, closed := b.topics[topic], b.closed
	b.mu.RUnlock()
	if closed {
		return switchboard.Errorf(switchboard.CodeUnavailable, "publish on %s: bus is closed", topic)
	}
	for _, s := range subs {
		s.h(payload)
	}
	return nil
}

// Subscribe registers h for topic.
func (b *Local) Subscribe(topic string, h Handler) (func(), error) {
	s := &sub{h: h}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "subscribe to %s: bus is closed", topic)
	}
	b.topics[topic] = append(slices.Clip(b.topics[topic]), s)
	var once sync.Once
	return func() { once.Do(func() { b.unsubscribe(topic, s) }) }, nil
}

func (b *Local) unsubscribe(topic string, s *sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	subs := b.topics[topic]
	i := slices.Index(subs, s)
	if i < 0 {
		return
	}
	if len(subs) == 1 {
		delete(b.topics, topic)
		return
	}
	// A fresh slice: a concurrent Publish may still be reading the old one.
	b.topics[topic] = slices.Delete(slices.Clone(subs), i, i+1)
}

// Topics reports how many topics have subscribers (tests use it to prove
// that nothing leaks).
func (b *Local) Topics() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.topics)
}

// Close refuses further use; current subscriptions are dropped.
func (b *Local) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.topics = map[string][]*sub{}
	return nil
}
