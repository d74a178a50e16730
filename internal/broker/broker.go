// Package broker is the one call path: every tool call — from the HTTP API,
// the CLI, MCP or the agent loop — goes through Broker.Call, which resolves
// the tool as the caller may see it (a hidden tool is TOOL_NOT_FOUND),
// validates the input against its inputSchema, applies the policy seam
// (approvals slot in there), waits for a concurrency slot, persists the
// invocation, executes it through its binding (a Go function registered in
// this process, an HTTP call to the app's backend, or a live browser tab),
// validates the result against the outputSchema, records the terminal state
// with a compare-and-swap ("first terminal write wins") and appends a ledger
// entry. Transports only translate.
//
// Call returns the terminal record. A call refused before anything was
// recorded (unknown tool, bad input, no slot) returns a zero record and the
// error; a call that failed after it was recorded returns the record and its
// error, so transports can answer with both.
//
// A browser call is delivered to its tab and waited for here
// (browser.go); the tab's answer, POSTed to any replica, ends it in
// Complete (complete.go).
//
// Reverse undoes a recorded call: it plans the tool's declared inverse from
// the call's ledger entry and runs it as a fresh Call, so scope, approval
// and the ledger apply to an undo as to any call.
package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/httpbind"
	"github.com/switchboardhq/switchboard/internal/quota"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/schema"
	"github.com/switchboardhq/switchboard/internal/tracing"
)

// Defaults for Options.
const (
	DefaultTimeout = 30 * time.Second
	// DefaultMaxConcurrency applies to cheap tools without MaxConcurrency.
	DefaultMaxConcurrency = 16
	// DefaultMaxConcurrencyExpensive applies to costClass expensive.
	DefaultMaxConcurrencyExpensive = 2
	// DefaultMaxQueue bounds waiting calls per tool, as a multiple of its
	// limit; past it a call fails at once with RATE_LIMITED.
	DefaultMaxQueue = 8
	// DefaultMaxInputBytes and DefaultMaxResultBytes bound what is recorded.
	DefaultMaxInputBytes  = 4 << 20
	DefaultMaxResultBytes = 4 << 20
	// finishTimeout bounds the terminal write and the ledger append, which
	// run even after the caller's context ended.
	finishTimeout = 10 * time.Second
	// DefaultRecordAfter is how long a read or ui call may run before its
	// started record is written (Options.RecordAfter).
	DefaultRecordAfter = 5 * time.Millisecond
)

// Options configures a Broker. Store and Registry are required.
type Options struct {
	Store    switchboard.Store
	Registry *registry.Registry
	// Browser reaches live tabs; nil means browser tools are unavailable.
	Browser Browser
	// Policy is the seam for approvals; nil admits every call and asks for
	// no approval.
	Policy Policy
	Logger *slog.Logger
	Now    func() time.Time
	// HTTPClient sends HTTP-binding requests (default: a pooled client).
	HTTPClient *http.Client
	// LookupEnv resolves {"env": NAME} header values (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Assert signs the assertion of who acts for whom that every
	// HTTP-binding request carries (assertion.Signer); nil sends none.
	Assert func(ctx context.Context, c AssertedCall) (string, error)
	// Exchange trades a caller's OAuth token for a backend's (bindings
	// with tokenExchange); nil: such bindings fail TOOL_UNAVAILABLE.
	Exchange func(ctx context.Context, subject string, x switchboard.TokenExchange) (string, error)
	// DefaultTimeout bounds a call whose tool and binding set no timeout.
	DefaultTimeout time.Duration
	// MaxConcurrency and MaxConcurrencyExpensive are the per-tool limits for
	// tools that set none, by cost class.
	MaxConcurrency          int
	MaxConcurrencyExpensive int
	// MaxQueue bounds waiting calls per tool as a multiple of its limit.
	MaxQueue       int
	MaxInputBytes  int
	MaxResultBytes int
	// Jobs runs calls of `job` tools in the background (the call returns
	// the job id at once); nil runs them like any other call.
	Jobs Jobs
	// JobTimeout bounds a job whose tool sets no timeoutMs.
	JobTimeout time.Duration
	// RateLimit bounds calls per principal and per tool; nil means none.
	RateLimit *RateLimit
	// Quotas are the daily quotas of agents and their users; nil is none.
	Quotas *quota.Book
	// IdempotencyTTL is how long an idempotency key is remembered.
	IdempotencyTTL time.Duration
	// OnActivity hears every ledger entry the broker appended (with its ID
	// and hash), so the ledger's in-memory ring sees it.
	OnActivity func(switchboard.ActivityEntry)
	// RecordAfter is how long a call of a read or ui api tool (no
	// approval, no idempotency key) runs before its started record is
	// written. One that ends sooner is recorded once, at its end: record,
	// outcome and ledger entry in one transaction
	// (Store.InvocationCreateFinished). A crash before that leaves no
	// record of the read, whose caller got no answer either; a call still
	// running at RecordAfter is recorded then, so a crash mid-call leaves a
	// record to resolve, as for every mutate and job call, whose started
	// record is always committed before the tool is reached. Default
	// DefaultRecordAfter; negative records every call before it runs.
	RecordAfter time.Duration
	// Replica is the serve process that owns the calls it records
	// (Invocation.Replica): if it dies, a survivor resolves them.
	Replica string
	// Bus carries the end of a call to the replicas that wait for it
	// (ends.go); nil means one process, where Await is woken in memory.
	Bus bus.Bus
	// TracerProvider records each call's execute_tool span; nil uses
	// OpenTelemetry's global provider (a no-op unless one is installed).
	TracerProvider trace.TracerProvider
}

