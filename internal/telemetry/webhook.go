package telemetry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
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
	// Secret, when set, signs every POST the Standard Webhooks way
	// (webhook-id, webhook-timestamp, webhook-signature: HMAC-SHA256 over
	// "id.timestamp.body"), so the receiver can tell the events are the
	// daemon's and fresh. It is a "whsec_" + base64 key, as the spec's
	// libraries in every language read it. A retry sends the same id (the
	// receiver drops a batch it already has) with a new timestamp.
	Secret string
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
	signer  *standardwebhooks.Webhook // nil: unsigned
	dropped *atomic.Int64
	// closing is set once the queue is closed: the last batches get one
	// attempt each, so Close is not held up by a receiver that is down.
	closing bool
}

// CheckSecret reports whether secret is a key the webhook can sign with.
func CheckSecret(secret string) error {
	if !strings.HasPrefix(secret, "whsec_") {
		return fmt.Errorf("a telemetry webhook secret starts with whsec_ followed by a base64 key (e.g. whsec_$(openssl rand -base64 32))")
	}
	if _, err := standardwebhooks.NewWebhook(secret); err != nil {
		return fmt.Errorf("the telemetry webhook secret is not whsec_ + base64: %v", err)
	}
	if n := base64.StdEncoding.DecodedLen(len(strings.TrimPrefix(secret, "whsec_"))); n < 24 {
		return fmt.Errorf("the telemetry webhook secret's key is too short: use at least 24 random bytes (whsec_$(openssl rand -base64 32))")
	}
	return nil
}

func newWebhook(o WebhookOptions, dropped *atomic.Int64) (*webhook, error) {
	var signer *standardwebhooks.Webhook
	if o.Secret != "" {
		if err := CheckSecret(o.Secret); err != nil {
			return nil, err
		}
		var err error
		if signer, err = standardwebhooks.NewWebhook(o.Secret); err != nil {
			return nil, err
		}
	}
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
	return &webhook{o: o, signer: signer, dropped: dropped}, nil
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
	id := "msg_" + rand.Text() // one id per batch, kept across retries
	wait := w.o.Backoff
	for attempt := 1; ; attempt++ {
		if w.post(id, body.Bytes()) == nil {
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

func (w *webhook) post(id string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.o.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if w.signer != nil {
		now := time.Now()
		sig, err := w.signer.Sign(id, now, body)
		if err != nil {
			return err
		}
		req.Header.Set(standardwebhooks.HeaderWebhookID, id)
		req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	}
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
