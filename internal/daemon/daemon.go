// Package daemon is the composition root: it wires the store, registry,
// broker, sessions and transports into one http.Handler. `switchboard serve`
// uses it, and so can a Go app that embeds switchboard and mounts the
// handler in its own http.Server.
package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/assertion"
	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/demobackend"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/job"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/oauthas"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/redact"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/internal/task"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/web"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Options configures a Daemon. Store and AdminToken are required; the
// caller owns the store and closes it after Close.
type Options struct {
	Store        switchboard.Store
	AdminToken   string
	AllowOrigins []string
	// AllowHosts restricts accepted Host headers (DNS-rebinding protection);
	// serve sets it to the loopback names when it binds loopback.
	AllowHosts []string
	Logger     *slog.Logger
	// Session tunes browser sessions (heartbeat, grace window, default
	// timeout); the daemon fills in its Store, Bus and Logger.
	Session session.Options
	// Bus carries browser dispatches and results between the call path and
	// the tabs' streams; nil means in-process (one daemon).
	Bus bus.Bus
	// Demo enables the demo app's token-less session bootstrap
	// (POST /demo/session, same-origin only, with the demo key). Off
	// unless asked for.
	Demo bool
	// DemoKey is the secret the demo page must send to open its session;
	// empty means New draws a fresh one (DemoURL shows it). serve prints
	// the URL with it, so only who can read serve's output can open the
	// demo as its user.
	DemoKey string
	// MCP tunes the MCP endpoint at /mcp (listing mode, threshold); the
	// daemon fills in its authentication, live tabs and logger.
	MCP mcpserver.Options
	// Models are the config file's model aliases (`models:`); Resolver, if
	// set, replaces them (a host's own model binding). See agent.go.
	Models   map[string]model.Config
	Resolver model.Resolver
	// Agent tunes the assistant; the daemon fills in its dependencies.
	Agent agent.Options
	// Governance tunes approvals, rate limits and the ledger.
	Governance GovernanceOptions
	// AgentSessions tunes the agent-session registry (heartbeat interval,
	// idle window); the daemon fills in its ledger, events and logger.
	AgentSessions workspace.AgentsOptions
	// Canvas is the daemon's layer of the canvas policy (the config file's
	// canvasPolicy, serve --canvas-policy); the zero value is guarded.
	Canvas panel.CanvasPolicy
	// Previews serves preview nodes from the sandboxed preview origin
	// (*preview.Server on its own listener, serve --preview-addr), whose
	// origin PreviewOrigin names; nil keeps code preview off.
	Previews      panel.Previews
	PreviewOrigin string
	// Replicas names this daemon among the replicas sharing its store and
	// tunes their heartbeat (internal/daemon/replica.go); the zero value suits one
	// daemon.
	Replicas ReplicaOptions
	// Retention says how long invocation records, idempotency keys and
	// finished runs' event logs are kept (internal/daemon/retention.go); the ledger
	// is kept forever.
	Retention RetentionOptions
	// MetricsElsewhere leaves GET /metrics off the API: serve
	// --metrics-addr serves Daemon.Metrics on a listener of its own.
	MetricsElsewhere bool
	// NoSearchLearning turns off search that learns from use (the config
	// file's search.learn: false; internal/registry/learn.go): on by default.
	NoSearchLearning bool
	// Assertion tunes the signed "who acts for whom" every HTTP-binding
	// request carries (internal/daemon/assertion.go).
	Assertion AssertionOptions
	// OAuth makes /mcp an OAuth protected resource (internal/daemon/oauth.go).
	OAuth OAuthOptions
	// A2APeers are the external A2A agents agents.handoff may hand tasks
	// to by URL (internal/daemon/tasks.go); none: handoffs stay inside.
	A2APeers []A2APeer
	// Telemetry sends redacted product events to a callback or a webhook
	// (internal/daemon/telemetry.go); the zero value sends none.
	Telemetry TelemetryOptions
}

