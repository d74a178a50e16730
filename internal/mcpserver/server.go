package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpbind"
	"github.com/switchboardhq/switchboard/internal/mcpext"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/seats"
	"github.com/switchboardhq/switchboard/internal/task"
)

// Mode is how tools/list presents the catalog.
type Mode string

const (
	// ModeAuto lists in full while the caller's view has at most Threshold
	// tools, deferred beyond.
	ModeAuto Mode = ""
	// ModeFull lists every tool the caller may see, with full schemas.
	ModeFull Mode = "full"
	// ModeDeferred lists the meta tools (search, describe, call) and the
	// pinned tools only.
	ModeDeferred Mode = "deferred"
)

// Defaults for Options.
const (
	DefaultThreshold = 30
	// DefaultProgressInterval spaces the "still waiting" progress
	// notifications of a call that reports nothing itself.
	DefaultProgressInterval = 5 * time.Second
	// DefaultSessionTimeout closes MCP sessions idle this long.
	DefaultSessionTimeout = 30 * time.Minute
	// MaxDescriptionBytes caps a listed description: Claude Code truncates
	// descriptions and instructions at 2 KB, and a cut we make can say where
	// the rest is.
	MaxDescriptionBytes = 2000
	// eventStoreBytes bounds what streams keep for resumption.
	eventStoreBytes = 16 << 20
)

// Live is the seam to the live browser tabs. *session.Manager implements it
// once it can list and watch advertised tools; until then browser tools are
// callable over MCP (the broker resolves them) but not listed.
type Live interface {
	// LiveTools returns every browser tool advertised by a connected tab,
	// each with Origin.SessionID naming its tab.
	LiveTools() []switchboard.Tool
	// SubscribeTools signals ch, without blocking, whenever a tab's
	// advertised tools change or a tab connects, goes or closes.
	SubscribeTools(ch chan<- struct{}) (cancel func())
}

// Authenticator checks a request's bearer credential; *authn.Authenticator
// is the daemon's.
type Authenticator interface {
	Authenticate(r *http.Request) (authn.Credential, error)
}

