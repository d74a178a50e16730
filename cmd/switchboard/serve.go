package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v4"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/manifest"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
	"github.com/switchboardhq/switchboard/internal/redact"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// shutdownGrace bounds how long in-flight requests may finish after SIGTERM.
const shutdownGrace = 10 * time.Second

// serveConfig is the --config file. Flags given on the command line win.
type serveConfig struct {
	Addr         string                  `yaml:"addr"`
	Data         string                  `yaml:"data"`
	Store        storeConfig             `yaml:"store"`
	AllowOrigins []string                `yaml:"allowOrigins"`
	LogLevel     string                  `yaml:"logLevel"`
	Models       map[string]model.Config `yaml:"models"`
	Governance   *governanceConfig       `yaml:"governance"`
	MCP          *mcpConfig              `yaml:"mcp"`
	Sessions     *sessionsConfig         `yaml:"sessions"`
	Search       *searchConfig           `yaml:"search"`
	Agents       *agentsConfig           `yaml:"agents"`
	// CanvasPolicy is the daemon's layer of the canvas policy; PreviewAddr
	// the sandboxed preview origin's listener (cmd/switchboard/canvas.go).
	CanvasPolicy *panel.CanvasPolicy `yaml:"canvasPolicy"`
	PreviewAddr  string              `yaml:"previewAddr"`
	// MetricsAddr serves GET /metrics without a token on a listener of
	// its own (cmd/switchboard/metrics.go).
	MetricsAddr string `yaml:"metricsAddr"`
	// PublicURL is the daemon's base URL as clients reach it (/mcp's
	// OAuth resource is PublicURL + "/mcp"); OAuth the `oauth:` section.
	PublicURL string       `yaml:"publicURL"`
	OAuth     *oauthConfig `yaml:"oauth"`
	// A2A is the `a2a:` section: the external A2A agents agents.handoff
	// may hand tasks to (docs/tasks.md).
	A2A *a2aConfig `yaml:"a2a"`
}

// a2aConfig is the config file's `a2a:` section.
type a2aConfig struct {
	Peers []daemon.A2APeer `yaml:"peers"`
}

// agentsConfig is the config file's `agents:` section: the caps on the
// agent sessions one principal registers (POST /agents; docs/agents.md).
type agentsConfig struct {
	Registered *workspace.SessionLimits `yaml:"registered"`
}

// oauthConfig is the config file's `oauth:` section (docs/oauth.md).
type oauthConfig struct {
	Issuer    string `yaml:"issuer"`    // an external OIDC issuer, as --oauth-issuer
	UserClaim string `yaml:"userClaim"` // the token claim naming the user (sub)
	Scope     string `yaml:"scope"`     // the scope /mcp requires (mcp)
	// ExchangeClient is the daemon's client at the issuer for RFC 8693
	// token exchange, as --oauth-exchange-client (its secret comes from
	// $SWITCHBOARD_OAUTH_EXCHANGE_SECRET only).
	ExchangeClient string `yaml:"exchangeClient"`
	LoginURL       string `yaml:"loginURL"` // the app's sign-in page for the embedded server, as --oauth-login-url
}

// sessionsConfig is the config file's `sessions:` section: the two windows
// after a tab's stream drops (docs/browser.md).
type sessionsConfig struct {
	ReconnectWindow time.Duration `yaml:"reconnectWindow"` // calls wait this long for the stream
	KeepWindow      time.Duration `yaml:"keepWindow"`      // the session is kept this long for a reload
}

// searchConfig is the config file's `search:` section.
type searchConfig struct {
	// Learn turns search that learns from use on or off (default on).
	Learn *bool `yaml:"learn"`
}

// storeConfig is the config file's `store:` key: a postgres:// URL as a
// plain string, or a mapping {url, durability, retention}.
type storeConfig struct {
	URL        string          `yaml:"url"`
	Durability string          `yaml:"durability"` // process or power
	Retention  retentionConfig `yaml:"retention"`
}

// retentionConfig is `store.retention`: how long what may be forgotten is
// kept (daemon.RetentionOptions; the ledger is kept forever).
type retentionConfig struct {
	Invocations     time.Duration `yaml:"invocations"`
	IdempotencyKeys time.Duration `yaml:"idempotencyKeys"`
	Runs            time.Duration `yaml:"runs"`
	SearchExamples  time.Duration `yaml:"searchExamples"`
}

// UnmarshalYAML accepts both forms of `store:`.
func (s *storeConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.URL = n.Value
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return errors.New("must be a postgres:// URL or a mapping {url, durability}")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if k == "retention" {
			if err := v.Decode(&s.Retention); err != nil {
				return fmt.Errorf("retention: %w (durations such as 720h, keys invocations, idempotencyKeys, runs, searchExamples)", err)
			}
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s must be a string", k)
		}
		switch k {
		case "url":
			s.URL = v.Value
		case "durability":
			if _, err := switchboard.ParseDurability(v.Value); err != nil {
				return fmt.Errorf("durability %q: use process (survive a daemon crash) or power (survive an OS crash or power loss)", v.Value)
			}
			s.Durability = v.Value
		default:
			return fmt.Errorf("unknown key %q (store takes url, durability, retention)", k)
		}
	}
	return nil
}

