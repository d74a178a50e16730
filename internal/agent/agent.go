// Package agent is switchboard's built-in assistant: the daemon-side agent
// loop. A Runtime starts runs bound to a chat session (the thread) and
// optionally a browser session; each run resolves a model alias through a
// model.Resolver, offers the model the tools active for that session (full
// schemas under a threshold, names and summaries plus the search/describe
// meta tools above it), streams the model's answer, executes every tool
// call through the broker — one invocation record per call, parallel calls
// in parallel — and repeats, bounded by a step limit, until the model
// answers without calling a tool, a client-side (AG-UI frontend) tool is
// called, or the run is cancelled.
//
// Everything a run does is one stream of AG-UI events (package agui) kept
// in the Run; transports subscribe to it: /agui and /runs/{id}/events send
// it as it is, /agent/chat translates it into the AI SDK UI Message Stream.
// Follow-ups sent while a run is busy queue on the run and are consumed at
// the next step boundary; chat history is persisted through a HistoryStore.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/quota"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/tracing"
)

// Defaults for Options.
const (
	DefaultMaxSteps = 16
	// DefaultDeferThreshold: catalogs with more api tools than this are
	// disclosed by name and summary, with the meta tools.
	DefaultDeferThreshold = 32
	// DefaultMaxRunEvents bounds one run's event log; past it text and
	// argument deltas are dropped (starts, ends and results are kept).
	DefaultMaxRunEvents = 100_000
	// DefaultRetainRuns is how many finished runs stay readable.
	DefaultRetainRuns = 256
	// DefaultMaxToolResultBytes bounds a tool result shown to the model.
	DefaultMaxToolResultBytes = 64 << 10
	// DefaultRunTimeout bounds a whole run.
	DefaultRunTimeout = 30 * time.Minute
	// DefaultMaxDataURLBytes: data: URLs longer than this are stripped from
	// saved history.
	DefaultMaxDataURLBytes = 8 << 10
)

// DefaultInstructions open every system prompt.
const DefaultInstructions = "You are the assistant built into this web application. " +
	"You act for the signed-in user through the tools listed for you: use them to look things up and to act, " +
	"and prefer doing over explaining how. Tools that change data may need the user's approval; " +
	"if a call is denied, do not retry it. Keep answers short and say what you did."

// Caller executes one tool call and waits for one recorded on any
// replica; *broker.Broker is the implementation.
type Caller interface {
	Call(ctx context.Context, req broker.CallRequest) (switchboard.Invocation, error)
	Submit(ctx context.Context, req broker.CallRequest) (switchboard.Invocation, error)
	Await(ctx context.Context, id string, until broker.Until) (switchboard.Invocation, error)
}

// BrowserTools is what the loop needs of browser sessions;
// *session.Manager is the implementation.
type BrowserTools interface {
	// Tools lists the live browser tools a session advertises.
	Tools(ctx context.Context, sessionID string) ([]switchboard.Tool, error)
	// BindRun makes the session the default target of the run's browser calls.
	BindRun(runID, sessionID string)
}

// HistoryStore is the part of switchboard.Store that persists chat
// history.
type HistoryStore interface {
	ChatGet(ctx context.Context, sessionID string) (switchboard.ChatHistory, error)
	ChatPut(ctx context.Context, h switchboard.ChatHistory) (switchboard.ChatHistory, error)
}