// Daemon is a running switchboard: its subsystems and its HTTP handler.
type Daemon struct {
	// ready is closed when New has set every field: bus handlers
	// subscribed earlier hold what they would hand to later parts.
	ready    chan struct{}
	Registry *registry.Registry
	// Broker is the one call path; RegisterFunc adds Go-function tools to it.
	Broker *broker.Broker
	// Assertions signs what every HTTP-binding request says about who acts
	// for whom, and publishes the keys (GET /.well-known/jwks.json).
	Assertions *assertion.Signer
	// Sessions holds the live browser tabs (the broker's Browser).
	Sessions *session.Manager
	// Agent is the built-in assistant (runs, AG-UI, AI SDK chat).
	Agent *agent.Runtime
	// Panels runs host and agent panels and their tools (internal/daemon/panels.go).
	Panels      *panel.Service
	panelWiring panelWiring
	// Ledger, Approvals, Jobs and Tokens govern calls (internal/daemon/governance.go);
	// the last three are nil when the store keeps no governance.
	Ledger    *activity.Ledger
	Approvals *approval.Service
	Jobs      *job.Service
	Tokens    *scope.Tokens
	gov       governance
	// Agents is the registry of agent sessions at work (internal/daemon/agents.go).
	Agents *workspace.Agents
	agents agentWiring
	// Metrics are the Prometheus metrics (internal/daemon/metrics.go), served at
	// GET /metrics for the admin token unless Options.MetricsElsewhere.
	Metrics *metrics.Metrics
	// Telemetry is the redacted event stream (internal/daemon/telemetry.go);
	// nil when no callback or webhook is configured.
	Telemetry *telemetry.Sink
	// Workspace keeps the tabs' contexts and compiles the digest
	// (internal/daemon/workspace.go).
	Workspace *workspace.Workspace
	ws        atomic.Pointer[workspace.Workspace]

	// Tasks runs delegated tasks (internal/daemon/tasks.go).
	Tasks *task.Service
	// handoffs follows the tasks handed to A2A peers (internal/a2a).
	handoffs *a2a.Follower
	// startOwners are the replicas whose work this start resolved, until
	// RecoverTasks resumes their tasks.
	mu          sync.Mutex
	startOwners map[string]bool

	members   *cluster.Members  // this daemon among the replicas on its store (replica.go)
	store     switchboard.Store // what the replicas share (takeOver)
	retention retention         // the background sweeper of expired records (retention.go)
	demoKey   string            // the demo page's key; "" without --demo

	stopCatalog func() // internal/daemon/catalogbus.go
	// decl and declStore serve the panels and adapters apps declare
	// (hostpanels.go).
	decl      declared
	declStore switchboard.Store
	stopRuns  func() // internal/daemon/runs.go
	bus       bus.Bus
	asker     *cluster.Asker // ask.go
	// vouchKey authenticates replicas' answers to ledger.vouch (vouch.go).
	vouchKey []byte

	log      *slog.Logger
	auth     *authn.Authenticator // the one login check, handed to every transport
	resource *oauth.Resource      // /mcp as an OAuth protected resource; nil when not
	oauth    *oauth.Verifier      // OAuth access tokens (external issuer's or the embedded server's); nil without
	// authServer is the embedded authorization server; nil with an
	// external issuer or without a resource.
	authServer *oauthas.Server
	// consoleUsers checks console sign-ins; nil without the embedded server.
	consoleUsers authn.OAuthTokens
	api          *httpapi.Server
	mcp          *mcpserver.Server
}

