// Package telemetry is the host's stream of redacted product events: what
// happened (a tool call ended, an approval was decided, a panel was
// composed, a model turn was paid for), in a few frozen kinds and fields,
// for a Go callback or a webhook (docs/operations.md, "Telemetry sink").
//
// An event holds names the catalog or the configuration chose (tool,
// model alias), closed sets (surface, class, transport, status, error
// code, decision) and numbers. It never holds an argument, a result, a
// prompt, a token, a key, a user or agent id, or an invocation id: the
// builders below copy named fields one by one out of the ledger entry's
// details, so a field added to the ledger later does not leak here.
package telemetry

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// The frozen event kinds.
const (
	KindToolOutcome     = "tool.outcome"
	KindApprovalDecided = "approval.decided"
	KindPanelComposed   = "panel.composed"
	KindModelUsage      = "model.usage"
)

// Version is Event.V: it changes only if a field changes meaning.
const Version = 1

// Event is one product event. Fields a kind does not use are empty.
type Event struct {
	V    int    `json:"v"`
	Kind string `json:"kind"`
	// Ts is when it happened, UTC, millisecond precision (RFC 3339).
	Ts string `json:"ts"`

	// tool.outcome and approval.decided: the tool's catalog name.
	Tool string `json:"tool,omitempty"`
	// tool.outcome: how and where the call ran, and how it ended.
	Surface    string  `json:"surface,omitempty"`
	Class      string  `json:"class,omitempty"`
	Transport  string  `json:"transport,omitempty"`
	Outcome    string  `json:"outcome,omitempty"` // the invocation's status; panel.composed: opened, refused, fallback
	Code       string  `json:"code,omitempty"`    // the frozen error code of a failed call or refused spec
	DurationMs float64 `json:"durationMs,omitempty"`

	// approval.decided.
	Decision string `json:"decision,omitempty"`
	Channel  string `json:"channel,omitempty"`
	WaitMs   int64  `json:"waitMs,omitempty"`

	// panel.composed: the spec's node count and its validator's issue
	// codes (errors and warnings, each once).
	Nodes  int      `json:"nodes,omitempty"`
	Issues []string `json:"issues,omitempty"`

	// model.usage: the model alias and one turn's tokens and cost (absent
	// when the model has no prices).
	Model             string   `json:"model,omitempty"`
	InputTokens       int64    `json:"inputTokens,omitempty"`
	OutputTokens      int64    `json:"outputTokens,omitempty"`
	CachedInputTokens int64    `json:"cachedInputTokens,omitempty"`
	CostUSD           *float64 `json:"costUsd,omitempty"`
}

// Options configures a Sink.
type Options struct {
	// Callback hears every event, in order, on a goroutine of its own.
	Callback func(Event)
	// Webhook, when set, receives batches as POSTed JSON lines.
	Webhook *WebhookOptions
	// Tool says a tool's class and transport (as for the metrics).
	Tool func(name string) (class, transport string, ok bool)
	// QueueSize bounds the events waiting for each consumer
	// (DefaultQueueSize); beyond it events are dropped and counted.
	QueueSize int
}

// DefaultQueueSize is Options.QueueSize's default.
const DefaultQueueSize = 4096

// Sink feeds events to the callback and the webhook. Emitting never
// blocks: each consumer has a bounded queue, and an event that finds it
// full is dropped and counted. A nil *Sink is off and safe to use.
type Sink struct {
	opts      Options
	consumers []*consumer
	closeOnce sync.Once
}

type consumer struct {
	name    string
	queue   chan Event
	dropped atomic.Int64
	stop    chan struct{} // closed by Close; the queue never is, so a late Emit cannot panic
	done    chan struct{}
}

// next returns the next event, or ok false once Close was called and the
// queue is empty.
func (c *consumer) next(tick <-chan time.Time) (e Event, ok, ticked bool) {
	select {
	case e = <-c.queue:
		return e, true, false
	case <-tick:
		return e, true, true
	case <-c.stop:
		select {
		case e = <-c.queue:
			return e, true, false
		default:
			return e, false, false
		}
	}
}