// Broker executes tool calls. Safe for concurrent use.
type Broker struct {
	store   switchboard.Store
	reg     *registry.Registry
	browser Browser
	policy  Policy
	log     *slog.Logger
	now     func() time.Time
	http    *httpbind.Client
	opts    Options
	limits  *limiter
	jobs    Jobs
	rates   *rates
	bus     bus.Bus
	tracer  trace.Tracer
	waiters waitSet           // Await's waiters in this process
	tabs    tabCalls          // browser calls waiting for their tab here
	asked   cluster.Interests // other replicas waiting for this one's calls (TTL interestTTL)
	// unlisten ends the subscriptions listenEnds made.
	unlisten []func()
	// life ends at Stop: the calls Submit started run within it, and
	// running counts them until they return.
	lifeMu  sync.Mutex
	life    context.Context
	endLife context.CancelCauseFunc
	running sync.WaitGroup
	// awaitHook, set only by tests, hears each time a call starts waiting
	// for its in-flight twin.
	awaitHook func(key string)

	mu    sync.RWMutex
	funcs map[string]Func
}

// New returns a Broker. It panics if Store or Registry is missing, which is
// a wiring bug in the composition root.
func New(opts Options) *Broker {
	if opts.Store == nil || opts.Registry == nil {
		panic("broker: Options.Store and Options.Registry are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxConcurrency <= 0 {
		opts.MaxConcurrency = DefaultMaxConcurrency
	}
	if opts.MaxConcurrencyExpensive <= 0 {
		opts.MaxConcurrencyExpensive = DefaultMaxConcurrencyExpensive
	}
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = DefaultMaxQueue
	}
	if opts.MaxInputBytes <= 0 {
		opts.MaxInputBytes = DefaultMaxInputBytes
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = DefaultJobTimeout
	}
	if opts.IdempotencyTTL <= 0 {
		opts.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if opts.RecordAfter == 0 {
		opts.RecordAfter = DefaultRecordAfter
	}
	life, endLife := context.WithCancelCause(context.Background())
	b := &Broker{
		asked:   cluster.Interests{TTL: interestTTL},
		life:    life,
		endLife: endLife,
		jobs:    opts.Jobs,
		bus:     opts.Bus,
		tracer:  tracing.Tracer(opts.TracerProvider),
		rates:   newRates(opts.RateLimit, opts.Now),
		store:   opts.Store,
		reg:     opts.Registry,
		browser: opts.Browser,
		policy:  opts.Policy,
		log:     opts.Logger,
		now:     opts.Now,
		http: httpbind.New(&httpbind.Options{
			HTTPClient:       opts.HTTPClient,
			LookupEnv:        opts.LookupEnv,
			Assert:           opts.Assert,
			Exchange:         opts.Exchange,
			MaxResponseBytes: int64(opts.MaxResultBytes),
		}),
		opts:   opts,
		limits: newLimiter(opts.MaxQueue),
		funcs:  map[string]Func{},
	}
	b.listenEnds()
	return b
}

// Close releases idle backend connections and the broker's bus
// subscriptions.
func (b *Broker) Close() {
	for _, cancel := range b.unlisten {
		cancel()
	}
	b.http.Close()
}

// CallRequest is one call. Input is the JSON object of arguments (empty
// means {}). SessionID picks the tab for a browser tool; RunID groups the
// call with others (a new run is minted when empty).
type CallRequest struct {
	Tool      string
	Input     json.RawMessage
	SessionID string
	RunID     string
	// Caller is who calls: a user, an agent (with the user it acts for in
	// Principal.User) or a tab's session. Every submitter sets it from the
	// principal it knows (a transport from the credential it checked);
	// scope, approval policy, the idempotency scope and the record's
	// Caller all read it. A request without one is refused (INTERNAL):
	// the principal in ctx is never read to decide who calls. The broker
	// puts Caller into the call's context for what the call reaches (a Go
	// function reads it with switchboard.PrincipalFrom).
	Caller *switchboard.Principal
	// AgentSession is the agent session the call belongs to (the ledger's
	// and the digest's "who is busy"); "" falls back to
	// switchboard.AgentSessionFrom(ctx).
	AgentSession string
	// IdempotencyKey, when set, makes a retry of the same call (same tool,
	// session and input) return the first call's stored outcome instead of
	// running again; a retry while the first runs is CONFLICT (unless
	// AwaitInFlight), the key reused for another call IDEMPOTENCY_CONFLICT.
	// Keys are scoped to the caller (IdempotencyScope overrides the scope).
	IdempotencyKey   string
	IdempotencyScope string
	// AwaitInFlight makes a retry that arrives while the first call with its
	// key is still in flight wait for that call's outcome — bounded by ctx —
	// instead of getting CONFLICT. MCP sets it: a client that re-sends a
	// call after its stream dropped expects the answer, and has no status
	// code to tell "retry later" from a failure.
	AwaitInFlight bool
	retried       bool // claimKey released a shared key's failed attempt once
	// Reversal links the call's ledger entry to the entry it undoes.
	Reversal json.RawMessage
	// OnRecord, if set, is called once the invocation is recorded (and,
	// for a call that needs approval, once its approval request exists):
	// what an asynchronous transport answers with. Never called for a call
	// refused before it was recorded. A read or ui call recorded at its
	// end (Options.RecordAfter) is reported then, already terminal.
	OnRecord func(switchboard.Invocation)
	// Durable, when set, is the cause (approval.ErrStopped: the daemon
	// stops) with which ctx ending leaves a call that awaits approval as it
	// is — its record awaiting_approval, its request pending, which the
	// Policy must also leave for that cause — for the next start or the
	// survivor that takes this replica's calls over to resume (Resume),
	// instead of ending it CANCELLED. For callers that come back for the
	// outcome by the invocation's id (MCP approval rounds).
	Durable error
	// submitted marks a call started by Submit, whose outcome is read by
	// id: its end is announced to every replica.
	submitted bool
}

// call is everything resolved about one call before it is recorded.
type call struct {
	tool      switchboard.Tool
	in, out   *schema.Schema
	target    *Target // browser tools only
	input     json.RawMessage
	caller    switchboard.Principal
	hasCaller bool
	agentID   string // the acting agent session (switchboard.WithAgentSession)
	reversal  json.RawMessage
	claim     *claim // the idempotency key this call holds, if any
	// from, when set, are the only states finish may end the call from
	// (default switchboard.InFlight).
	from []switchboard.Status
	// announce says whether the call's end is announced to other replicas
	// (Broker.ended): someone may await it by id there.
	announce bool
	// invocationID is the record's id once dispatched: the Idempotency-Key
	// an HTTP binding sends.
	invocationID string
}

// Call runs one tool call to a terminal state. See the package doc for
// what the returned record and error mean.
func (b *Broker) Call(ctx context.Context, req CallRequest) (inv switchboard.Invocation, err error) {
	// One execute_tool span per call, whichever transport made it; what
	// the backend of an HTTP binding receives continues it (traceparent).
	ctx, span := tracing.StartTool(ctx, b.tracer, req.Tool)
	defer func() {
		tracing.ToolCall(span, inv.ID)
		tracing.End(span, err)
	}()
	ctx = callerContext(ctx, req)
	c, err := b.prepare(ctx, req)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if req.IdempotencyKey == "" {
		return b.call(ctx, c, req)
	}
	for {
		if replay, err := b.claimKey(ctx, c, &req); err != nil || replay.ID != "" {
			return replay, err
		}
		inv, err := b.call(ctx, c, req)
		if !errors.Is(err, errClaimLost) {
			return inv, err
		}
		// Another call took the key between the check and the claim: what
		// it stored is this call's answer, so look again.
	}
}

// callerContext carries req's explicit caller and agent session into the
// call's context, where everything the call reaches reads them: the
// registry's visibility, the policy, the tool itself (a Go function, an
// HTTP binding's identity assertion).
func callerContext(ctx context.Context, req CallRequest) context.Context {
	if req.Caller != nil {
		ctx = switchboard.WithPrincipal(ctx, *req.Caller)
	}
	if req.AgentSession != "" {
		ctx = switchboard.WithAgentSession(ctx, req.AgentSession)
	}
	return ctx
}

// call runs a prepared call whose key, if any, is free.
func (b *Broker) call(ctx context.Context, c *call, req CallRequest) (switchboard.Invocation, error) {
	c.announce = c.announce || req.submitted || req.Durable != nil
	if b.policy != nil && b.policy.NeedsApproval(c.caller, c.tool, c.input) {
		return b.callWithApproval(ctx, c, req)
	}
	timeout := b.timeoutFor(c.tool)
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, timeoutError(c.tool.Name, timeout))
	defer cancel()
	// Wait for a slot before recording, so a call refused for load leaves
	// no record (and no key: the key is claimed with the record).
	release, err := b.limits.acquire(cctx, c.tool.Name, b.limitFor(c.tool))
	if err != nil {
		return switchboard.Invocation{}, b.queueError(cctx, c.tool.Name, err)
	}
	inv := b.newInvocation(c, req, switchboard.StatusDispatched)
	if b.recordsLate(c) {
		return b.dispatchLate(ctx, cctx, c, inv, req.OnRecord, release)
	}
	if err := b.record(ctx, c, inv); err != nil {
		release()
		return switchboard.Invocation{}, err
	}
	if req.OnRecord != nil {
		req.OnRecord(inv)
	}
	return b.dispatch(ctx, cctx, c, inv, timeout, release)
}

