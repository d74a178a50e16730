package daemon

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	engine "github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/telemetry"
)

// Options configure a Daemon. Store and AdminToken are required; the
// caller owns the store and closes it after Close. Every other field's
// zero value means the default.
type Options struct {
	Store switchboard.Store
	// AdminToken is the bearer token of the admin (the operator): the
	// console, the CLI, and the routes that configure the daemon.
	AdminToken string
	Logger     *slog.Logger
	// AllowOrigins are the browser origins, beside the daemon's own, whose
	// pages may call the API (the app's origin, when the SDK runs there).
	AllowOrigins []string
	// AllowHosts restricts accepted Host headers (DNS-rebinding
	// protection); empty accepts any.
	AllowHosts []string
	// Bus carries dispatches and results between replicas sharing the
	// store (OpenBus); nil means in-process, for one daemon.
	Bus *Bus
	// Demo enables the demo app (POST /demo/session with the demo key,
	// same origin only); DemoKey is that key, empty for a fresh random one
	// (DemoURL shows it).
	Demo    bool
	DemoKey string
	// MCP tunes the tool listing at /mcp.
	MCP MCPOptions
	// Models are the assistant's model aliases (the config file's
	// `models:`); without one, runs fail with MODEL_ERROR saying how to
	// configure it.
	Models map[string]ModelConfig
	// Governance tunes approvals, rate limits and the ledger.
	Governance GovernanceOptions
	// Canvas is the daemon's layer of the canvas policy (docs/panels.md);
	// the zero value is guarded.
	Canvas CanvasPolicy
	// Previews serves preview nodes from a sandboxed origin of the
	// program's own (PreviewOrigin); nil keeps code preview off.
	Previews      Previews
	PreviewOrigin string
	// Replicas names this daemon among the replicas sharing its store.
	Replicas ReplicaOptions
	// Retention says how long invocation records, idempotency keys and
	// finished runs are kept; the ledger is kept forever.
	Retention RetentionOptions
	// MetricsElsewhere leaves GET /metrics off the API, for the program to
	// serve MetricsHandler on a listener of its own.
	MetricsElsewhere bool
	// NoSearchLearning turns off search that learns from use.
	NoSearchLearning bool
	// Assertion tunes the signed "who acts for whom" every HTTP-binding
	// request carries (package assertion).
	Assertion AssertionOptions
	// OAuth makes /mcp an OAuth protected resource (docs/oauth.md).
	OAuth OAuthOptions
	// Telemetry sends redacted product events to a callback or a webhook
	// (docs/operations.md, "Telemetry sink"); the zero value sends none.
	Telemetry TelemetryOptions
}

// TelemetryOptions say where the redacted product events go. Delivery
// never holds up a call: events that find a full queue are dropped and
// counted (switchboard_telemetry_dropped_total).
type TelemetryOptions struct {
	// Callback hears every event, in order, on a goroutine of its own.
	Callback func(TelemetryEvent)
	// WebhookURL receives batches of events as POSTed JSON lines, retried
	// with backoff; HTTPClient sends them (nil: a 10 s timeout).
	WebhookURL string
	HTTPClient *http.Client
	// WebhookSecret, when set, signs each POST the Standard Webhooks way
	// (webhook-id, webhook-timestamp, webhook-signature headers): a
	// "whsec_" + base64 key of at least 24 bytes, which the receiver
	// verifies with any Standard Webhooks library (docs/operations.md).
	WebhookSecret string
}