// governanceConfig is the config file's `governance:` section.
type governanceConfig struct {
	ApprovalTTL        time.Duration     `yaml:"approvalTTL"`
	MaxPendingPerAgent int               `yaml:"maxPendingPerAgent"`
	ApprovalFloor      map[string]string `yaml:"approvalFloor"` // class → approval; {} turns the floor off
	RateLimit          *struct {
		PerAgent ratelimit.Rate `yaml:"perAgent"`
		PerTool  ratelimit.Rate `yaml:"perTool"`
		Users    bool           `yaml:"users"`
	} `yaml:"rateLimit"`
	// DailyQuota is --daily-quota's config form.
	DailyQuota struct {
		Agent *quotaConfig `yaml:"agent"`
		User  *quotaConfig `yaml:"user"`
	} `yaml:"dailyQuota"`
}

// mcpConfig is the config file's `mcp:` section.
type mcpConfig struct {
	Mode      string `yaml:"mode"` // auto, full or deferred
	Threshold int    `yaml:"threshold"`
	// Elicitation is off, url (the default) or form: which elicitation
	// answers of an agent's MCP client count (docs/governance.md).
	Elicitation string `yaml:"elicitation"`
	// ConsoleURL is where URL-mode elicitation sends the human; by default
	// the console at the listen address.
	ConsoleURL string `yaml:"consoleURL"`
	// Sessions caps one principal's MCP sessions: {max, rate: {perSecond,
	// burst}} (docs/mcp.md).
	Sessions *mcpserver.SessionLimits `yaml:"sessions"`
}

type serveFlags struct {
	a2aPeers     []daemon.A2APeer // the config file's a2a.peers
	store        string
	durability   string
	allowOrigins []string
	storeFile    string
	bus          string // --bus: "" follows the store (daemon.OpenBus)
	demo         bool
	logLevel     string
	logFormat    string
	manifest     string
	models       map[string]model.Config // from the config file only
	governance   daemon.GovernanceOptions
	mcp          mcpserver.Options
	session      session.Options    // Reconnect from --reconnect-window, Grace from the config file
	canvas       panel.CanvasPolicy // the config file's canvasPolicy
	canvasPreset string             // --canvas-policy
	previewAddr  string
	metricsAddr  string
	telemetryURL string                // --telemetry-url
	elicitation  string                // --mcp-elicitation / mcp.elicitation
	replicas     daemon.ReplicaOptions // --replica-name, --replica-heartbeat, --replica-timeout
	replicaLock  bool                  // --replica-lock
	retention    daemon.RetentionOptions
	runMaxTokens int64                   // --run-max-tokens
	runMaxCost   float64                 // --run-max-cost
	dailyQuota   []string                // --daily-quota
	searchLearn  bool                    // --search-learn / search.learn
	agents       workspace.AgentsOptions // Registered from --max-agent-sessions / agents.registered
	publicURL    string                  // --public-url
	oauth        daemon.OAuthOptions     // --oauth-issuer and the config file's oauth section
}