// New wires a Daemon over opts.Store.
func New(ctx context.Context, opts Options) (*Daemon, error) {
	if opts.Store == nil {
		return nil, errors.New("daemon: Options.Store is required")
	}
	if opts.AdminToken == "" {
		return nil, errors.New("daemon: Options.AdminToken is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = slog.New(redact.Handler(log.Handler())) // no secret reaches the logs
	if opts.Bus == nil {
		opts.Bus = bus.NewLocal() // one bus for tabs and approvals
	}
	d := &Daemon{log: log, bus: opts.Bus, store: opts.Store, ready: make(chan struct{}), vouchKey: vouchKey(opts.AdminToken)}
	d.Metrics = d.newMetrics()
	var err error
	if d.Telemetry, err = d.newTelemetry(opts.Telemetry); err != nil {
		return nil, err
	}
	if err := d.initReplica(opts); err != nil {
		return nil, err
	}
	if err := d.startAsker(opts.Bus); err != nil {
		return nil, err
	}
	if opts.Demo {
		d.demoKey = opts.DemoKey
		if d.demoKey == "" {
			d.demoKey = newDemoKey()
		}
	}
	bo, err := d.startGovernance(ctx, opts)
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(ctx, opts.Store, &registry.Options{Logger: log, Audit: d.Ledger.RecordToolChange,
		Approval:   d.Approvals.Effective, // agents see no tool the approval floor makes user-only
		Offered:    d.panelToolOffered,    // panel tools only where panels can be shown (panels.go)
		NoLearning: opts.NoSearchLearning})
	if err != nil {
		return nil, err
	}
	// Successful calls teach search (internal/registry/learn.go), heard where the
	// ledger hears them.
	ledgerObserve := bo.OnActivity
	bo.OnActivity = func(e switchboard.ActivityEntry) { ledgerObserve(e); reg.Observe(e) }
	d.Registry = reg
	if err := d.relayCatalog(opts.Bus, reg); err != nil {
		return nil, err
	}
	if err := d.startAgents(opts); err != nil {
		return nil, err
	}
	kept, err := d.startSessions(ctx, opts)
	if err != nil {
		return nil, err
	}
	bo.Store, bo.Registry, bo.Logger, bo.Browser, bo.Replica, bo.Bus = opts.Store, reg, log, d.Sessions, d.members.Self(), opts.Bus
	if opts.Retention.IdempotencyKeys > 0 { // one setting: how long a key replays is how long it is kept
		bo.IdempotencyTTL = opts.Retention.IdempotencyKeys
	}
	if err := d.startExchange(ctx, opts, &bo); err != nil {
		return nil, err
	}
	if err := d.startAssertions(opts, &bo); err != nil {
		return nil, err
	}
	d.Broker = broker.New(bo)
	d.resume(kept) // calls whose approval outlived the restart
	if err := d.startPanels(ctx, opts); err != nil {
		return nil, err
	}
	if err := d.startDeclared(ctx, opts); err != nil {
		return nil, err
	}
	if err := d.startWorkspace(ctx, opts); err != nil {
		return nil, err
	}
	if err := d.startOAuth(ctx, opts); err != nil {
		return nil, err
	}
	if d.auth, err = d.newAuth(opts); err != nil {
		return nil, err
	}
	if d.Agent, err = d.newAgent(opts); err != nil {
		return nil, err
	}
	if err := d.relayRuns(opts.Bus); err != nil {
		return nil, err
	}
	if err := d.startTasks(opts); err != nil {
		return nil, err
	}
	// After the task service: an agent's MCP call may be made for a task.
	if d.mcp, err = d.newMCP(ctx, opts); err != nil {
		return nil, err
	}
	extra := d.webRoutes(opts)
	extra["/mcp"] = d.mcp.Handler()
	d.oauthRoutes(extra)
	if err := d.a2aRoutes(opts, extra); err != nil {
		return nil, err
	}
	d.api, err = httpapi.New(httpapi.Options{
		Registry:     reg,
		Auth:         d.auth,
		AllowOrigins: opts.AllowOrigins,
		AllowHosts:   opts.AllowHosts,
		Logger:       log,
		Broker:       d.Broker,
		Sessions:     d.Sessions,
		Agent:        d.Agent,
		Panels:       d.Panels,
		Extra:        extra,
		Governance:   d.apiGovernance(opts),
		Ready: func(ctx context.Context) error {
			_, err := opts.Store.ActivityHead(ctx) // one indexed read
			return err
		},
		Agents:       d.Agents,
		Tasks:        d.Tasks,
		Workspace:    d.Workspace,
		Declarations: d,
		ChatReading:  d.chatReading(opts.Bus), // followups.go
		Metrics:      d.metricsRoute(opts),
		OAuth:        d.oauthAPI(),
	})
	if err != nil {
		return nil, err
	}
	if err := d.relayChatReads(opts.Bus); err != nil {
		return nil, err
	}
	d.members.Start()
	d.startRetention(opts.Store, opts.Retention)
	close(d.ready)
	return d, nil
}

// DemoURL is the demo app's address under base (http://host:port) with its
// key, the URL serve --demo prints; "" when the demo is off.
func (d *Daemon) DemoURL(base string) string {
	if d.demoKey == "" {
		return ""
	}
	return base + "/demo/?key=" + url.QueryEscape(d.demoKey)
}

// newDemoKey is 192 random bits, URL-safe, as Jupyter's token is.
func newDemoKey() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// Handler serves the whole daemon: /healthz, /api/v1 and the rest.
func (d *Daemon) Handler() http.Handler { return d.api }

// Close stops background work. It does not close the store.
func (d *Daemon) Close() error {
	d.members.Stop() // no survivor's work is taken over while stopping
	d.stopRetention()
	_ = d.mcp.Close() // ends MCP sessions and their streams
	if d.stopRuns != nil {
		d.stopRuns()
	}
	d.Tasks.Stopping() // the tasks of the runs cancelled next stay working, for the next start to resume
	d.Agent.Close()    // cancels runs, which ends their streams
	d.Tasks.Close()
	d.handoffs.Close() // the handed-off tasks stay open, for the next start to follow
	d.closeAgents()
	// Ends panel subscriptions and actions waiting for approval.
	d.closeDeclared()
	d.closePanels()
	d.closeGovernance() // cancels running jobs
	d.closeWorkspace()
	// The calls nobody waits on in a request (MCP approval rounds, async
	// HTTP calls, parked agent calls) end here; one awaiting approval
	// stays pending for the next start or a survivor to resume.
	d.Broker.Stop(switchboard.Errorf(switchboard.CodeCancelled, "the daemon stopped before this call finished (%w)", approval.ErrStopped))
	d.Broker.Close()
	d.Sessions.Shutdown() // ends every tab stream so graceful shutdown completes
	d.asker.Close()
	if d.stopCatalog != nil {
		d.stopCatalog()
	}
	d.closeTelemetry() // last: the calls ended above have emitted
	return nil
}

// startSessions registers this daemon as a replica, resolves what its
// previous start and replicas known to be gone left in flight (d.sweep:
// never re-run, never left pending by accident; other live replicas' work
// is theirs), and builds the session manager. It returns the calls whose
// approval outlived the restart, now this replica's, to resume.
func (d *Daemon) startSessions(ctx context.Context, opts Options) (map[string]string, error) {
	owners, err := d.members.Register(ctx)
	if err != nil {
		return nil, err
	}
	kept, err := d.sweep(ctx, opts.Store, owners)
	if err != nil {
		return nil, err
	}
	for o := range owners {
		if _, err := opts.Store.InvocationAdopt(ctx, o, d.members.Self()); err != nil {
			return nil, fmt.Errorf("take over calls awaiting approval: %w", err)
		}
	}
	d.members.Forget(ctx, owners)
	d.startOwners = owners // their tasks resume in RecoverTasks
	so := opts.Session
	so.Store, so.Bus, so.Logger, so.Replica = opts.Store, opts.Bus, d.log, d.members.Self()
	so.Presence = true // replicas that share the bus reach each other's tabs (internal/session/presence.go)
	if so.Catalog == nil {
		so.Catalog = d.Registry // a tab may not advertise under an api tool's name (internal/registry/shadow.go)
	}
	d.Sessions, err = session.New(so)
	return kept, err
}

// webRoutes serves the browser SDK and the demo app (no token needed).
func (d *Daemon) webRoutes(opts Options) map[string]http.Handler {
	demo := web.DemoOptions{Key: d.demoKey}
	if opts.Demo {
		demo.OpenSession = func(ctx context.Context) (any, error) { return d.Sessions.Create(ctx, "demo") }
	}
	routes := map[string]http.Handler{
		"/sdk/": web.SDK(), "/demo/": web.Demo(demo), "/demo": http.RedirectHandler("/demo/", http.StatusFound),
		"/": web.Console(), // the operator console; unknown paths are 404
		// The public keys of backend assertions (package assertion).
		"GET /.well-known/jwks.json": d.Assertions,
	}
	if opts.Demo { // the examples' sample backend (README walkthrough)
		// It verifies each call's assertion with the keys the daemon
		// publishes, as a real backend would, and keeps each user's tasks
		// apart.
		routes[demobackend.Prefix] = demobackend.New(&demobackend.Options{Issuer: d.Assertions.Issuer(), Keys: d.Assertions.JWKS})
	}
	return routes
}