// TelemetryEvent is one redacted product event: a frozen kind
// ("tool.outcome", "approval.decided", "panel.composed", "model.usage"),
// names the catalog or configuration chose, closed sets and numbers —
// never an argument, result, prompt, token, key, user or invocation id.
// Fields a kind does not use are empty.
type TelemetryEvent struct {
	V    int    `json:"v"`
	Kind string `json:"kind"`
	Ts   string `json:"ts"`

	Tool       string  `json:"tool,omitempty"`
	Surface    string  `json:"surface,omitempty"`
	Class      string  `json:"class,omitempty"`
	Transport  string  `json:"transport,omitempty"`
	Outcome    string  `json:"outcome,omitempty"`
	Code       string  `json:"code,omitempty"`
	DurationMs float64 `json:"durationMs,omitempty"`

	Decision string `json:"decision,omitempty"`
	Channel  string `json:"channel,omitempty"`
	WaitMs   int64  `json:"waitMs,omitempty"`

	Nodes  int      `json:"nodes,omitempty"`
	Issues []string `json:"issues,omitempty"`

	Model             string   `json:"model,omitempty"`
	InputTokens       int64    `json:"inputTokens,omitempty"`
	OutputTokens      int64    `json:"outputTokens,omitempty"`
	CachedInputTokens int64    `json:"cachedInputTokens,omitempty"`
	CostUSD           *float64 `json:"costUsd,omitempty"`
}

// engine translates the telemetry options; the event converts field for
// field (the two structs must stay identical, which the conversion checks).
func (t TelemetryOptions) engine() engine.TelemetryOptions {
	var e engine.TelemetryOptions
	if cb := t.Callback; cb != nil {
		e.Callback = func(ev telemetry.Event) { cb(TelemetryEvent(ev)) }
	}
	if t.WebhookURL != "" {
		e.Webhook = &telemetry.WebhookOptions{URL: t.WebhookURL, Client: t.HTTPClient, Secret: t.WebhookSecret}
	}
	return e
}

// MCPOptions tune the MCP endpoint's tool listing (docs/mcp.md).
type MCPOptions struct {
	// Mode is "full" (every tool the caller may see, with its schemas),
	// "deferred" (the meta tools, to search, describe and call, and the
	// pinned tools) or "" (auto: full while the caller sees at most
	// Threshold tools, deferred beyond; Threshold 30 when 0).
	Mode      string
	Threshold int
}

// ModelConfig is one model alias, as the config file's `models:` map has
// it: provider is "openai" (any OpenAI-compatible server) or "anthropic";
// the API key is read from the variable APIKeyEnv names, never stored.
type ModelConfig struct {
	Provider  string
	Model     string
	BaseURL   string
	APIKeyEnv string
	// MaxTokens bounds each answer; zero means the provider's default.
	MaxTokens int
	// Caps overrides the provider's default capabilities field by field.
	Caps *ModelCaps
	// Price enables per-run cost accounting.
	Price *ModelPrice
}

// ModelCaps are a model's capabilities; nil fields keep the provider's
// default.
type ModelCaps struct {
	Vision        *bool
	Tools         *bool
	ContextTokens *int
	Streaming     *bool
}

// ModelPrice is what a model costs, in a currency unit per million tokens.
type ModelPrice struct {
	InputPerMTok  float64
	OutputPerMTok float64
	// CachedInputPerMTok prices cached input tokens; zero means
	// InputPerMTok.
	CachedInputPerMTok float64
}

// GovernanceOptions tune approvals, rate limits and the ledger
// (docs/governance.md).
type GovernanceOptions struct {
	// ApprovalTTL is how long a call waits for the user's decision before
	// it is denied as expired (10 minutes when 0).
	ApprovalTTL time.Duration
	// ApprovalFloor is the least approval an agent's call of each class
	// gets (nil: mutate and job need the user).
	ApprovalFloor map[switchboard.Class]switchboard.Approval
	// MaxPendingPerAgent bounds one agent's queue of calls awaiting
	// approval.
	MaxPendingPerAgent int
	// RateLimit bounds agents' calls per agent and per tool; nil means
	// DefaultRateLimit(), a zero RateLimit means unlimited.
	RateLimit *RateLimit
	// LedgerAnchor keeps the ledger's head checkpoint outside the store
	// (OpenAnchor); nil keeps it in memory, for this process only.
	LedgerAnchor *Anchor
	// DailyQuota bounds what each agent, and each user agents act for, may
	// spend a UTC day (calls, model tokens, cost), counted in the store
	// and shared by replicas; the zero value limits nothing.
	DailyQuota switchboard.DailyQuota
}

// RateLimit bounds calls per principal and per tool with token buckets.
// By default only agents are limited: they are what can run away.
type RateLimit struct {
	PerPrincipal Rate
	PerTool      Rate
	// Users also limits user principals and calls without a principal.
	Users bool
}