// New starts a Sink, or returns nil when neither a callback nor a webhook
// is configured; a webhook secret that cannot sign is an error.
func New(opts Options) (*Sink, error) {
	if opts.Callback == nil && opts.Webhook == nil {
		return nil, nil
	}
	var w *webhook
	if opts.Webhook != nil {
		var err error
		if w, err = newWebhook(*opts.Webhook, nil); err != nil {
			return nil, err
		}
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	s := &Sink{opts: opts}
	if cb := opts.Callback; cb != nil {
		c := s.add("callback")
		go func() {
			defer close(c.done)
			for {
				e, ok, _ := c.next(nil)
				if !ok {
					return
				}
				cb(e)
			}
		}()
	}
	if opts.Webhook != nil {
		c := s.add("webhook")
		w.dropped = &c.dropped
		go func() {
			defer close(c.done)
			w.run(c)
		}()
	}
	return s, nil
}

func (s *Sink) add(name string) *consumer {
	c := &consumer{name: name, queue: make(chan Event, s.opts.QueueSize), stop: make(chan struct{}), done: make(chan struct{})}
	s.consumers = append(s.consumers, c)
	return c
}

// Emit queues e for every consumer without waiting. After Close it drops.
func (s *Sink) Emit(e Event) {
	if s == nil {
		return
	}
	e.V = Version
	for _, c := range s.consumers {
		select {
		case c.queue <- e:
		default:
			c.dropped.Add(1)
		}
	}
}

// Dropped reports the events each consumer ("callback", "webhook") lost
// to a full queue or, for the webhook, to a receiver that kept failing.
func (s *Sink) Dropped() map[string]int64 {
	out := map[string]int64{}
	if s == nil {
		return out
	}
	for _, c := range s.consumers {
		out[c.name] = c.dropped.Load()
	}
	return out
}

// Close delivers what is queued and stops: the webhook gets its last
// batches (one attempt each). It returns when that is done or ctx ends.
// Safe to call twice.
func (s *Sink) Close(ctx context.Context) {
	if s == nil {
		return
	}
	s.closeOnce.Do(func() {
		for _, c := range s.consumers {
			close(c.stop)
		}
	})
	for _, c := range s.consumers {
		select {
		case <-c.done:
		case <-ctx.Done():
			return
		}
	}
}

// Entry hears a ledger entry this process appended (it sits beside the
// metrics on activity.Options.OnEntry) and emits its event, if any.
func (s *Sink) Entry(e switchboard.ActivityEntry) {
	if s == nil {
		return
	}
	ts := stamp(e.Ts)
	switch e.Verb {
	case activity.VerbToolCall:
		d, ok := activity.CallOf(e)
		if !ok {
			return
		}
		class, transport := d.Labels(e.Target, s.opts.Tool)
		s.Emit(Event{Kind: KindToolOutcome, Ts: ts, Tool: e.Target, Surface: d.Surface, Class: class,
			Transport: transport, Outcome: d.Status, Code: d.Code, DurationMs: d.DurationMs})
	case activity.VerbApprovalDecide:
		var d struct {
			Decision string `json:"decision"`
			Channel  string `json:"channel"`
			WaitMs   int64  `json:"waitMs"`
		}
		if json.Unmarshal(e.Details, &d) != nil || d.Decision == "" {
			return
		}
		s.Emit(Event{Kind: KindApprovalDecided, Ts: ts, Tool: e.Target, Decision: d.Decision,
			Channel: d.Channel, WaitMs: d.WaitMs})
	}
}

// ModelUsage emits one model turn's usage (cost < 0: the model has no
// prices).
func (s *Sink) ModelUsage(model string, input, output, cachedInput int64, cost float64) {
	if s == nil {
		return
	}
	e := Event{Kind: KindModelUsage, Ts: stamp(now()), Model: model, InputTokens: input,
		OutputTokens: output, CachedInputTokens: cachedInput}
	if cost >= 0 {
		e.CostUSD = &cost
	}
	s.Emit(e)
}

// PanelComposed emits an agent's compose: opened, refused (a repair
// round follows) or fallback (the user sees the fallback card).
func (s *Sink) PanelComposed(outcome, code string, nodes int, issues []string) {
	if s == nil {
		return
	}
	s.Emit(Event{Kind: KindPanelComposed, Ts: stamp(now()), Outcome: outcome, Code: code, Nodes: nodes, Issues: issues})
}

var now = time.Now

// stamp formats a time for Event.Ts.
func stamp(t time.Time) string {
	if t.IsZero() {
		t = now()
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