// Options configures a Server. A nil *Options means defaults; an HTTP
// handler additionally needs Auth.
type Options struct {
	// Mode and Threshold choose the listing (see Mode).
	Mode      Mode
	Threshold int
	// Live lists live browser tools; nil lists none.
	Live Live
	// Auth checks the bearer credential of every request to the handler
	// (the daemon's *authn.Authenticator, shared with the HTTP API). /mcp
	// takes the admin token and agent tokens; a browser session token is
	// refused.
	Auth Authenticator
	// Resource makes /mcp an OAuth protected resource (package oauth):
	// its 401 and 403 answers carry the MCP authorization challenges, and
	// OAuth access tokens (authn.OAuth) holding Resource.RequiredScope are
	// taken beside the admin token and agent tokens. nil takes no OAuth
	// token and answers 401 with a bare realm.
	Resource *oauth.Resource
	// ProgressInterval spaces "still waiting" progress notifications.
	ProgressInterval time.Duration
	// SessionTimeout closes idle MCP sessions.
	SessionTimeout time.Duration
	// Sessions caps the MCP sessions of one principal (RELIABILITY row
	// 28): how many it holds at once and how fast it opens them; past
	// either, initialize is RATE_LIMITED (429). Zero fields mean
	// DefaultSessionLimits' field; a negative Max or PerSecond, no cap.
	Sessions SessionLimits
	// Aliases publishes catalog tools under fixed MCP names (catalog name →
	// MCP name, letters, digits and "_") instead of their mapped names; an
	// aliased tool answers only to its alias. For clients that call names
	// they did not choose, such as the conformance suite's fixtures.
	Aliases map[string]string
	// Digest serves the caller's workspace digest as the resource
	// switchboard://workspace/digest, with resources/subscribe updates;
	// nil serves no resource.
	Digest Digest
	// Extension adds to the SDK server what switchboard does not serve
	// itself (resources, prompts, completions, logging). Its type is
	// internal: only switchboard's conformance harness
	// (internal/mcpconformance) sets it; the daemon and embedders leave it
	// nil.
	Extension *mcpext.Extension
	Version   string
	Logger    *slog.Logger
	// Agents records each agent token's MCP session as an external agent
	// session (the daemon's *workspace.Agents); nil records none.
	Agents AgentSessions
	// Approvals lets an agent's call that waits for approval ask the human
	// behind its MCP client through elicitation (the daemon's
	// *approval.Service); nil asks no one over MCP.
	Approvals Approvals
	// Elicitation chooses which elicitation answers count (ElicitURL by
	// default: a link to the console only; ElicitForm: the client's own
	// form too; ElicitOff: none). docs/governance.md has the reasoning.
	Elicitation Elicitation
	// StateKey signs the requestState of 2026-07-28 approval rounds
	// (mrtr.go). Every replica behind one load balancer needs the same key
	// — the daemon derives it from the admin token (StateKey) — so a round
	// issued by one verifies on another. Empty: a random key, good for one
	// process only.
	StateKey []byte
	// InputWait is how long a 2026-07-28 retry waits for a pending approval
	// before it answers input_required again (DefaultInputWait).
	InputWait time.Duration
	// Panels serves the panels as MCP Apps views (apps.go): the extension
	// is advertised, each open instance the caller may see is a ui://
	// resource, and the panel tools link to the view. nil serves none.
	Panels Panels
	// Jobs lets calls of job tools run as MCP tasks that follow their job
	// (tasks.go); nil: a job tool's task ends when its job has started.
	// The daemon passes its *job.Service.
	Jobs Jobs
	// Tasks admits the calls an agent declares for a delegated task
	// assigned to it (_meta "switchboard/task", delegated.go); nil: such
	// a call is NOT_FOUND. The daemon passes its *task.Service.
	Tasks *task.Service
	// TaskTTL is how long a task stays readable after it was created: the
	// store's retention of invocation records, which the daemon passes.
	// Zero or less: forever (ttl null).
	TaskTTL time.Duration
	// ConsoleURL is the absolute URL of the console's approvals view
	// (http://127.0.0.1:8080/#approvals) that URL-mode elicitation links
	// to; empty disables URL mode.
	ConsoleURL string
}

// AgentSessions is the agent-session registry as MCP uses it: an agent's
// MCP session is one external agent session, seen on every request and
// done when the MCP session closes; each call is bound to it (Work), so
// interrupting the session cancels the call.
type AgentSessions interface {
	External(ctx context.Context, p switchboard.Principal, transport, conn string) string
	EndExternal(ctx context.Context, p switchboard.Principal, transport, conn, reason string)
	Work(ctx context.Context, id string) (context.Context, func())
}

// Server is the MCP server of one daemon. Safe for concurrent use.
type Server struct {
	reg   *registry.Registry
	br    *broker.Broker
	opts  Options
	log   *slog.Logger
	sdk   *mcp.Server
	names names
	http  http.Handler
	live  *liveIndex

	runMu sync.Mutex
	runs  map[*mcp.ServerSession]string
	// running holds the cancel of each task call in flight here
	// (tasks.go), by invocation id.
	taskMu  sync.Mutex
	running map[string]context.CancelCauseFunc
	// watched holds the MCP sessions whose close ends their agent session.
	watched sync.Map
	// seats counts each principal's MCP sessions (limits.go);
	// seatReleased, set only by tests, hears each seat given back.
	seats        *seats.Seats
	seatReleased chan<- string

	// life ends when the server closes: it cancels the calls still running
	// for MCP clients (a call waiting for approval would otherwise hold
	// Close, which waits for every session's handlers). Calls detached
	// from their 2026-07-28 requests are the broker's (mrtr.go).
	life    context.Context
	endLife context.CancelCauseFunc

	stop       chan struct{}
	done       chan struct{}
	digestDone chan struct{}
	once       sync.Once
}