// Options configures a Runtime. Broker and Registry are required.
type Options struct {
	Broker   Caller
	Registry *registry.Registry
	// Browser reaches live tabs; nil means runs see no browser tools.
	Browser BrowserTools
	// Models resolves aliases; nil means none is configured (every run
	// fails at once with MODEL_ERROR saying how to configure one).
	Models model.Resolver
	// Approvals decides approvals answered through interrupts; nil means
	// runs never interrupt (a call needing approval waits inside its run).
	Approvals Approvals
	// History persists chat history; nil keeps none (the history routes
	// answer UNAVAILABLE and runtime-owned chats start empty each run).
	History HistoryStore
	// Harness picks the runtime binding of a chat session (its
	// capabilities); nil means the built-in loop for every chat, or the AI
	// SDK binding for chats started through /agent/chat.
	Harness func(ctx context.Context, chatSessionID string) (switchboard.Harness, bool)
	// Digests gives every turn the workspace digest (system context) and
	// every run its AG-UI state; nil leaves both out.
	Digests Digests
	// Instructions replace DefaultInstructions.
	Instructions string
	MaxSteps     int
	// MaxRunTokens and MaxRunCost (US dollars, for models with prices)
	// are each run's ceilings, checked before every model call: a run
	// that reached one ends failed with BUDGET_EXCEEDED. Zero means none.
	MaxRunTokens int64
	MaxRunCost   float64
	// Quotas are the daily quotas of agents and their users (tokens and
	// cost are checked before each model call and counted after it); nil
	// is none.
	Quotas             *quota.Book
	DeferThreshold     int
	MaxRunEvents       int
	RetainRuns         int
	MaxToolResultBytes int
	MaxDataURLBytes    int
	RunTimeout         time.Duration
	// Runs, if set, keeps every run's record and events in the store, so
	// any replica answers for it (persist.go, follow.go); nil keeps runs
	// in this process only.
	Runs RunStore
	// Replica is this process's replica id, recorded as the owner of the
	// runs it stores.
	Replica string
	// RunFlushed, if set, tells replica, which follows run runID (it
	// asked with RunInterest: interest.go), that this process stored the
	// run's events up to seq: the daemon sends it on that replica's bus
	// topic, whose runtime calls Notified. It is called after each flush
	// for each replica that asked, on the flusher goroutine, never on a
	// run's: a slow one delays the next flush, not the runs. Followers in
	// this process are woken without it.
	RunFlushed func(replica, runID string, seq int)
	// RunInterest, if set, asks owner, which holds run runID, to tell this
	// process of the run's flushes (RunFlushed there): sent when a
	// follower here starts following it, and repeated while one does. The
	// daemon sends it on the owner's bus topic, whose runtime calls
	// Interested. Without it followers read the store every
	// RunPollInterval.
	RunInterest func(owner, runID string)
	// RunCancel, if set, asks replica, which holds a run, to stop it (the
	// daemon publishes it on that replica's bus topic; it stops it with
	// Get and Stop): POST /runs/{id}/cancel on any replica (CancelStored).
	RunCancel func(replica, runID string)
	// RelayFollowUp, if set, hands a follow-up of a chat (and the
	// caller's owner) to replica, which ran the chat's newest run, and
	// returns that replica's answer (its QueueFollowUp): answered false
	// when it neither knows the clientSeq nor has a busy run of the chat.
	// The daemon sends it on the bus: POST /agent/chat/{id}/followup at
	// any replica (followup.go).
	RelayFollowUp func(ctx context.Context, replica, chatSessionID string, f switchboard.FollowUp, owner string) (res switchboard.FollowUpResult, answered bool, err error)
	// RunFlushInterval bounds how long a delta waits to be stored
	// (DefaultRunFlushInterval); RunPollInterval spaces a follower's store
	// reads when no notification arrives (DefaultRunPollInterval).
	RunFlushInterval time.Duration
	RunPollInterval  time.Duration
	// Sessions, if set, records runs as agent sessions (sessions.go).
	Sessions RunSessions
	// Scopes, if set, limits the assistant of a run a tab starts to the
	// scope of its session's user (principal.go). The daemon always sets
	// it; nil leaves every run the assistant's full scope.
	Scopes SessionScopes
	// OnUsage, if set, hears each model turn's usage and its cost (-1 for
	// a model without prices): the metrics' tokens and cost by model.
	OnUsage func(model string, u model.Usage, cost float64)
	// TracerProvider records each run's invoke_agent span and its model
	// calls' chat spans; nil uses OpenTelemetry's global provider (a no-op
	// unless one is installed).
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger
	Now            func() time.Time
}

// Runtime runs agent loops. Safe for concurrent use.
type Runtime struct {
	opts      Options
	call      Caller
	reg       *registry.Registry
	browser   BrowserTools
	models    model.Resolver
	history   HistoryStore
	approvals Approvals
	log       *slog.Logger
	now       func() time.Time
	tracer    trace.Tracer

	mu       sync.Mutex
	runs     map[string]*Run
	finished []string // finished run ids, oldest first, for retention
	chats    map[string]*chatState
	tabs     map[string]string // browser session → its current chat session
	wg       sync.WaitGroup
	closed   bool

	fl    *flusher // nil without Options.Runs (persist.go)
	wmu   sync.Mutex
	watch map[string]map[chan struct{}]bool // run id → its followers here (follow.go)
	asks  map[string]runAsk                 // run id → the interest sent for its followers here (interest.go)
	asked cluster.Interests                 // which replicas follow this process's runs (interest.go; TTL runInterestTTL)
}

