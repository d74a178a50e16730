package telemetry_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/telemetry"
)

func newSink(t *testing.T, o telemetry.Options) *telemetry.Sink {
	t.Helper()
	s, err := telemetry.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// With a secret every POST is signed the Standard Webhooks way, and the
// spec's own library verifies it; a retry keeps the message id (so the
// receiver can drop a batch it already took) and signs anew. A body
// changed on the way fails verification; a bad secret fails New.
func TestWebhookSigned(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	type post struct {
		h    http.Header
		body []byte
	}
	posts := make(chan post, 4)
	var n atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posts <- post{r.Header.Clone(), b}
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway) // the first attempt fails: a retry follows
		}
	}))
	defer hook.Close()
	s := newSink(t, telemetry.Options{Webhook: &telemetry.WebhookOptions{URL: hook.URL, BatchSize: 1, Backoff: time.Millisecond, Secret: secret}})
	s.Emit(telemetry.Event{Kind: telemetry.KindToolOutcome, Tool: "tasks.create"})
	s.Close(context.Background())
	first, second := <-posts, <-posts
	for i, p := range []post{first, second} {
		if err := verifier.Verify(p.body, p.h); err != nil {
			t.Fatalf("post %d does not verify: %v (headers %v)", i+1, err, p.h)
		}
	}
	if id := first.h.Get("webhook-id"); id == "" || id != second.h.Get("webhook-id") {
		t.Errorf("the retry's id %q is not the first attempt's %q", second.h.Get("webhook-id"), id)
	}
	tampered := append([]byte{}, first.body...)
	tampered[len(tampered)-2] = ' '
	if err := verifier.Verify(tampered, first.h); err == nil {
		t.Error("a changed body verified")
	}
	for _, bad := range []string{"not-a-secret", "whsec_!!!", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))} {
		if _, err := telemetry.New(telemetry.Options{Webhook: &telemetry.WebhookOptions{URL: hook.URL, Secret: bad}}); err == nil {
			t.Errorf("secret %q was taken", bad)
		}
	}
}

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
	s := newSink(t, telemetry.Options{QueueSize: 4, Webhook: &telemetry.WebhookOptions{URL: hook.URL, BatchSize: 1}})
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
	s := newSink(t, telemetry.Options{Webhook: opts})
	s.Emit(telemetry.Event{Kind: telemetry.KindToolOutcome, Tool: "t"})
	s.Close(context.Background())
	if attempts != 3 || lines != 1 || s.Dropped()["webhook"] != 0 {
		t.Fatalf("attempts %d, lines %d, dropped %d; want 3, 1, 0", attempts, lines, s.Dropped()["webhook"])
	}

	attempts, lines, failFirst = 0, 0, 100
	s = newSink(t, telemetry.Options{Webhook: opts})
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
	s, err := telemetry.New(telemetry.Options{})
	if s != nil || err != nil {
		t.Fatal("a sink with nowhere to send is not nil")
	}
	s.Emit(telemetry.Event{})
	s.ModelUsage("m", 1, 1, 0, -1)
	s.PanelComposed("opened", "", 1, nil)
	s.Close(context.Background())
}

// A tool.call a tab ran is a browser call even when its tool is no longer
// known (the tab closed: SESSION_GONE), as the metrics label it.
func TestToolOutcomeOfAGoneTabTool(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []telemetry.Event
	)
	s := newSink(t, telemetry.Options{
		Callback: func(e telemetry.Event) { mu.Lock(); got = append(got, e); mu.Unlock() },
		Tool:     func(string) (string, string, bool) { return "", "", false },
	})
	s.Entry(switchboard.ActivityEntry{ID: 1, Verb: activity.VerbToolCall, Target: "nav.goto",
		Details: []byte(`{"status":"failed","surface":"browser","durationMs":2,"code":"SESSION_GONE"}`)})
	s.Close(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Transport != "browser" || got[0].Class != "other" {
		t.Fatalf("events %+v, want one tool outcome with transport browser, class other", got)
	}
}
