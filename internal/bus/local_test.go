package bus_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
)

func TestLocalDeliversToCurrentSubscribers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bus.NewLocal()
	var got []string
	var mu sync.Mutex
	rec := func(name string) bus.Handler {
		return func(p []byte) { mu.Lock(); got = append(got, name+":"+string(p)); mu.Unlock() }
	}
	cancelA, _ := b.Subscribe("t", rec("a"))
	cancelB, _ := b.Subscribe("t", rec("b"))
	_, _ = b.Subscribe("other", rec("x"))
	if err := b.Publish(ctx, "t", []byte("1")); err != nil {
		t.Fatal(err)
	}
	cancelA()
	cancelA() // idempotent
	if err := b.Publish(ctx, "t", []byte("2")); err != nil {
		t.Fatal(err)
	}
	cancelB()
	if err := b.Publish(ctx, "t", []byte("3")); err != nil { // nobody listens: dropped
		t.Fatal(err)
	}
	want := "a:1 b:1 b:2"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("delivered %q, want %q", s, want)
	}
	if n := b.Topics(); n != 1 {
		t.Fatalf("%d topics left, want 1 (only \"other\")", n)
	}
}

func TestLocalRefusesOversizeAndClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bus.NewLocal()
	err := b.Publish(ctx, "t", make([]byte, bus.MaxPayload+1))
	if switchboard.CodeOf(err) != switchboard.CodePayloadTooLarge {
		t.Fatalf("oversize publish: %v", err)
	}
	if err := b.Publish(ctx, "t", make([]byte, bus.MaxPayload)); err != nil {
		t.Fatalf("publish at the limit: %v", err)
	}
	b.Close()
	if err := b.Publish(ctx, "t", nil); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("publish after close: %v", err)
	}
	if _, err := b.Subscribe("t", func([]byte) {}); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("subscribe after close: %v", err)
	}
}

func TestLocalConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bus.NewLocal()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				got := make(chan struct{}, 1)
				cancel, _ := b.Subscribe("topic", func([]byte) {
					select {
					case got <- struct{}{}:
					default:
					}
				})
				_ = b.Publish(ctx, "topic", []byte{byte(i)})
				<-got // our own subscription saw our own publish
				cancel()
			}
		}()
	}
	wg.Wait()
	if n := b.Topics(); n != 0 {
		t.Fatalf("%d topics left after every cancel", n)
	}
}
