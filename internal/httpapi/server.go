// Package httpapi is the HTTP transport of the daemon: the /api/v1 routes,
// authentication, the Origin and Host checks, CORS for allowed origins, the
// request-body limit and the JSON error envelope. It translates requests
// into calls on the registry, broker and sessions, and never decides
// anything itself; it is the one place where error codes become statuses.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/internal/strictjson"
	"github.com/switchboardhq/switchboard/internal/task"
	"github.com/switchboardhq/switchboard/internal/tracing"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// DefaultMaxBodyBytes bounds a request body unless a route says otherwise.
const DefaultMaxBodyBytes = 4 << 20

// Options configures a Server. Registry and Auth (or AdminToken) are
// required.
type Options struct {
	Registry *registry.Registry
	// Auth checks every bearer credential; the daemon builds it and hands
	// the same one to /mcp. Each route decides which kinds it accepts.
	Auth *authn.Authenticator
	// AdminToken, when Auth is nil, builds the authenticator from it,
	// Governance.Tokens and Sessions.
	AdminToken string
	// AllowOrigins lists browser origins (scheme://host[:port]) allowed to
	// call the API besides the daemon's own.
	AllowOrigins []string
	// AllowHosts, when non-empty, lists the Host header values (host names,
	// any port) accepted; set for loopback binds against DNS rebinding.
	AllowHosts   []string
	MaxBodyBytes int64
	// BodyReadTimeout bounds reading one request's body; BodyReadTimeout
	// (the constant) when 0.
	BodyReadTimeout time.Duration
	Logger          *slog.Logger
	// SessionTools returns the live browser tools a session advertises
	// (GET /tools?session=ID); nil until the session package is wired.
	SessionTools func(ctx context.Context, sessionID string) ([]switchboard.Tool, error)
	// Sessions serves the browser-session routes (sessions, their tools and
	// event streams, the browser action return path); nil leaves them out.
	Sessions *session.Manager
	// Broker serves the call path (POST /tools/{name}/call, GET
	// /invocations/{id}); nil leaves those routes out.
	Broker *broker.Broker
	// Agent serves the assistant's routes (runs, /agui, /agent/*); nil
	// leaves them out.
	Agent *agent.Runtime
	// ChatReattachGrace is how long an AI SDK chat's run goes on with no
	// client reading its stream; zero means DefaultChatReattachGrace.
	ChatReattachGrace time.Duration
	// ChatReading, if set, tells the replica holding run id that a client
	// reads its AI SDK stream here (a reattach at another replica,
	// chatstream.go); that replica's Server.ChatRead restarts the run's
	// grace period. The daemon sends it on the bus.
	ChatReading func(runID string)
	// Panels serves the tab's panel routes (instances, edits, actions); nil
	// leaves them out.
	Panels *panel.Service
	// Workspace serves the tabs' context reports and the digest; nil
	// leaves them out.
	Workspace *workspace.Workspace
	// Extra mounts more handlers (e.g. /mcp) behind the same Host and Origin
	// checks; the pattern is a net/http ServeMux pattern.
	Extra map[string]http.Handler
	// Metrics, if set, is served at GET /metrics for the admin token
	// (Prometheus scrapes with it as a bearer token).
	Metrics http.Handler
	// Governance serves agent tokens, approvals, the ledger and jobs, and
	// lets agent tokens in where an agent may act; nil leaves those routes
	// out and accepts only the admin token.
	Governance *Governance
	// OAuth serves the embedded authorization server's sign-in handshake
	// and grants (/api/v1/oauth/...); nil leaves them out.
	OAuth OAuthServer
	// Ready answers GET /readyz: nil when the daemon can serve calls (its
	// store answers). Nil Ready means ready whenever the process is up.
	Ready func(context.Context) error
	// Agents serves the agent-session routes (/agents); nil leaves them out.
	Agents *workspace.Agents
	// Tasks serves the delegated-task routes (/tasks); nil leaves them out.
	Tasks *task.Service
	// Declarations serves the panel and adapter declarations (/panels,
	// /adapters) and manifests with panels or adapters; nil leaves them
	// out.
	Declarations Declarations
}

