package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// WebhookOptions configure the webhook consumer.
type WebhookOptions struct {
	// URL receives POST requests whose body is JSON lines, one Event per
	// line (Content-Type application/x-ndjson).
	URL string
	// Client sends them; nil is a client with a 10 s timeout.
	Client *http.Client
	// BatchSize bounds the events of one POST (DefaultBatchSize);
	// FlushInterval bounds how long an event waits for its batch to fill
	// (DefaultFlushInterval).
	BatchSize     int
	FlushInterval time.Duration
	// Attempts is how many times a batch is sent before it is dropped and
	// counted (DefaultAttempts); Backoff is the first wait between
	// attempts, doubled after each (DefaultBackoff).
	Attempts int
	Backoff  time.Duration
}

// Webhook defaults.
const (
	DefaultBatchSize     = 100
	DefaultFlushInterval = time.Second
	DefaultAttempts      = 4
	DefaultBackoff       = 500 * time.Millisecond
)

type webhook struct {
	o       WebhookOptions
	dropped *atomic.Int64
	// closing is set once the queue is closed: the last batches get one
	// attempt each, so Close is not held up by a receiver that is down.
	closing bool
}

func newWebhook(o WebhookOptions, dropped *atomic.Int64) *webhook {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	return &webhook{o: o, dropped: dropped}
}

// run batches the queue until Close, then sends what is left. While a
// batch is being sent (or retried) the queue fills and Emit drops: a slow
// receiver costs events, never a call's time.
func (w *webhook) run(c *consumer) {
	t := time.NewTicker(w.o.FlushInterval)
	defer t.Stop()
	batch := make([]Event, 0, w.o.BatchSize)
	for {
		e, ok, ticked := c.next(t.C)
		switch {
		case !ok:
			w.closing = true
			w.send(batch)
			return
		case ticked:
			w.send(batch)
			batch = batch[:0]
		default:
			batch = append(batch, e)
			if len(batch) >= w.o.BatchSize {
				w.send(batch)
				batch = batch[:0]
			}
		}
	}
}

// send POSTs one batch, retrying with backoff; a batch that never lands is
// counted in dropped.
func (w *webhook) send(batch []Event) {
	if len(batch) == 0 {
		return
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body) // one line per event
	for _, e := range batch {
		_ = enc.Encode(e) // plain struct: cannot fail
	}
	wait := w.o.Backoff
	for attempt := 1; ; attempt++ {
		if w.post(body.Bytes()) == nil {
			return
		}
		if attempt >= w.o.Attempts || w.closing {
			w.dropped.Add(int64(len(batch)))
			return
		}
		time.Sleep(wait)
		wait *= 2
	}
}

func (w *webhook) post(body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.o.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := w.o.Client.Do(req)
	if err != nil {
		return err
	}
	_ = res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("telemetry webhook answered %s", res.Status)
	}
	return nil
}
