// Package metrics keeps switchboard's Prometheus metrics and serves them in
// the text exposition format. It hears what happened from the ledger — the
// entries this process appended (activity.Options.OnEntry) — and from a
// few counters and gauges the daemon reports to it, so it adds no hook to
// the call path beyond the one observer the ledger already has.
//
// Every name starts with switchboard_; names and labels are pinned in
// docs/operations.md. No label takes an argument, a user id or an
// invocation id: tool and model names are the only open sets, and each is
// capped (Options.MaxTools, Options.MaxModels) with "other" beyond the cap.
package metrics

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// Defaults for Options.
const (
	DefaultMaxTools  = 500
	DefaultMaxModels = 50
	// Other is the label value that stands for every tool or model past
	// the cap, and for a class or transport the catalog no longer knows.
	Other = "other"
)

// Options configures Metrics. A nil *Options means defaults.
type Options struct {
	// Tool says a tool's class and transport (how a call reaches the app:
	// "go", "http", "browser", "job"); ok false for a tool the catalog no
	// longer holds. Nil labels every call's class and transport "other".
	Tool func(name string) (class, transport string, ok bool)
	// MaxTools and MaxModels cap the distinct tool and model label values.
	MaxTools, MaxModels int
}

// Metrics holds the daemon's collectors. Safe for concurrent use.
type Metrics struct {
	reg  *prometheus.Registry
	opts Options

	tools, models *capped

	calls        *prometheus.CounterVec
	callSeconds  *prometheus.HistogramVec
	callErrors   *prometheus.CounterVec
	browserRTT   prometheus.Histogram
	sessionGone  prometheus.Counter
	approvals    *prometheus.CounterVec
	approvalWait *prometheus.HistogramVec
	jobs         *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	cost         *prometheus.CounterVec
	sweeps       prometheus.Counter
	swept        *prometheus.CounterVec
}

// Latency buckets in seconds: from an in-process Go function (sub-ms) to
// a browser round trip or an HTTP backend near its timeout.
var callBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Approval waits are people: seconds to hours.
var waitBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}

// New returns Metrics with every collector registered, plus the Go
// runtime and process collectors.
func New(opts *Options) *Metrics {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxTools <= 0 {
		o.MaxTools = DefaultMaxTools
	}
	if o.MaxModels <= 0 {
		o.MaxModels = DefaultMaxModels
	}
	m := &Metrics{reg: prometheus.NewRegistry(), opts: o, tools: newCapped(o.MaxTools), models: newCapped(o.MaxModels)}
	callLabels := []string{"tool", "surface", "class", "transport", "outcome"}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_calls_total",
		Help: "Tool calls that reached a terminal state, by tool, surface, class, transport and outcome (the invocation's status)."}, callLabels)
	m.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_call_duration_seconds",
		Help: "Time from a call's record to its terminal state.", Buckets: callBuckets}, callLabels)
	m.callErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_call_errors_total",
		Help: "Failed calls by surface and frozen error code."}, []string{"surface", "code"})
	m.browserRTT = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_browser_round_trip_seconds",
		Help: "Browser tool calls: dispatch to a tab until its result (or the end of the wait).", Buckets: callBuckets})
	m.sessionGone = prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_browser_session_gone_total",
		Help: "Browser tool calls that ended SESSION_GONE: the tab went away mid-call."})
	m.approvals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_approvals_total",
		Help: "Approval requests decided, by decision (approved, denied, expired, cancelled)."}, []string{"decision"})
	m.approvalWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_approval_wait_seconds",
		Help: "Time from an approval request to its decision.", Buckets: waitBuckets}, []string{"decision"})
	m.jobs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_jobs_finished_total",
		Help: "Background jobs that ended, by status."}, []string{"status"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_model_tokens_total",
		Help: "Model tokens used by agent runs, by model and kind (input, output, cached_input)."}, []string{"model", "kind"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_model_cost_usd_total",
		Help: "Model cost of agent runs in US dollars, by model (only models configured with prices)."}, []string{"model"})
	m.sweeps = prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_retention_sweeps_total",
		Help: "Retention sweeps run."})
	m.swept = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_retention_deleted_total",
		Help: "Rows the retention sweeps deleted, by kind (idempotency_keys, invocations)."}, []string{"kind"})
	m.reg.MustRegister(storeCommit, storeBatch, busLag)
	m.reg.MustRegister(m.calls, m.callSeconds, m.callErrors, m.browserRTT, m.sessionGone, m.approvals, m.approvalWait,
		m.jobs, m.tokens, m.cost, m.sweeps, m.swept,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Process-wide collectors: the store drivers and the bus are built by the
// host before, and apart from, any daemon, so they report here and every
// daemon's registry serves the same series. Observing costs two atomic adds.
var (
	storeCommit = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_store_commit_seconds",
		Help: "Store write transactions (group commits): BEGIN to COMMIT of one batch.", Buckets: commitBuckets})
	storeBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_store_commit_batch_size",
		Help: "Writes committed together in one group commit.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64}})
	busLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_bus_lag_seconds",
		Help: "Postgres bus: a message's publish until its notification arrives on a listening connection (this replica's probe).", Buckets: commitBuckets})
)