// Server serves the HTTP API. Create it with New.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	reg  *registry.Registry
	auth *authn.Authenticator
	// csrf refuses state-changing browser requests that Fetch Metadata
	// (Sec-Fetch-Site) marks cross-site, which catches the ones that carry
	// no Origin header; the allowed origins are its trusted origins.
	csrf *http.CrossOriginProtection
	// streams tracks the readers of AI SDK chat streams (chatstream.go).
	streams chatStreams
}

// New builds a Server and its routes.
func New(opts Options) (*Server, error) {
	if opts.Registry == nil || (opts.Auth == nil && opts.AdminToken == "") {
		return nil, errors.New("httpapi: Registry and Auth (or AdminToken) are required")
	}
	if opts.Auth == nil {
		ao := authn.Options{AdminToken: opts.AdminToken}
		if opts.Governance != nil && opts.Governance.Tokens != nil {
			ao.Agents = opts.Governance.Tokens
		}
		if opts.Sessions != nil {
			ao.Sessions = opts.Sessions
		}
		var err error
		if opts.Auth, err = authn.New(ao); err != nil {
			return nil, err
		}
	}
	csrf := http.NewCrossOriginProtection()
	for _, o := range opts.AllowOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("httpapi: allowed origin %q must look like https://app.example.com", o)
		}
		// Browsers send the origin in lower case; the allow-list compares
		// without case, so the trusted set must too.
		if err := csrf.AddTrustedOrigin(strings.ToLower(o)); err != nil {
			return nil, fmt.Errorf("httpapi: allowed origin %q: %w", o, err)
		}
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ChatReattachGrace <= 0 {
		opts.ChatReattachGrace = DefaultChatReattachGrace
	}
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux(), reg: opts.Registry, auth: opts.Auth, csrf: csrf}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.routes()
	for pattern, h := range opts.Extra {
		s.mux.Handle(pattern, h)
	}
	return s, nil
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "protocolVersion": switchboard.ProtocolVersion})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.toolRoutes()
	s.callRoutes()
	s.sessionRoutes()
	s.tabRoutes()
	s.agentRoutes()
	s.panelRoutes()
	s.declaredRoutes()
	s.canvasRoutes()
	s.governanceRoutes()
	s.agentSessionRoutes()
	s.workspaceRoutes()
	s.taskRoutes()
	s.oauthRoutes()
	if s.opts.Metrics != nil {
		s.mux.HandleFunc("GET /metrics", s.admin(s.opts.Metrics.ServeHTTP))
	}
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
}

// ServeHTTP applies the checks every request passes, in order: recover,
// Host (DNS rebinding), Origin (and CORS preflight), Fetch Metadata
// (cross-site requests without an Origin), then the route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r, body := guardBody(w, r, s.opts.BodyReadTimeout)
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK, body: body}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "panic", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			s.writeError(sw, r, switchboard.Errorf(switchboard.CodeInternal, "internal error; see the daemon log"))
		}
		s.log.DebugContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path, "status", sw.status, "dur", time.Since(start))
	}()
	if !s.hostAllowed(r.Host) {
		s.log.WarnContext(r.Context(), "refused Host header", "host", r.Host, "remote", r.RemoteAddr)
		s.writeError(sw, r, switchboard.Errorf(switchboard.CodeOriginRejected, "Host %q is not served here (DNS rebinding protection); use 127.0.0.1 or localhost", r.Host))
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !s.originAllowed(origin, r) {
			s.log.WarnContext(r.Context(), "refused Origin", "origin", origin, "path", r.URL.Path)
			s.writeError(sw, r, switchboard.Errorf(switchboard.CodeOriginRejected, "requests from origin %s are not allowed; start the daemon with --allow-origin %s to allow it", origin, origin))
			return
		}
		h := sw.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version, Traceparent, Tracestate")
			h.Set("Access-Control-Max-Age", "600")
			sw.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if err := s.csrf.Check(r); err != nil {
		site := r.Header.Get("Sec-Fetch-Site")
		s.log.WarnContext(r.Context(), "refused cross-site request", "sec_fetch_site", site, "origin", r.Header.Get("Origin"), "method", r.Method, "path", r.URL.Path)
		s.writeError(sw, r, switchboard.Errorf(switchboard.CodeOriginRejected, "cross-site %s %s refused (Sec-Fetch-Site: %s): a page on another site cannot change state here; if it is your app, send its Origin header and start the daemon with --allow-origin <that origin>", r.Method, r.URL.Path, site))
		return
	}
	if r.Header.Get("Traceparent") != "" {
		// A caller's W3C trace context: the call's spans continue its trace.
		r = r.WithContext(tracing.Extract(r.Context(), r.Header))
	}
	s.mux.ServeHTTP(sw, r)
}