func newServe(g *globals) *cobra.Command {
	f := &serveFlags{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon (SQLite under the data root unless --store names Postgres)",
		Example: `  switchboard serve
  switchboard serve --addr 127.0.0.1:8080 --data ./data
  switchboard serve --store postgres://postgres@127.0.0.1:5432/test?sslmode=disable
  switchboard serve --allow-origin http://localhost:3000`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runServe(c, g, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.store, "store", os.Getenv("SWITCHBOARD_STORE"), "store: a postgres:// URL, or empty for SQLite under the data root [$SWITCHBOARD_STORE]; a password here shows in ps, so prefer the variable or --store-file")
	hideDefault(fl, "store") // the variable's URL may carry a password
	fl.StringVar(&f.storeFile, "store-file", "", "read the store's postgres:// URL from this file (keeps its password out of ps)")
	fl.StringVar(&f.bus, "bus", os.Getenv("SWITCHBOARD_BUS"), "how replicas reach each other: empty follows the store (postgres on a Postgres store, so replicas of one database work together; local on SQLite), or local to keep a single Postgres replica off LISTEN/NOTIFY [$SWITCHBOARD_BUS]")
	fl.StringVar(&f.durability, "durability", os.Getenv("SWITCHBOARD_DURABILITY"), "which failures a commit survives: process (a daemon crash; the default) or power (an OS crash or power loss, slower) [$SWITCHBOARD_DURABILITY]")
	fl.DurationVar(&f.retention.Invocations, "retain-invocations", daemon.DefaultRetainInvocations, "how long invocation records are kept after their call; negative keeps them forever; the ledger is always kept (config store.retention.invocations)")
	fl.DurationVar(&f.retention.IdempotencyKeys, "retain-idempotency-keys", broker.DefaultIdempotencyTTL, "how long an idempotency key is remembered and replays its call's outcome, then deleted (config store.retention.idempotencyKeys)")
	fl.DurationVar(&f.retention.Runs, "retain-runs", daemon.DefaultRetainRuns, "how long a finished agent run's event log (kept in memory) stays readable; negative: no age limit (config store.retention.runs)")
	fl.DurationVar(&f.retention.SearchExamples, "retain-search-examples", daemon.DefaultRetainSearchExamples, "how long a learned-search example (a query that led to a tool) is kept after its last use; negative keeps them forever (config store.retention.searchExamples)")
	fl.BoolVar(&f.searchLearn, "search-learn", true, "let search learn from use: a query that led a caller to a successful call helps later searches find that tool (config search.learn); see docs/search.md")
	fl.StringSliceVar(&f.allowOrigins, "allow-origin", nil, "browser origin allowed to call the API (repeatable), e.g. http://localhost:3000")
	fl.BoolVar(&f.demo, "demo", false, "let the demo app at /demo/ open its own browser session (same-origin only, with a key that changes every start: open the URL serve prints; for trying switchboard locally)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&f.manifest, "manifest", "", "manifest file (YAML or JSON) registered at start and reloaded when it changes")
	fl.DurationVar(&f.session.Reconnect, "reconnect-window", session.DefaultReconnect, "how long a browser call to a tab whose stream dropped waits for it to come back before SESSION_GONE (config sessions.reconnectWindow)")
	fl.StringVar(&f.canvasPreset, "canvas-policy", "", "canvas policy preset for agents' panels: guarded (the default: composing asks the user) or open (agents change their own panels without asking)")
	fl.Int64Var(&f.runMaxTokens, "run-max-tokens", 0, "end an assistant run with BUDGET_EXCEEDED before a model call once it used this many tokens (0: no ceiling)")
	fl.Float64Var(&f.runMaxCost, "run-max-cost", 0, "end an assistant run with BUDGET_EXCEEDED before a model call once it cost this many US dollars (models with prices; 0: no ceiling)")
	fl.StringArrayVar(&f.dailyQuota, "daily-quota", nil, "a daily quota of every agent or of each user agents act for, WHO.WHAT=N with WHO agent or user and WHAT calls, tokens or cost (US dollars), e.g. agent.calls=5000 or user.cost=20 (repeatable; counted in the store across replicas, reset at 00:00 UTC; over it: QUOTA_EXCEEDED)")
	fl.StringVar(&f.telemetryURL, "telemetry-url", "", "POST redacted product events (tool outcomes, approvals, panel composes, model usage) as batched JSON lines to this http(s) URL, signed the Standard Webhooks way when $SWITCHBOARD_TELEMETRY_SECRET holds a whsec_ key; see docs/operations.md")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics on this address without a token, instead of on --addr for the admin token; see docs/operations.md")
	fl.StringVar(&f.previewAddr, "preview-addr", "", "serve the sandboxed code-preview origin on this address (off unless given), e.g. 127.0.0.2:7767; see docs/panels.md")
	fl.IntVar(&f.mcp.Sessions.Max, "mcp-max-sessions", mcpserver.DefaultSessionLimits.Max, "how many MCP sessions one principal (a token) may hold at once; negative: no cap (config mcp.sessions.max; the opening rate is mcp.sessions.rate)")
	fl.IntVar(&f.agents.Registered.Max, "max-agent-sessions", workspace.DefaultRegisteredLimits.Max, "how many agent sessions one principal may register (POST /agents) and hold at once; negative: no cap (config agents.registered.max; the rate is agents.registered.rate)")
	fl.StringVar(&f.elicitation, "mcp-elicitation", "url", "which MCP elicitation answers decide an agent's approval: url (a link to the console, where you decide), form (also the agent's own client UI, which then vouches for you) or off (config mcp.elicitation)")
	fl.StringVar(&f.replicas.Name, "replica-name", os.Getenv("SWITCHBOARD_REPLICA_NAME"), "this replica's name among those sharing the store, stable across its restarts (default: host name/listen address) [$SWITCHBOARD_REPLICA_NAME]; see docs/deploy.md")
	fl.DurationVar(&f.replicas.Heartbeat, "replica-heartbeat", daemon.DefaultReplicaHeartbeat, "how often this replica records that it is alive (and checks on the others, or every second with the presence lock on Postgres: --replica-lock)")
	fl.StringVar(&f.publicURL, "public-url", os.Getenv("SWITCHBOARD_PUBLIC_URL"), "the daemon's base URL as clients reach it, e.g. https://app.example.com (default http://<listen address>); /mcp's OAuth resource is this URL + /mcp [$SWITCHBOARD_PUBLIC_URL] (config publicURL)")
	fl.StringVar(&f.oauth.Issuer, "oauth-issuer", os.Getenv("SWITCHBOARD_OAUTH_ISSUER"), "an external OpenID Connect issuer (the app's IdP) whose JWT access tokens /mcp takes, e.g. https://example.us.auth0.com/ ; see docs/oauth.md [$SWITCHBOARD_OAUTH_ISSUER] (config oauth.issuer)")
	fl.StringVar(&f.oauth.ExchangeClientID, "oauth-exchange-client", os.Getenv("SWITCHBOARD_OAUTH_EXCHANGE_CLIENT"), "the daemon's client id at --oauth-issuer for RFC 8693 token exchange: bindings with tokenExchange send their backend the IdP's token for the user; the secret is read from $SWITCHBOARD_OAUTH_EXCHANGE_SECRET [$SWITCHBOARD_OAUTH_EXCHANGE_CLIENT] (config oauth.exchangeClient); see docs/identity.md")
	fl.StringVar(&f.oauth.LoginURL, "oauth-login-url", os.Getenv("SWITCHBOARD_OAUTH_LOGIN_URL"), "without --oauth-issuer, switchboard is the authorization server: the app's sign-in page it sends the browser to (with ?request=<id>); the app's backend vouches for its signed-in user with POST /api/v1/oauth/signins; see docs/oauth.md [$SWITCHBOARD_OAUTH_LOGIN_URL] (config oauth.loginURL)")
	fl.DurationVar(&f.replicas.Timeout, "replica-timeout", daemon.DefaultReplicaTimeout, "how long another replica's heartbeat may stand still before a survivor resolves its in-flight calls (at least twice --replica-heartbeat)")
	fl.BoolVar(&f.replicaLock, "replica-lock", true, "on Postgres, hold a presence lock so that survivors find this replica dead within about 2 s of its process dying, not after --replica-timeout; false behind a connection pooler that does not keep sessions (PgBouncer in transaction mode); see docs/deploy.md")
	return c
}

// elicitation parses --mcp-elicitation.
func elicitation(v string) (mcpserver.Elicitation, error) {
	switch v {
	case "", "url":
		return mcpserver.ElicitURL, nil
	case string(mcpserver.ElicitOff), string(mcpserver.ElicitForm):
		return mcpserver.Elicitation(v), nil
	}
	return "", fmt.Errorf("--mcp-elicitation %q: use url, form or off", v)
}

// resourceURL is /mcp's OAuth resource URL: under --public-url, else at
// the listen address (the loopback address when it listens on all).
func resourceURL(public string, a net.Addr) (string, error) {
	if public == "" {
		return strings.TrimSuffix(consoleURL(a), "/#approvals") + "/mcp", nil
	}
	u := strings.TrimSuffix(public, "/") + "/mcp"
	if _, err := oauth.ParseResource(u); err != nil {
		return "", fmt.Errorf("--public-url %q must be the daemon's base URL as clients reach it, such as https://app.example.com", public)
	}
	return u, nil
}

// consoleURL is the console's approvals view at the listen address (the
// loopback address when it listens on all of them).
func consoleURL(a net.Addr) string {
	return selfURL(a) + "/#approvals"
}

// selfURL is where this process reaches its own listener: loopback when
// it listens on every address.
func selfURL(a net.Addr) string {
	host := a.String()
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return "http://" + host
}

func runServe(c *cobra.Command, g *globals, f *serveFlags) error {
	ctx := c.Context()
	if g.config != "" {
		if err := applyConfig(c, g, f); err != nil {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%v", err)
		}
	}
	log, err := newLogger(g.stderr, f.logLevel, f.logFormat)
	if err != nil {
		return usageError{err, c.CommandPath()}
	}
	defer logToDaemon(log)()
	// Before the daemon is built, so its broker and agent runtime record to
	// it; stopped last, after the daemon has shut down, so its spans go out.
	stopTracing, err := startTracing(ctx, log)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%v", err)
	}
	defer stopTracing()
	if err := checkWindows(f.session); err != nil {
		return usageError{err, c.CommandPath()}
	}
	if err := checkTelemetryURL(f.telemetryURL); err != nil {
		return usageError{err, c.CommandPath()}
	}
	// Said at once: opening the store, migrating it and building the
	// catalog can take a while on a busy machine, and a silent terminal
	// looks hung.
	log.Info("switchboard serve starting", "addr", g.addr)
	if f.retention.IdempotencyKeys <= 0 {
		return usageError{fmt.Errorf("--retain-idempotency-keys (store.retention.idempotencyKeys) must be positive, such as 24h: it is how long a retried call replays its outcome; not %s", f.retention.IdempotencyKeys), c.CommandPath()}
	}
	if f.mcp.Elicitation, err = elicitation(f.elicitation); err != nil {
		return usageError{err, c.CommandPath()}
	}
	if hb, to := cmp.Or(f.replicas.Heartbeat, daemon.DefaultReplicaHeartbeat), cmp.Or(f.replicas.Timeout, daemon.DefaultReplicaTimeout); hb > 0 && to < 2*hb {
		return usageError{fmt.Errorf("--replica-timeout (%s) must be at least twice --replica-heartbeat (%s): a replica whose beats lapse one beat is not dead", to, hb), c.CommandPath()}
	}
	for _, spec := range f.dailyQuota {
		if err := setDailyQuota(&f.governance.DailyQuota, spec); err != nil {
			return usageError{err, c.CommandPath()}
		}
	}
	dir, err := daemon.DataDir(g.data)
	if err != nil {
		return err
	}
	tightened, err := daemon.SecureDataDir(dir)
	for _, p := range tightened {
		log.WarnContext(ctx, "data root file was readable by others; made it private", "path", p)
	}
	if err != nil {
		return err
	}
	token := g.token
	if token == "" {
		if token, err = daemon.LoadOrCreateToken(dir); err != nil {
			return err
		}
	}
	durability, err := switchboard.ParseDurability(f.durability)
	if err != nil {
		return usageError{err, c.CommandPath()}
	}
	dsn, warn, err := storeFromFlags(f.store, f.storeFile, c.Flags().Changed("store"))
	if err != nil {
		return usageError{err, c.CommandPath()}
	}
	if warn {
		log.WarnContext(ctx, "the --store URL carries a password, which any local user can read in ps; pass it in $SWITCHBOARD_STORE or --store-file instead")
	}
	f.store = dsn
	store, err := daemon.OpenStore(ctx, f.store, dir, daemon.WithDurability(durability))
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	if ch, ok := autovacuumCheck(ctx, store); ok && ch.Status != "ok" {
		log.WarnContext(ctx, ch.Detail, "fix", ch.Fix)
	}
	bs, closeBus, err := daemon.OpenBus(ctx, f.bus, store, log)
	if err != nil {
		return fmt.Errorf("open bus: %w", err)
	}
	defer closeBus() // when serve returns, after shutdown closed the daemon
	// The ledger's anchor lives beside the database; closed after the
	// daemon (defers run last-first), it saves the final head.
	anchor, err := activity.OpenAnchor(dir, &activity.AnchorOptions{Durability: effectiveDurability(durability, f.store), Logger: log})
	if err != nil {
		return err
	}
	anchor.Start()
	defer func() {
		if err := anchor.Close(); err != nil {
			log.Error("the ledger's checkpoint was not saved", "err", err)
		}
	}()
	f.governance.LedgerAnchor = anchor

	ln, err := net.Listen("tcp", g.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		// UNAVAILABLE, not a new code: the address is a resource the daemon
		// needs and cannot have now, as "no daemon at ADDR" is for clients.
		return switchboard.Errorf(switchboard.CodeUnavailable,
			"cannot listen on %s: the address is already in use (is another switchboard serve running?); stop that process or pass another --addr", g.addr)
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", g.addr, err)
	}
	if f.mcp.ConsoleURL == "" {
		f.mcp.ConsoleURL = consoleURL(ln.Addr())
	}
	if f.oauth.Resource, err = resourceURL(f.publicURL, ln.Addr()); err != nil {
		ln.Close()
		return usageError{err, c.CommandPath()}
	}
	if f.oauth.ExchangeClientID != "" {
		f.oauth.ExchangeClientSecret = os.Getenv("SWITCHBOARD_OAUTH_EXCHANGE_SECRET")
		if f.oauth.Issuer == "" || f.oauth.ExchangeClientSecret == "" {
			ln.Close()
			return usageError{errors.New("--oauth-exchange-client needs --oauth-issuer (the IdP that exchanges) and the client's secret in $SWITCHBOARD_OAUTH_EXCHANGE_SECRET"), c.CommandPath()}
		}
	}
	opts := daemon.Options{OAuth: f.oauth, Store: store, Bus: bs, AdminToken: token, AllowOrigins: f.allowOrigins, Logger: log, Demo: f.demo, Models: f.models,
		Governance: f.governance, MCP: f.mcp, Session: f.session, Replicas: f.replicas, Retention: f.retention,
		NoSearchLearning: !f.searchLearn, AgentSessions: f.agents, A2APeers: f.a2aPeers}
	opts.Agent.MaxRunTokens, opts.Agent.MaxRunCost = f.runMaxTokens, f.runMaxCost
	if f.telemetryURL != "" {
		opts.Telemetry.Webhook = &telemetry.WebhookOptions{URL: f.telemetryURL, Secret: os.Getenv(telemetrySecretEnv)}
	}
	opts.Replicas.Addr = ln.Addr().String()
	opts.Replicas.NoLock = !f.replicaLock
	// Backends check the assertion's iss against the URL they reach the
	// daemon at.
	opts.Assertion.Issuer = strings.TrimSuffix(consoleURL(ln.Addr()), "/#approvals")
	if opts.Replicas.Name == "" {
		host, _ := os.Hostname()
		opts.Replicas.Name = host + "/" + opts.Replicas.Addr // unique while it listens
	}
	previewSrv, err := f.canvasOptions(ctx, &opts, ln, log)
	if err != nil {
		ln.Close()
		return err
	}
	if previewSrv != nil {
		defer previewSrv.Close()
	}
	metricsLn, err := f.listenMetrics(&opts)
	if err != nil {
		ln.Close()
		return err
	}
	if loopback(ln.Addr()) {
		opts.AllowHosts = loopbackHosts(ln.Addr().(*net.TCPAddr).IP)
	} else {
		log.Warn("listening on a non-loopback address: anyone who can reach it and holds the token can use the daemon", "addr", ln.Addr().String())
	}
	d, err := daemon.New(ctx, opts)
	if err != nil {
		ln.Close()
		return err
	}
	if f.manifest != "" { // a bad file at start is an error; a bad edit later is logged
		w := manifest.NewWatcher(f.manifest, d.Registry, &manifest.WatchOptions{Logger: log, Base: selfURL(ln.Addr())})
		if _, err := w.Load(ctx); err != nil {
			ln.Close()
			d.Close()
			return err
		}
		if err := w.Start(ctx); err != nil {
			log.Warn("manifest changes will not be picked up", "err", err)
		}
		defer w.Stop()
	}
	// Tasks an earlier start left working go on, now that the manifest's
	// tools are in the catalog.
	if _, err := d.RecoverTasks(ctx); err != nil {
		log.Warn("could not resume delegated tasks left working", "err", err)
	}
	if metricsLn != nil {
		defer serveMetrics(metricsLn, d, log)()
	}
	// Header, body and idle timeouts (internal/httpapi/conn.go): no slow or idle
	// client holds a connection for ever.
	srv := httpapi.NewHTTPServer(d.Handler(), &httpapi.ServerOptions{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
	// Streams (SSE) never end on their own: end them when shutdown begins so
	// Shutdown can wait for the rest.
	closed := make(chan struct{}) // d.Close, run when shutdown begins, has returned
	srv.RegisterOnShutdown(func() { _ = d.Close(); close(closed) })
	// Requests run under base, which is cancelled when another replica
	// claims this one: their calls' outcomes are the survivor's already
	// and this replica can record nothing more, so they are answered at
	// once rather than held through the shutdown grace.
	base, abandon := context.WithCancelCause(context.Background())
	defer abandon(nil)
	srv.BaseContext = func(net.Listener) context.Context { return base }
	storeName := "sqlite " + dir
	if f.store != "" {
		storeName = "postgres"
	}
	log.Info("switchboard listening", "addr", "http://"+ln.Addr().String(), "store", storeName, "data", dir, "replica", d.ReplicaID())
	tokenFrom := "--token / SWITCHBOARD_TOKEN"
	if g.token == "" {
		tokenFrom = filepath.Join(dir, daemon.TokenFile)
	}
	log.Info("console at http://"+ln.Addr().String()+"/ ; the CLI and API use the admin token", "token", tokenFrom)
	if f.demo {
		// The key is in the URL, as Jupyter prints its token: whoever reads
		// this output may open the demo as its user; nobody else can.
		log.Info("demo app at " + d.DemoURL("http://"+ln.Addr().String()) + " ; its sample backend (the examples' bindings) at /demo/api/")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-d.Lost():
		// Another replica resolved this one's calls: serving on would
		// answer for calls that already have an outcome.
		abandon(switchboard.Errorf(switchboard.CodeUnavailable,
			"this replica was found dead and another took over its calls: this call's outcome is recorded there; read it on any replica (GET /api/v1/invocations)"))
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
		// The daemon's Close ends the calls still running here. On
		// Postgres the claimer cut this replica's sessions off, so nothing
		// it started after the takeover (a request it took from its queue
		// as it resumed from a pause) was recorded; elsewhere such a call
		// is recorded as this replica's, whose work no survivor resolves
		// again, and Close ends it.
		select {
		case <-closed:
		case <-sctx.Done():
		}
		return switchboard.Errorf(switchboard.CodeUnavailable,
			"another replica found this one dead (its heartbeat lapsed past --replica-timeout, or its presence lock was lost) and took over its calls; restart it")
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// Background work (retention sweeps, replica watch) has stopped before
	// serve returns and the store closes: nothing logs or writes after.
	select {
	case <-closed:
	case <-sctx.Done():
	}
	// Every request has been answered: survivors may take over what is
	// left (calls awaiting approval) at once.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	if err := d.Release(rctx); err != nil {
		log.Warn("could not record this replica's stop; survivors take over its calls after --replica-timeout", "err", err)
	}
	log.Info("stopped")
	return nil
}

func applyConfig(c *cobra.Command, g *globals, f *serveFlags) error {
	b, err := os.ReadFile(g.config)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	var cfg serveConfig
	if err := decodeConfig(g.config, b, &cfg); err != nil {
		return err
	}
	set := func(name string) bool { return c.Flags().Changed(name) }
	if cfg.Addr != "" && !set("addr") && os.Getenv("SWITCHBOARD_ADDR") == "" {
		g.addr = cfg.Addr
	}
	if cfg.Data != "" && !set("data") && os.Getenv("SWITCHBOARD_DATA") == "" {
		g.data = cfg.Data
	}
	if cfg.Store.URL != "" && !set("store") && os.Getenv("SWITCHBOARD_STORE") == "" {
		f.store = cfg.Store.URL
	}
	if cfg.Store.Durability != "" && !set("durability") && os.Getenv("SWITCHBOARD_DURABILITY") == "" {
		f.durability = cfg.Store.Durability
	}
	if r := cfg.Store.Retention; r.Invocations != 0 && !set("retain-invocations") {
		f.retention.Invocations = r.Invocations
	}
	if r := cfg.Store.Retention; r.IdempotencyKeys != 0 && !set("retain-idempotency-keys") {
		f.retention.IdempotencyKeys = r.IdempotencyKeys
	}
	if r := cfg.Store.Retention; r.Runs != 0 && !set("retain-runs") {
		f.retention.Runs = r.Runs
	}
	if r := cfg.Store.Retention; r.SearchExamples != 0 && !set("retain-search-examples") {
		f.retention.SearchExamples = r.SearchExamples
	}
	if sc := cfg.Search; sc != nil && sc.Learn != nil && !set("search-learn") {
		f.searchLearn = *sc.Learn
	}
	if len(cfg.AllowOrigins) > 0 && !set("allow-origin") {
		f.allowOrigins = cfg.AllowOrigins
	}
	f.models = cfg.Models
	if err := applyGovernance(cfg.Governance, &f.governance); err != nil {
		return fmt.Errorf("config %s: %w", g.config, err)
	}
	if m := cfg.MCP; m != nil {
		switch m.Mode {
		case "", "auto":
		case string(mcpserver.ModeFull), string(mcpserver.ModeDeferred):
			f.mcp.Mode = mcpserver.Mode(m.Mode)
		default:
			return fmt.Errorf("config %s: mcp.mode %q: use auto, full or deferred", g.config, m.Mode)
		}
		f.mcp.Threshold = m.Threshold
		if m.Elicitation != "" && !set("mcp-elicitation") {
			if _, err := elicitation(m.Elicitation); err != nil {
				return fmt.Errorf("config %s: mcp.elicitation %q: use url, form or off", g.config, m.Elicitation)
			}
			f.elicitation = m.Elicitation
		}
		f.mcp.ConsoleURL = m.ConsoleURL
		if l := m.Sessions; l != nil {
			if !set("mcp-max-sessions") {
				f.mcp.Sessions.Max = l.Max
			}
			f.mcp.Sessions.Rate = l.Rate
		}
	}
	if a := cfg.Agents; a != nil && a.Registered != nil {
		if !set("max-agent-sessions") {
			f.agents.Registered.Max = a.Registered.Max
		}
		f.agents.Registered.Rate = a.Registered.Rate
	}
	if cfg.LogLevel != "" && !set("log-level") {
		f.logLevel = cfg.LogLevel
	}
	if sc := cfg.Sessions; sc != nil {
		if sc.ReconnectWindow != 0 && !set("reconnect-window") {
			f.session.Reconnect = sc.ReconnectWindow
		}
		f.session.Grace = sc.KeepWindow
	}
	if cfg.CanvasPolicy != nil {
		if err := cfg.CanvasPolicy.Validate(); err != nil {
			return fmt.Errorf("config %s: %s", g.config, switchboard.AsError(err).Message)
		}
		f.canvas = *cfg.CanvasPolicy
	}
	if cfg.PreviewAddr != "" && !set("preview-addr") {
		f.previewAddr = cfg.PreviewAddr
	}
	if cfg.MetricsAddr != "" && !set("metrics-addr") {
		f.metricsAddr = cfg.MetricsAddr
	}
	if cfg.PublicURL != "" && !set("public-url") && os.Getenv("SWITCHBOARD_PUBLIC_URL") == "" {
		f.publicURL = cfg.PublicURL
	}
	if a := cfg.A2A; a != nil {
		for i, p := range a.Peers {
			if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || p.TokenEnv == "" {
				return fmt.Errorf("a2a.peers[%d]: give url (the agent's base URL, http(s)://host) and tokenEnv (the variable holding its token)", i)
			}
		}
		f.a2aPeers = a.Peers
	}
	if o := cfg.OAuth; o != nil {
		if o.Issuer != "" && !set("oauth-issuer") && os.Getenv("SWITCHBOARD_OAUTH_ISSUER") == "" {
			f.oauth.Issuer = o.Issuer
		}
		f.oauth.UserClaim, f.oauth.Scope = o.UserClaim, o.Scope
		if o.ExchangeClient != "" && !set("oauth-exchange-client") && os.Getenv("SWITCHBOARD_OAUTH_EXCHANGE_CLIENT") == "" {
			f.oauth.ExchangeClientID = o.ExchangeClient
		}
		if o.LoginURL != "" && !set("oauth-login-url") && os.Getenv("SWITCHBOARD_OAUTH_LOGIN_URL") == "" {
			f.oauth.LoginURL = o.LoginURL
		}
	}
	return nil
}

// checkWindows refuses session windows the daemon could not honour, in
// the terms of the flag and the config keys that set them.
func checkWindows(o session.Options) error {
	keep := o.Grace
	if keep == 0 {
		keep = 2 * session.DefaultHeartbeat
	}
	switch {
	case o.Reconnect <= 0:
		return fmt.Errorf("--reconnect-window (sessions.reconnectWindow) must be positive, such as 5s; not %s", o.Reconnect)
	case o.Grace < 0:
		return fmt.Errorf("sessions.keepWindow must be positive, such as 30s; not %s", o.Grace)
	case o.Reconnect > keep:
		return fmt.Errorf("--reconnect-window (sessions.reconnectWindow) %s is longer than sessions.keepWindow %s: a session must be kept at least as long as calls wait for its tab", o.Reconnect, keep)
	}
	return nil
}

// logToDaemon makes log the process-wide slog default (secrets
// redacted, as the daemon's own logger) until the returned func restores
// the previous one. The embedded authorization server's library,
// zitadel/oidc's pkg/op, logs its refusals only through slog's default
// (its WithLogger option does nothing), which otherwise prints them as
// plain log-package lines beside the daemon's own.
func logToDaemon(log *slog.Logger) (restore func()) {
	prev, out, flags := slog.Default(), stdlog.Writer(), stdlog.Flags()
	slog.SetDefault(slog.New(redact.Handler(log.Handler())))
	return func() {
		slog.SetDefault(prev)
		stdlog.SetOutput(out)
		stdlog.SetFlags(flags)
	}
}

func newLogger(w interface{ Write([]byte) (int, error) }, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// effectiveDurability is the store's durability for the ledger's anchor:
// SQLite's default is process; unset on Postgres is the server's own
// setting, unknown here ("", which the anchor reads as "may roll back").
func effectiveDurability(d switchboard.Durability, store string) switchboard.Durability {
	if d == "" && store == "" {
		return switchboard.DurabilityProcess
	}
	return d
}

func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// loopbackHosts are the hosts a browser on this machine reaches a
// loopback listener at ip by: the loopback names, and ip itself when it
// is an alias (127.0.0.2, several replicas on one host). An IP literal is
// no name a rebinding attacker's DNS can point here.
func loopbackHosts(ip net.IP) []string {
	hosts := []string{"127.0.0.1", "localhost", "::1"}
	if !ip.Equal(net.IPv4(127, 0, 0, 1)) && !ip.Equal(net.IPv6loopback) {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// applyGovernance copies the config file's governance section into o.
func applyGovernance(c *governanceConfig, o *daemon.GovernanceOptions) error {
	if c == nil {
		return nil
	}
	o.ApprovalTTL, o.MaxPendingPerAgent = c.ApprovalTTL, c.MaxPendingPerAgent
	if c.ApprovalFloor != nil {
		o.ApprovalFloor = map[switchboard.Class]switchboard.Approval{}
		for class, a := range c.ApprovalFloor {
			switch switchboard.Approval(a) {
			case switchboard.ApprovalNone, switchboard.ApprovalHITL, switchboard.ApprovalUserOnly:
			default:
				return fmt.Errorf("governance.approvalFloor.%s: %q is not none, hitl or user-only", class, a)
			}
			o.ApprovalFloor[switchboard.Class(class)] = switchboard.Approval(a)
		}
	}
	if r := c.RateLimit; r != nil {
		o.RateLimit = &broker.RateLimit{PerPrincipal: r.PerAgent, PerTool: r.PerTool, Users: r.Users}
	}
	for who, q := range map[string]*quotaConfig{"agent": c.DailyQuota.Agent, "user": c.DailyQuota.User} {
		if q == nil {
			continue
		}
		for what, v := range map[string]float64{"calls": q.Calls, "tokens": q.Tokens, "cost": q.Cost} {
			if v != 0 {
				if err := setDailyQuota(&o.DailyQuota, fmt.Sprintf("%s.%s=%v", who, what, v)); err != nil {
					return fmt.Errorf("governance.dailyQuota: %w", err)
				}
			}
		}
	}
	return nil
}

// quotaConfig is one of governance.dailyQuota's agent and user entries.
type quotaConfig struct {
	Calls  float64 `yaml:"calls"`
	Tokens float64 `yaml:"tokens"`
	Cost   float64 `yaml:"cost"` // US dollars
}

// setDailyQuota applies one --daily-quota WHO.WHAT=N to q.
func setDailyQuota(q *switchboard.DailyQuota, spec string) error {
	bad := func(why string) error {
		return fmt.Errorf("--daily-quota %q: %s; write WHO.WHAT=N with WHO agent or user and WHAT calls, tokens or cost, e.g. agent.calls=5000 or user.cost=20", spec, why)
	}
	key, val, ok := strings.Cut(spec, "=")
	who, what, ok2 := strings.Cut(strings.TrimSpace(key), ".")
	if !ok || !ok2 {
		return bad("no WHO.WHAT=N")
	}
	var u *switchboard.QuotaUsage
	switch who {
	case "agent":
		u = &q.Agent
	case "user":
		u = &q.User
	default:
		return bad(fmt.Sprintf("%q is not agent or user", who))
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if err != nil || !(n > 0 && n <= 1e15) { // also NaN and Inf
		return bad("N must be a positive number")
	}
	switch what {
	case "calls", "tokens":
		if n != math.Trunc(n) {
			return bad(what + " must be a whole number")
		}
		if what == "calls" {
			u.Calls = int64(n)
		} else {
			u.Tokens = int64(n)
		}
	case "cost":
		u.CostMicros = int64(math.Round(n * 1e6))
	default:
		return bad(fmt.Sprintf("%q is not calls, tokens or cost", what))
	}
	return nil
}