// New returns a Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.Broker == nil || opts.Registry == nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "agent: Options.Broker and Options.Registry are required")
	}
	if opts.Models == nil {
		opts.Models = model.ResolverFunc(func(context.Context, string) (model.Binding, error) {
			return model.Binding{}, model.ErrNotConfigured()
		})
	}
	if opts.Instructions == "" {
		opts.Instructions = DefaultInstructions
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opts.MaxSteps, DefaultMaxSteps)
	def(&opts.DeferThreshold, DefaultDeferThreshold)
	def(&opts.MaxRunEvents, DefaultMaxRunEvents)
	def(&opts.RetainRuns, DefaultRetainRuns)
	def(&opts.MaxToolResultBytes, DefaultMaxToolResultBytes)
	def(&opts.MaxDataURLBytes, DefaultMaxDataURLBytes)
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = DefaultRunTimeout
	}
	if opts.RunFlushInterval <= 0 {
		opts.RunFlushInterval = DefaultRunFlushInterval
	}
	if opts.RunPollInterval <= 0 {
		opts.RunPollInterval = DefaultRunPollInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	rt := &Runtime{
		asked: cluster.Interests{TTL: runInterestTTL},
		opts:  opts, call: opts.Broker, reg: opts.Registry, browser: opts.Browser, models: opts.Models,
		history: opts.History, approvals: opts.Approvals, log: opts.Logger, now: opts.Now,
		tracer: tracing.Tracer(opts.TracerProvider),
		runs:   map[string]*Run{}, chats: map[string]*chatState{}, tabs: map[string]string{},
	}
	if opts.Runs != nil {
		rt.startFlusher()
	}
	return rt, nil
}

// StartRequest starts a run.
type StartRequest struct {
	// RunID is the client's id for the run (AG-UI sends one); empty mints one.
	RunID string
	// ThreadID is the chat session; empty mints one.
	ThreadID string
	// SessionID is the browser session the run acts in ("" for none).
	SessionID string
	// Model is the alias to use ("" means model.DefaultAlias).
	Model string
	// Messages is the conversation when the client owns the history (AG-UI,
	// AI SDK). Nil means the runtime owns it: it is loaded from the
	// HistoryStore and Input is appended.
	Messages []agui.Message
	// Input is a new user message (for runtime-owned history, or appended to
	// Messages).
	Input string
	// Tools are client-provided frontend tools.
	Tools   []agui.Tool
	Context []agui.Context
	// State is the client's agent state, echoed as STATE_SNAPSHOT.
	State json.RawMessage
	// Resume answers the interrupts of the thread's previous run (see
	// interrupt.go); the caller's principal (ctx) decides them.
	Resume []agui.ResumeEntry
	// Interrupts ends the run with an interrupt outcome when a call waits
	// for approval (AG-UI and AI SDK clients answer it themselves); false
	// keeps the call waiting inside the run for the tab or console.
	Interrupts bool
	// Harness is the binding this transport implies (HarnessLoop for /runs
	// and /agui, HarnessAISDK for /agent/chat); zero means HarnessLoop.
	Harness switchboard.Harness
	// Caller is who started the run; the chat's owner check uses Owner.
	Owner    string
	MaxSteps int
	// As, if set, is who the run's tool calls run as instead of the
	// assistant of Owner: a delegated task's assistant, acting for the
	// task's owner within its envelope (internal/task).
	As *switchboard.Principal
	// Limits are the run's own ceilings beside the runtime's; the
	// smaller of each wins.
	Limits Limits
	// IdempotencyScope, if set, gives every mutate or job call of the run
	// an idempotency key made of its tool and input, scoped to it: a
	// delegated task resumed after a restart gets a completed mutation's
	// stored outcome back instead of running it again.
	IdempotencyScope string
}

// Limits are a run's ceilings (a delegated task's budget): tokens and
// cost are checked before every model call, calls before every step's
// tool calls run; each reached one ends the run failed with
// BUDGET_EXCEEDED. Past Deadline the run is stopped with TIMEOUT. Zero
// values are no ceiling.
type Limits struct {
	MaxTokens int64
	MaxCost   float64
	MaxCalls  int
	Deadline  time.Time
}