// New returns a Server over the registry and broker.
func New(ctx context.Context, reg *registry.Registry, br *broker.Broker, opts *Options) (*Server, error) {
	if reg == nil || br == nil {
		return nil, errors.New("mcpserver: registry and broker are required")
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	switch o.Mode {
	case ModeAuto, ModeFull, ModeDeferred:
	default:
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "MCP listing mode %q: use full, deferred, or leave it empty for auto", o.Mode)
	}
	switch o.Elicitation {
	case ElicitURL, ElicitOff, ElicitForm:
	default:
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "MCP elicitation %q: use off, url or form", o.Elicitation)
	}
	if o.ConsoleURL != "" {
		if u, err := url.Parse(o.ConsoleURL); err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "MCP console URL %q: give an absolute http(s) URL such as http://127.0.0.1:8080/#approvals", o.ConsoleURL)
		}
	}
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	o.Sessions = o.Sessions.Or(DefaultSessionLimits)
	if o.InputWait <= 0 {
		o.InputWait = DefaultInputWait
	}
	if len(o.StateKey) == 0 {
		o.StateKey = randomKey()
	}
	if o.Version == "" {
		o.Version = switchboard.ProtocolVersion
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		reg: reg, br: br, opts: o, log: o.Logger,
		seats:      seats.New("MCP sessions", o.Sessions, nil),
		live:       newLiveIndex(o.Live),
		runs:       map[*mcp.ServerSession]string{},
		running:    map[string]context.CancelCauseFunc{},
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		digestDone: make(chan struct{}),
	}
	s.life, s.endLife = context.WithCancelCause(context.Background())
	sopts := &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(o.Logger),
		// tools/list is answered per caller, so the SDK's own tool table
		// stays empty and the capability is declared outright.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	}
	for catalog, alias := range o.Aliases {
		if !validMCPName(alias) || strings.ContainsRune(alias, mcpNameSep) || alias == toolSearch || alias == toolDescribe || alias == toolCall || alias == toolPanelView {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "MCP alias %q of %s: use letters, digits and \"_\", and no meta tool's name", alias, catalog)
		}
		s.names.alias(catalog, alias)
	}
	if o.Digest != nil {
		digestOptions(sopts)
	}
	if o.Panels != nil {
		appsOptions(sopts)
	}
	ext := mcpext.Extension{}
	if o.Extension != nil {
		ext = *o.Extension
	}
	if ext.Options != nil {
		ext.Options(sopts)
	}
	s.sdk = mcp.NewServer(&mcp.Implementation{Name: "switchboard", Title: "switchboard", Version: o.Version}, sopts)
	s.sdk.AddReceivingMiddleware(s.middleware)
	addTaskMethods(s.sdk)
	if ext.Server != nil {
		ext.Server(s.sdk)
	}
	if o.Panels != nil {
		s.addPanelViews()
	}
	s.http = s.newHTTPHandler()
	go s.watch()
	if o.Digest != nil {
		s.addDigest()
		go s.watchDigest()
	} else {
		close(s.digestDone)
	}
	return s, nil
}

// Close cancels the tool calls still running for MCP clients (a call
// waiting for approval ends CANCELLED), ends every MCP session (so
// long-lived streams let an HTTP shutdown finish) and stops watching the
// catalog. Idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.endLife(errStopping)
		close(s.stop)
		<-s.done
		<-s.digestDone
		for ss := range s.sdk.Sessions() {
			_ = ss.Close()
		}
	})
	return nil
}

// middleware answers tools/list and tools/call from the catalog, and the
// task methods from the broker's records; every other method is the
// SDK's. The caller's principal goes into the context, where the registry
// reads it: what a caller may see and call is decided there
// (registry.Visible), not here.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := principal(ctx, req.GetExtra()); ok {
			ctx = switchboard.WithPrincipal(ctx, p)
			ctx = s.acting(ctx, p, req.GetSession())
		}
		if x := req.GetExtra(); x != nil && x.TokenInfo != nil {
			if tok, ok := x.TokenInfo.Extra[subjectKey].(string); ok && tok != "" {
				ctx = httpbind.WithSubjectToken(ctx, tok)
			}
		}
		switch method {
		case methodTasksGet, methodTasksList, methodTasksResult, methodTasksCancel, methodTasksUpdate:
			// Before declaresApps, which reads the params: a task method's
			// may be absent (a nil *taskParams).
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(s.life, func() { cancel(errStopping) })() // tasks/result waits
			return s.tasks(ctx, s.callerOf(ctx, req.GetExtra()), method, req)
		}
		if s.opts.Panels != nil && declaresApps(req) {
			ctx = context.WithValue(ctx, appsKey{}, true)
		}
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			return withTasksCapability(res), err
		case "server/discover":
			res, err := next(ctx, method, req)
			return withTasksExtension(res), err
		}
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			return s.listTools(ctx, r)
		case *mcp.ListResourcesRequest:
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListResourcesResult); ok && err == nil && s.opts.Panels != nil {
				if err := s.listPanelResources(ctx, lr); err != nil {
					return nil, rpcError(err)
				}
			}
			return res, err
		case *mcp.CallToolRequest:
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(s.life, func() { cancel(errStopping) })()
			return s.callTool(ctx, r)
		}
		return next(ctx, method, req)
	}
}