// Rate is a token bucket's refill rate and size. A zero PerSecond means
// unlimited.
type Rate struct {
	PerSecond float64
	Burst     int
}

// DefaultRateLimit is the limit a nil GovernanceOptions.RateLimit means:
// generous, so that only a runaway loop meets it.
func DefaultRateLimit() RateLimit {
	l := engine.DefaultRateLimit
	return RateLimit{PerPrincipal: Rate(l.PerPrincipal), PerTool: Rate(l.PerTool), Users: l.Users}
}

// CanvasPolicy is the daemon's layer of the canvas policy: how freely
// agents may change a tab's panels. Preset is "guarded" or "open" and sets
// every gate; a gate set beside it overrides the preset's value for that
// gate; nil gates keep the layer below (docs/panels.md, "Layers").
type CanvasPolicy struct {
	Preset string
	// HITLOnCompose makes an agent's panel.compose and panel.patch wait
	// for the user's approval.
	HITLOnCompose *bool
	// AutoPin pins what an agent composes at once; unpinned agent content
	// is a draft that the agent's next compose in the same slot replaces.
	AutoPin *bool
	// AllowDelete lets an agent close its own composed panels and remove
	// nodes from them without asking.
	AllowDelete *bool
	// AllowCodePreview lets agent panels carry preview nodes (runnable
	// HTML/CSS/JS, shown only from the Previews origin).
	AllowCodePreview *bool
}

// Previews hosts runnable preview documents on a separate, sandboxed
// origin: Put stores a preview node's code and returns the URL the tab's
// sandboxed iframe loads it from.
type Previews interface {
	Put(code string) string
}

// ReplicaOptions tune the registry of replicas sharing a store
// (docs/architecture.md, "Replicas").
type ReplicaOptions struct {
	// Name is stable across restarts of one process: a start claims the
	// previous starts of its name at once. Two live processes must not
	// share a name. Default: the host name.
	Name string
	// Addr is shown to operators (the listen address).
	Addr string
	// Heartbeat is how often the replica beats and looks at the others
	// (DefaultReplicaHeartbeat when 0).
	Heartbeat time.Duration
	// Timeout is how long a replica's beats may stand still before a
	// survivor claims it (DefaultReplicaTimeout when 0); well above
	// Heartbeat, since a replica claimed while alive stops (Lost).
	Timeout time.Duration
	// NoLock keeps failure detection to heartbeats on Postgres: no
	// presence lock (docs/deploy.md, "Several replicas"), for a
	// connection pooler that does not keep sessions.
	NoLock bool
}

// RetentionOptions say how long the daemon keeps what it may forget
// (docs/architecture.md, "Retention"); the ledger is kept forever. For
// each age, 0 means the default and a negative value forever.
type RetentionOptions struct {
	// Invocations: invocation records after their call
	// (DefaultRetainInvocations). Records in flight, awaiting an approval,
	// named by a live idempotency key or with a running job are kept.
	Invocations time.Duration
	// IdempotencyKeys: how long a key is remembered and replays its
	// call's outcome (a day).
	IdempotencyKeys time.Duration
	// Runs: a finished agent run's record and event log
	// (DefaultRetainRuns).
	Runs time.Duration
	// SearchExamples: a learned-search example after its last use
	// (DefaultRetainSearchExamples).
	SearchExamples time.Duration
	// Interval spaces the sweeps (DefaultRetentionInterval).
	Interval time.Duration
}

// AssertionOptions tune the assertion every HTTP-binding request carries
// (package assertion, docs/identity.md).
type AssertionOptions struct {
	// Issuer is the daemon's base URL as backends know it (iss); default
	// DefaultIssuer.
	Issuer string
	// Rotation is how long one signing key signs (default
	// assertion.DefaultRotation).
	Rotation time.Duration
}