// Start begins a run and returns at once; the run's events stream from
// Run.Events. A refused start (a busy chat, a taken run id, a chat owned by
// someone else) returns an error and no run. A model that cannot be
// resolved does not refuse the start: the run fails at once with RUN_ERROR
// {code: MODEL_ERROR}, so every transport reports it the same way.
func (rt *Runtime) Start(ctx context.Context, req StartRequest) (*Run, error) {
	if req.ThreadID == "" {
		req.ThreadID = newID()
	}
	if req.RunID == "" {
		req.RunID = newID()
	}
	if req.Harness.Name == "" {
		req.Harness = HarnessLoop
	}
	if err := rt.checkOwner(ctx, req.ThreadID, req.Owner, true); err != nil {
		return nil, err
	}
	who, err := rt.assistantFor(ctx, req.Owner)
	if err != nil {
		return nil, err
	}
	if req.As != nil {
		who = *req.As
	}
	// The run sees the tools its binding contributes: the host's binding
	// of the chat if it names one, else the transport's.
	who.Harness = req.Harness.Name
	if rt.opts.Harness != nil {
		if h, ok := rt.opts.Harness(ctx, req.ThreadID); ok && h.Name != "" {
			who.Harness = h.Name
		}
	}
	// Starts of one chat are serialized, so what a resume checked is what
	// it decides.
	rt.mu.Lock()
	chat := rt.chatLocked(req.ThreadID)
	rt.mu.Unlock()
	chat.smu.Lock()
	defer chat.smu.Unlock()
	rt.mu.Lock()
	intr := chat.intr
	busy := chat.run != nil && chat.run.busy()
	rt.mu.Unlock()
	var plan *resumePlan
	if !busy && rt.approvals != nil {
		var err error
		open := intr
		if open == nil && len(req.Resume) > 0 { // the chat's interrupted run may be another replica's (resume.go)
			if open, err = rt.storedInterrupt(ctx, req); err != nil {
				return nil, err
			}
		}
		if plan, err = rt.planResume(ctx, open, req, who); err != nil {
			return nil, err
		}
	} else if !busy && len(req.Resume) > 0 {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "this daemon has no approvals to resume; send the run without resume")
	}
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, rt.opts.RunTimeout,
		switchboard.Errorf(switchboard.CodeTimeout, "run took longer than %s", rt.opts.RunTimeout))
	if dl := req.Limits.Deadline; !dl.IsZero() {
		var cancelDeadline context.CancelFunc
		runCtx, cancelDeadline = context.WithDeadlineCause(runCtx, dl,
			switchboard.Errorf(switchboard.CodeTimeout, "the deadline %s passed", dl.UTC().Format(time.RFC3339)))
		outer := cancelTimeout
		cancelTimeout = func() { cancelDeadline(); outer() }
	}
	run := newRun(req.RunID, req.ThreadID, req.SessionID, req.Owner, req.Harness, rt.now(), rt.opts.MaxRunEvents)
	run.principal = who
	run.limits, run.idemScope = req.Limits, req.IdempotencyScope
	run.cancel = func(cause error) { cancel(cause) }

	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		cancelTimeout()
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "the agent runtime is shutting down")
	}
	if old, ok := rt.runs[req.RunID]; ok {
		// CopilotKit resumes an interrupt under the interrupted run's own
		// id: the new run takes the id over.
		if plan == nil || plan.intr == nil || plan.intr.runID != req.RunID || old.thread != req.ThreadID {
			rt.mu.Unlock()
			cancelTimeout()
			return nil, switchboard.Errorf(switchboard.CodeConflict, "run %s already exists", req.RunID)
		}
		rt.finished = slices.DeleteFunc(rt.finished, func(id string) bool { return id == req.RunID })
	}
	if chat.run != nil && chat.run.busy() {
		busy := chat.run.id
		rt.mu.Unlock()
		cancelTimeout()
		return nil, switchboard.Errorf(switchboard.CodeConflict,
			"chat session %s has run %s in progress; cancel it or send a follow-up", req.ThreadID, busy).
			WithDetails(map[string]any{"runId": busy})
	}
	prevRun, prevOld := chat.run, rt.runs[req.RunID]
	chat.run, chat.harness = run, req.Harness
	rt.runs[run.id] = run
	if plan != nil {
		chat.intr = nil
	}
	rt.mu.Unlock()

	undo := func() {
		rt.mu.Lock() // the chat is as it was
		chat.run, chat.intr = prevRun, intr
		if prevOld != nil {
			rt.runs[req.RunID] = prevOld
			rt.finished = append(rt.finished, req.RunID)
		} else {
			delete(rt.runs, req.RunID)
		}
		rt.mu.Unlock()
		cancelTimeout()
	}
	// The run is stored before anything is decided: a refusal (the id is
	// another replica's) changes nothing. A run taking over the id of the
	// interrupted run it resumes needs that run's final record (waiting)
	// stored first; the flusher may not have got to it yet.
	if prevOld != nil && rt.fl != nil {
		select {
		case <-prevOld.Done(): // it has emitted its last event: closing is imminent
		case <-ctx.Done():
		}
		rt.flush(prevOld)
	}
	// The store refuses a start while the chat's last run reads running
	// there; one that ended here may not have had its end stored yet.
	if prevRun != nil && prevRun != prevOld && rt.fl != nil {
		rt.flush(prevRun)
	}
	if err := rt.storeStart(ctx, run); err != nil {
		undo()
		return nil, err
	}
	if err := rt.decide(ctx, plan); err != nil {
		undo()
		rt.abandonStored(run, prevOld, err)
		return nil, err
	}
	rt.mu.Lock()
	if plan != nil && plan.intr != nil {
		if old := prevOld; old != nil || rt.runs[plan.intr.runID] != nil {
			if old == nil {
				old = rt.runs[plan.intr.runID]
			}
			old.mu.Lock()
			old.stop = nil // its calls belong to this run now
			old.mu.Unlock()
		}
	}
	stale := rt.switchTabLocked(req.SessionID, req.ThreadID)
	rt.wg.Add(1)
	rt.mu.Unlock()

	for _, r := range stale {
		r.dropQueued("session switched to chat " + req.ThreadID)
	}
	if rt.browser != nil && req.SessionID != "" {
		rt.browser.BindRun(run.id, req.SessionID)
	}
	go func() {
		defer rt.wg.Done()
		defer cancelTimeout()
		rt.loop(runCtx, run, req, plan)
		if rt.opts.Sessions != nil {
			rt.opts.Sessions.RunEnded(runCtx, run)
		}
		rt.retire(run)
	}()
	return run, nil
}