func (s *Server) hostAllowed(host string) bool {
	if len(s.opts.AllowHosts) == 0 {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	for _, a := range s.opts.AllowHosts {
		if strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// originAllowed accepts the daemon's own origin (same host as the request)
// and the configured allow-list.
func (s *Server) originAllowed(origin string, r *http.Request) bool {
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, o := range s.opts.AllowOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// admin wraps h so it runs only for the admin (user) bearer token.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token; the admin token is in <data>/admin.token", authn.Admin)
		if err != nil {
			s.writeError(w, r, notAdmin(r, c, err))
			return
		}
		h(w, r.WithContext(switchboard.WithPrincipal(r.Context(), c.Principal)))
	}
}

// credential checks the request's bearer token with the authenticator and
// admits the kinds the route accepts; missing is the route's hint for a
// request without a token. A credential of another kind is UNAUTHORIZED
// (the credential is returned, so a route can say more).
func (s *Server) credential(r *http.Request, missing string, accept ...authn.Kind) (authn.Credential, error) {
	tok, ok := bearer(r)
	if !ok {
		return authn.Credential{}, switchboard.Errorf(switchboard.CodeUnauthorized, "%s", missing)
	}
	c, err := s.auth.Token(r.Context(), tok)
	if !slices.Contains(accept, c.Kind) {
		return c, switchboard.Errorf(switchboard.CodeUnauthorized, "the bearer token is not valid for this daemon")
	}
	return c, err
}

// validSession reports whether c is a tab's valid session token: on a
// route that does not take one it is FORBIDDEN, not UNAUTHORIZED (the
// token is good, the route is not the tab's).
func validSession(c authn.Credential) bool { return c.Kind == authn.Session && c.SessionID() != "" }

func bearer(r *http.Request) (string, bool) { return authn.Bearer(r) }

// decode reads a JSON body of at most limit bytes (0: the server default)
// into v strictly (internal/strictjson): exact-case member names, no
// unknown or duplicate members, valid UTF-8, numbers that fit, one value.
// inputAt, when given, points at the member that holds a tool input, whose
// faults are the input's (SCHEMA_VIOLATION, as the broker's validation).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, limit int64, inputAt ...string) error {
	if limit <= 0 {
		limit = s.opts.MaxBodyBytes
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "Content-Type must be application/json, not %q", ct)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return switchboard.Errorf(switchboard.CodePayloadTooLarge, "request body is larger than %d bytes", limit)
		}
		return switchboard.Errorf(switchboard.CodeInvalidInput, "read request body: %v", err)
	}
	return strictjson.Decode(body, v, strings.Join(inputAt, ""))
}

// statusWriter remembers the status for the access log and passes Flush
// through so SSE works.
type statusWriter struct {
	http.ResponseWriter
	status  int
	body    *bodyRead // nil without a body
	started bool
}

// WriteHeader starts the response. The request's body is done with then:
// its read deadline ends (so a stream's reads for a closed connection are
// not cut), and an error answered before the body was read to its end
// closes the connection, so net/http does not first wait for the rest of
// a body that may never come (an unauthenticated POST announcing 100 kB
// and sending one byte gets its 401 at once).
func (w *statusWriter) WriteHeader(code int) {
	if !w.started {
		w.started = true
		if w.body != nil {
			if code >= 400 && !w.body.eof.Load() {
				w.Header().Set("Connection", "close")
			}
			w.body.done()
		}
	}
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// readyz is the readiness probe: 200 {"status":"ready"} when the store
// answers within two seconds, else 503 UNAVAILABLE with why, so a load
// balancer stops sending calls to a replica that cannot record them.
// /healthz stays a liveness probe (the process serves HTTP).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeUnavailable, "not ready: the store does not answer: %v", err))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