// dispatch executes a recorded, dispatched call holding its slot; cctx
// ends at the call's timeout.
func (b *Broker) dispatch(ctx, cctx context.Context, c *call, inv switchboard.Invocation, timeout time.Duration, release func()) (switchboard.Invocation, error) {
	c.invocationID = inv.ID
	if c.target != nil { // browser tool: delivered to its tab (browser.go)
		return b.inTab(ctx, cctx, c, inv, timeout, release)
	}
	if c.tool.Class == switchboard.ClassJob && b.jobs != nil {
		result, err := b.startJob(ctx, c, inv, release)
		return b.finish(ctx, cctx, c, inv, result, err)
	}
	result, err := b.execute(cctx, c, release)
	if err == nil {
		result, err = b.checkResult(c, result)
	}
	return b.finish(ctx, cctx, c, inv, result, err)
}

// prepare resolves the tool, validates the input and admits the caller:
// every refusal that happens before anything is recorded.
func (b *Broker) prepare(ctx context.Context, req CallRequest) (*call, error) {
	if req.Caller == nil {
		// Who calls is the request's to say, never the ambient context's:
		// a submitter that forgot it fails here instead of running the
		// call as nobody.
		return nil, switchboard.Errorf(switchboard.CodeInternal,
			"call of %s names no caller: the submitter must set CallRequest.Caller", req.Tool)
	}
	c := &call{caller: *req.Caller, hasCaller: true}
	c.agentID, _ = switchboard.AgentSessionFrom(ctx)
	if err := b.resolve(ctx, req, c); err != nil {
		return nil, err
	}
	// The policy before validation: a caller it refuses learns nothing of
	// the tool's schema from a validation error.
	if b.policy != nil {
		if err := b.policy.Admit(ctx, c.caller, c.tool); err != nil {
			return nil, err
		}
	}
	input := bytes.TrimSpace(req.Input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		input = json.RawMessage(`{}`)
	}
	if len(input) > b.opts.MaxInputBytes {
		return nil, switchboard.Errorf(switchboard.CodePayloadTooLarge, "input of %s is %d bytes; the limit is %d", c.tool.Name, len(input), b.opts.MaxInputBytes)
	}
	if err := c.in.Validate(input); err != nil {
		return nil, annotate(err, "input of "+c.tool.Name)
	}
	c.input = input
	c.reversal = req.Reversal
	if err := b.rates.admit(c); err != nil {
		return nil, err
	}
	if c.hasCaller {
		// Last of the checks: a call refused for any other reason uses no quota.
		if err := b.opts.Quotas.AdmitCall(ctx, c.caller); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// resolve finds the tool: the catalog first; a browser tool (or a name the
// catalog lacks) is asked of the live sessions, whose advertised version
// wins because that is what the tab will run. This is the call-time check
// of visibility: the registry answers TOOL_NOT_FOUND for a tool the caller
// may not see, and a tab's tool passes the same predicate
// (registry.Visible), so a call of a hidden tool fails exactly like a call
// of a name nothing knows.
func (b *Broker) resolve(ctx context.Context, req CallRequest, c *call) error {
	t, err := b.reg.Get(ctx, req.Tool)
	switch {
	case err == nil && t.Surface != switchboard.SurfaceBrowser:
		c.tool = t
		c.in, c.out, err = b.reg.Schemas(ctx, req.Tool)
		return err
	case err != nil && switchboard.CodeOf(err) != switchboard.CodeToolNotFound:
		return err
	}
	if b.browser == nil {
		if err != nil {
			return err
		}
		return switchboard.Errorf(switchboard.CodeToolUnavailable, "browser tool %s needs a live browser session, and this daemon has none attached", req.Tool)
	}
	name := req.Tool
	if err != nil && !b.reg.Visible(ctx, switchboard.Tool{Name: name}) {
		// A name outside the caller's scope is not asked of the tabs, whose
		// answers (which tabs have it) would tell that it exists. They are
		// asked for a name no tab can advertise instead, so the answer is
		// exactly an unknown name's: the session's state, or not found.
		name = ""
	}
	// The tabs answer with the registry's predicate too, so a tool the
	// caller may not see for any reason (user-only, say) is, in every tab,
	// one that is not advertised: no "live in N tabs", and no list of a
	// tab's tools that names it.
	visible := func(t switchboard.Tool) bool { return b.reg.Visible(ctx, t) }
	target, rerr := b.browser.Resolve(ctx, name, req.SessionID, req.RunID, visible)
	if rerr != nil {
		if err != nil && switchboard.CodeOf(rerr) == switchboard.CodeToolUnavailable {
			return unknownTool(req.Tool)
		}
		return rerr
	}
	if name == "" || !visible(target.Tool) {
		return unknownTool(req.Tool)
	}
	c.tool, c.in, c.out, c.target = target.Tool, target.Input, target.Output, &target
	if c.in == nil {
		if c.in, err = schema.Compile(target.Tool.InputSchema); err != nil {
			return err
		}
	}
	return nil
}

// unknownTool is the answer when neither the catalog nor any tab knows the
// name, or the caller may not see the tool.
func unknownTool(name string) error {
	return switchboard.Errorf(switchboard.CodeToolNotFound,
		"no tool named %q: not in the catalog, and no connected tab advertises it (browser tools exist only while their tab is open); search the catalog for the right name", name)
}

// timeoutFor picks the tool's timeout, else its binding's, else the default.
func (b *Broker) timeoutFor(t switchboard.Tool) time.Duration {
	switch {
	case t.TimeoutMs > 0:
		return time.Duration(t.TimeoutMs) * time.Millisecond
	case t.Binding != nil && t.Binding.HTTP != nil && t.Binding.HTTP.TimeoutMs > 0:
		return time.Duration(t.Binding.HTTP.TimeoutMs) * time.Millisecond
	}
	return b.opts.DefaultTimeout
}

// limitFor picks the tool's concurrency limit, else its cost class default.
func (b *Broker) limitFor(t switchboard.Tool) int {
	switch {
	case t.MaxConcurrency > 0:
		return t.MaxConcurrency
	case t.CostClass == switchboard.CostExpensive:
		return b.opts.MaxConcurrencyExpensive
	}
	return b.opts.MaxConcurrency
}

// checkResult bounds and validates a successful result.
func (b *Broker) checkResult(c *call, result json.RawMessage) (json.RawMessage, error) {
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	if len(result) > b.opts.MaxResultBytes {
		return nil, switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"result of %s is %d bytes; the limit is %d — ask for less (paging or filters)", c.tool.Name, len(result), b.opts.MaxResultBytes).
			WithDetails(map[string]any{"limitBytes": b.opts.MaxResultBytes})
	}
	if c.out != nil {
		if err := c.out.Validate(result); err != nil {
			return nil, annotate(err, "result of "+c.tool.Name+" does not match its outputSchema")
		}
	}
	return result, nil
}

// annotate prefixes a coded error's message, keeping code and details.
func annotate(err error, prefix string) error {
	var e *switchboard.Error
	if !errors.As(err, &e) {
		return err
	}
	return &switchboard.Error{Code: e.Code, Message: prefix + ": " + e.Message, Details: e.Details}
}