// Get returns a run that is in progress or recently finished.
func (rt *Runtime) Get(id string) (*Run, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if r, ok := rt.runs[id]; ok {
		return r, nil
	}
	return nil, switchboard.Errorf(switchboard.CodeNotFound, "no run %s (finished runs are kept for the last %d)", id, rt.opts.RetainRuns)
}

// List returns the newest runs, at most limit: with a run store, the
// stored runs of every replica (this process's own as it holds them, which
// is fresher than the store); without, the runs in progress and the
// recently finished ones this process holds. A user ("user:<id>") keeps
// the runs acting for that user; "" keeps all.
func (rt *Runtime) List(ctx context.Context, limit int, user string) ([]switchboard.RunInfo, error) {
	out := rt.listLocal()
	if user != "" {
		out = slices.DeleteFunc(out, func(in switchboard.RunInfo) bool { return in.User != user })
	}
	if rt.opts.Runs != nil {
		stored, err := rt.opts.Runs.RunList(ctx, switchboard.RunFilter{Limit: limit, User: user})
		if err != nil {
			return nil, err
		}
		seen := make(map[string]bool, len(out))
		for _, in := range out {
			seen[in.RunID] = true
		}
		for _, r := range stored {
			if !seen[r.RunID] {
				out = append(out, r.RunInfo)
			}
		}
		sortRuns(out)
	}
	return out[:min(limit, len(out))], nil
}

func sortRuns(out []switchboard.RunInfo) {
	slices.SortFunc(out, func(a, b switchboard.RunInfo) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.RunID, a.RunID)
	})
}

// listLocal is the runs this process holds, newest first.
func (rt *Runtime) listLocal() []switchboard.RunInfo {
	rt.mu.Lock()
	runs := make([]*Run, 0, len(rt.runs))
	for _, r := range rt.runs {
		runs = append(runs, r)
	}
	rt.mu.Unlock()
	out := make([]switchboard.RunInfo, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.Info())
	}
	sortRuns(out)
	return out
}

// retire moves a finished run into the retention window.
func (rt *Runtime) retire(r *Run) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.finished = append(rt.finished, r.id)
	for len(rt.finished) > rt.opts.RetainRuns {
		old := rt.finished[0]
		rt.finished = rt.finished[1:]
		delete(rt.runs, old)
	}
}

// Close cancels every run and waits for them to end.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	rt.closed = true
	var live []*Run
	for _, r := range rt.runs {
		live = append(live, r)
	}
	var waiting []*parked
	for _, c := range rt.chats {
		if c.intr != nil {
			waiting = append(waiting, c.intr.calls...)
		}
	}
	rt.mu.Unlock()
	stop := switchboard.Errorf(switchboard.CodeCancelled, "the daemon is shutting down")
	for _, r := range live {
		r.cancel(stop)
	}
	for _, p := range waiting {
		if p.cancel != nil {
			p.cancel(stop)
		}
	}
	rt.wg.Wait()
	rt.stopFlusher() // the runs' last events and final records
}

// newID returns a random 128-bit hex id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Models reports the models runs can use, for the operator (GET
// /api/v1/agent/models, the console's Assistant view): which are
// configured, or why none is and how to configure one. Keys never leave
// the daemon; only the variables they are read from are named.
func (rt *Runtime) Models(ctx context.Context) model.Report {
	return model.Describe(ctx, rt.models)
}