// watch turns catalog and live-tab changes into list_changed notifications.
func (s *Server) watch() {
	defer close(s.done)
	regCh := make(chan registry.Change, 1)
	cancelReg := s.reg.Subscribe(regCh)
	defer cancelReg()
	var liveCh chan struct{}
	if s.opts.Live != nil {
		liveCh = make(chan struct{}, 1)
		defer s.opts.Live.SubscribeTools(liveCh)()
	}
	for {
		select {
		case <-s.stop:
			return
		case <-regCh:
		case <-liveCh:
			s.live.invalidate()
		}
		s.toolsChanged()
	}
}

// changedSentinel is a placeholder tool that exists inside the SDK's tool
// table for an instant.
const changedSentinel = "switchboard_list_changed"

var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

// toolsChanged makes the SDK send notifications/tools/list_changed to every
// session. The SDK sends it only when its own tool table changes, and ours
// stays empty (tools/list is answered per caller), so a placeholder is added
// and removed at once: both fall in the SDK's 10 ms debounce window, which
// sends one notification, to every session and on every protocol version
// the SDK speaks. The placeholder is never listed or callable, because the
// middleware answers tools/list and tools/call.
func (s *Server) toolsChanged() { notifyToolsChanged(s.sdk) }

func notifyToolsChanged(srv *mcp.Server) {
	srv.AddTool(&mcp.Tool{Name: changedSentinel, InputSchema: emptyObjectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("not a tool")
		})
	srv.RemoveTools(changedSentinel)
}

// runOf returns the run of an MCP session: DESIGN.md makes an MCP client's
// session one run, so the tab it chose with sessionId stays its default
// (the session manager binds a run to the tab named explicitly in it).
func (s *Server) runOf(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if id, ok := s.runs[ss]; ok {
		return id
	}
	id := broker.NewID()
	s.runs[ss] = id
	go func() {
		_ = ss.Wait()
		s.runMu.Lock()
		delete(s.runs, ss)
		s.runMu.Unlock()
	}()
	return id
}

// instructions are sent at initialize. They hold for both listing modes,
// because the mode can change while a client is connected.
const instructions = `This server is switchboard: it exposes the tools of a web app (its API) and of the user's open browser tab (view actions such as navigate, scroll, select).

Finding tools: when the catalog is large, tools/list shows only switchboard_search, switchboard_describe, switchboard_call and a few pinned tools. Search with a few words about the task (switchboard_search {"query": "export deck as pdf"}); results give each tool's name and a one-line summary, best first, with nextCursor for more. Then switchboard_describe {"name": ...} returns the full description and input schema, and switchboard_call {"name": ..., "arguments": {...}} runs it. Tools that are listed can also be called directly.

Names: a tool named "tasks.create" in the app's catalog is "tasks-create" here; both forms are accepted.

Browser tools act in the user's open tab. With one tab open they go there; with several, pass "sessionId" (the candidates are named in the error), and later calls in this session stay on that tab.

Failures come back as tool errors whose text starts with a code: TOOL_UNAVAILABLE (no open tab offers that browser tool), SESSION_GONE (the tab closed), TIMEOUT, CANCELLED, USER_DENIED (a person declined), TOOL_NOT_FOUND (no tool of that name; search for the right one), FORBIDDEN (not permitted for this caller), SCHEMA_VIOLATION or INVALID_INPUT (fix the arguments and retry), RATE_LIMITED (retry later).`