// OAuthOptions make /mcp an OAuth 2.1 protected resource (docs/oauth.md).
type OAuthOptions struct {
	// Resource is the absolute URL clients reach /mcp at
	// (https://app.example.com/mcp); empty: /mcp is no OAuth resource.
	Resource string
	// Issuer is the external OpenID Connect issuer whose JWT access
	// tokens /mcp takes.
	Issuer string
	// UserClaim names the token claim that says which user the agent acts
	// for ("sub" when empty).
	UserClaim string
	// Scope is the OAuth scope /mcp requires ("mcp" when empty).
	Scope string
	// HTTPClient reaches the issuer; nil is http.DefaultClient.
	HTTPClient *http.Client
	// ExchangeClientID and ExchangeClientSecret are the daemon's client at
	// Issuer for RFC 8693 token exchange: an HTTP binding with
	// tokenExchange sends its backend the provider's token for the user,
	// exchanged from the MCP client's own (docs/identity.md).
	ExchangeClientID, ExchangeClientSecret string
	// LoginURL is the host app's sign-in page for the embedded
	// authorization server (used when Issuer is empty): the browser is
	// sent there with ?request=<id> (docs/oauth.md, "Mode 2").
	LoginURL string
	// MetadataHTTPClient fetches client ID metadata documents for the
	// embedded server; nil refuses non-public addresses.
	MetadataHTTPClient *http.Client
}

// engine translates the options for the engine, which fills in the rest.
func (o Options) engine() engine.Options {
	e := engine.Options{
		Store: o.Store, AdminToken: o.AdminToken, Logger: o.Logger,
		AllowOrigins: o.AllowOrigins, AllowHosts: o.AllowHosts,
		Demo: o.Demo, DemoKey: o.DemoKey,
		MCP: mcpserver.Options{Mode: mcpserver.Mode(o.MCP.Mode), Threshold: o.MCP.Threshold},
		Governance: engine.GovernanceOptions{ApprovalTTL: o.Governance.ApprovalTTL,
			ApprovalFloor: o.Governance.ApprovalFloor, MaxPendingPerAgent: o.Governance.MaxPendingPerAgent,
			DailyQuota: o.Governance.DailyQuota},
		Canvas: panel.CanvasPolicy{Preset: o.Canvas.Preset, HITLOnCompose: o.Canvas.HITLOnCompose,
			AutoPin: o.Canvas.AutoPin, AllowDelete: o.Canvas.AllowDelete, AllowCodePreview: o.Canvas.AllowCodePreview},
		PreviewOrigin: o.PreviewOrigin,
		Replicas:      engine.ReplicaOptions(o.Replicas),
		Retention: engine.RetentionOptions{Invocations: o.Retention.Invocations, IdempotencyKeys: o.Retention.IdempotencyKeys,
			Runs: o.Retention.Runs, SearchExamples: o.Retention.SearchExamples, Interval: o.Retention.Interval},
		MetricsElsewhere: o.MetricsElsewhere,
		NoSearchLearning: o.NoSearchLearning,
		Assertion:        engine.AssertionOptions(o.Assertion),
		OAuth:            engine.OAuthOptions(o.OAuth),
		Telemetry:        o.Telemetry.engine(),
	}
	if o.Bus != nil {
		e.Bus = o.Bus.b
	}
	if o.Previews != nil {
		e.Previews = o.Previews
	}
	if o.Governance.LedgerAnchor != nil {
		e.Governance.LedgerAnchor = o.Governance.LedgerAnchor.a
	}
	if l := o.Governance.RateLimit; l != nil {
		e.Governance.RateLimit = &broker.RateLimit{PerPrincipal: broker.Rate(l.PerPrincipal), PerTool: broker.Rate(l.PerTool), Users: l.Users}
	}
	if o.Models != nil {
		e.Models = make(map[string]model.Config, len(o.Models))
		for alias, c := range o.Models {
			mc := model.Config{Provider: c.Provider, Model: c.Model, BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, MaxTokens: c.MaxTokens}
			if c.Caps != nil {
				mc.Caps = (*model.CapsConfig)(c.Caps)
			}
			if c.Price != nil {
				mc.Price = &model.Price{InputPerMTok: c.Price.InputPerMTok, OutputPerMTok: c.Price.OutputPerMTok,
					CachedInputPerMTok: c.Price.CachedInputPerMTok}
			}
			e.Models[alias] = mc
		}
	}
	return e
}
