package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/telemetry"
)

// A receiver that does not answer costs events, never the caller's time:
// Emit returns at once, and what does not fit the queue is counted.
func TestSlowReceiverDropsAndCounts(t *testing.T) {
	release := make(chan struct{})
	var got atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		b, _ := io.ReadAll(r.Body)
		got.Add(int64(strings.Count(string(b), "\n")))
	}))
	defer hook.Close()
	s := telemetry.New(telemetry.Options{QueueSize: 4, Webhook: &telemetry.WebhookOptions{URL: hook.URL, BatchSize: 1}})
	for range 20 {
		s.Emit(telemetry.Event{Kind: telemetry.KindModelUsage, Model: "m"})
	}
	dropped := s.Dropped()["webhook"]
	if dropped < 15 {
		t.Fatalf("dropped %d of 20 with room for 5; want at least 15", dropped)
	}
	close(release)
	s.Close(context.Background())
	if n := got.Load(); n+dropped != 20 {
		t.Fatalf("received %d and dropped %d of 20", n, dropped)
	}
}

// A failing receiver is retried with backoff; a batch that never lands is
// dropped and counted.
func TestWebhookRetriesThenDrops(t *testing.T) {
	var mu sync.Mutex
	var attempts, lines int
	failFirst := 2
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts <= failFirst {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		lines += strings.Count(string(b), "\n")
	}))
	defer hook.Close()
	opts := &telemetry.WebhookOptions{URL: hook.URL, BatchSize: 1, Attempts: 3, Backoff: time.Millisecond}
	s := telemetry.New(telemetry.Options{Webhook: opts})
	s.Emit(telemetry.Event{Kind: telemetry.KindToolOutcome, Tool: "t"})
	s.Close(context.Background())
	if attempts != 3 || lines != 1 || s.Dropped()["webhook"] != 0 {
		t.Fatalf("attempts %d, lines %d, dropped %d; want 3, 1, 0", attempts, lines, s.Dropped()["webhook"])
	}

	attempts, lines, failFirst = 0, 0, 100
	s = telemetry.New(telemetry.Options{Webhook: opts})
	s.Emit(telemetry.Event{Kind: telemetry.KindToolOutcome, Tool: "t"})
	s.Close(context.Background())
	if attempts != 3 || lines != 0 || s.Dropped()["webhook"] != 1 {
		t.Fatalf("attempts %d, lines %d, dropped %d; want 3, 0, 1", attempts, lines, s.Dropped()["webhook"])
	}
	s.Emit(telemetry.Event{Kind: telemetry.KindToolOutcome}) // after Close: taken and ignored, no panic
	s.Close(context.Background())
}

// Off is nil, and a nil Sink takes events without doing anything.
func TestNilSinkIsOff(t *testing.T) {
	s := telemetry.New(telemetry.Options{})
	if s != nil {
		t.Fatal("a sink with nowhere to send is not nil")
	}
	s.Emit(telemetry.Event{})
	s.ModelUsage("m", 1, 1, 0, -1)
	s.PanelComposed("opened", "", 1, nil)
	s.Close(context.Background())
}