// Commits and bus messages: sub-millisecond on a quiet machine, seconds
// when the disk or the database server is in trouble.
var commitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// StoreCommit records one group commit: its writes and how long it took.
func StoreCommit(writes int, d time.Duration) {
	storeCommit.Observe(d.Seconds())
	storeBatch.Observe(float64(writes))
}

// BusLag records one bus message's publish-to-arrival time.
func BusLag(d time.Duration) { busLag.Observe(d.Seconds()) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Gauge registers a gauge read at scrape time from fn (open tabs, agent
// sessions, runs, jobs): the count is the subsystem's own, never a copy
// kept in step with it. name must start with switchboard_.
func (m *Metrics) Gauge(name, help string, fn func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// CounterFunc registers a counter read at scrape time from fn, with
// constant labels (the telemetry sink's drops). name must start with
// switchboard_.
func (m *Metrics) CounterFunc(name, help string, labels map[string]string, fn func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, fn))
}

// Entry hears one ledger entry this process appended; it is
// activity.Options.OnEntry.
func (m *Metrics) Entry(e switchboard.ActivityEntry) {
	switch e.Verb {
	case activity.VerbToolCall:
		m.call(e)
	case activity.VerbApprovalDecide:
		var d struct {
			Decision string  `json:"decision"`
			WaitMs   float64 `json:"waitMs"`
		}
		if json.Unmarshal(e.Details, &d) != nil || d.Decision == "" {
			return
		}
		m.approvals.WithLabelValues(d.Decision).Inc()
		if d.WaitMs > 0 {
			m.approvalWait.WithLabelValues(d.Decision).Observe(d.WaitMs / 1000)
		}
	case activity.VerbJobFinish:
		var d struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(e.Details, &d) == nil && d.Status != "" {
			m.jobs.WithLabelValues(d.Status).Inc()
		}
	}
}

// call counts a tool.call entry: its details carry the status, surface,
// duration and error code (internal/broker/record.go ledgerDetails).
func (m *Metrics) call(e switchboard.ActivityEntry) {
	d, ok := activity.CallOf(e)
	if !ok {
		return
	}
	class, transport := d.Labels(e.Target, m.opts.Tool)
	tool := m.tools.value(e.Target)
	m.calls.WithLabelValues(tool, d.Surface, class, transport, d.Status).Inc()
	m.callSeconds.WithLabelValues(tool, d.Surface, class, transport, d.Status).Observe(d.DurationMs / 1000)
	if d.Code != "" {
		m.callErrors.WithLabelValues(d.Surface, d.Code).Inc()
	}
	if d.Surface == string(switchboard.SurfaceBrowser) {
		m.browserRTT.Observe(d.DurationMs / 1000)
		if d.Code == string(switchboard.CodeSessionGone) {
			m.sessionGone.Inc()
		}
	}
}

// ModelUsage adds one model turn's tokens and cost (cost < 0: the model
// has no prices).
func (m *Metrics) ModelUsage(model string, input, output, cachedInput int64, cost float64) {
	model = m.models.value(model)
	m.tokens.WithLabelValues(model, "input").Add(float64(input))
	m.tokens.WithLabelValues(model, "output").Add(float64(output))
	if cachedInput > 0 {
		m.tokens.WithLabelValues(model, "cached_input").Add(float64(cachedInput))
	}
	if cost >= 0 {
		m.cost.WithLabelValues(model).Add(cost)
	}
}

// RetentionSweep counts one sweep and what it deleted.
func (m *Metrics) RetentionSweep(keys, invocations int) {
	m.sweeps.Inc()
	m.swept.WithLabelValues("idempotency_keys").Add(float64(keys))
	m.swept.WithLabelValues("invocations").Add(float64(invocations))
}

// capped admits at most n distinct label values; later ones read Other.
// A tool name is bounded by the catalog, but tabs add browser tools and
// the catalog has no fixed size, so the series count is bounded here.
type capped struct {
	mu   sync.RWMutex
	n    int
	seen map[string]struct{}
}

func newCapped(n int) *capped { return &capped{n: n, seen: map[string]struct{}{}} }

func (c *capped) value(v string) string {
	c.mu.RLock()
	_, ok := c.seen[v]
	full := len(c.seen) >= c.n
	c.mu.RUnlock()
	if ok {
		return v
	}
	if full || v == "" {
		return Other
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) >= c.n {
		return Other
	}
	c.seen[v] = struct{}{}
	return v
}
