// Package httpapi is the HTTP transport of the daemon: the /api/v1 routes,
// authentication, the Origin and Host checks, CORS for allowed origins, the
// request-body limit and the JSON error envelope. It translates requests
// into calls on the registry, broker and sessions, and never decides
// anything itself; it is the one place where error codes become statuses.
package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agent"
	"github.com/switchboardhq/switchboard/broker"
	"github.com/switchboardhq/switchboard/panel"
	"github.com/switchboardhq/switchboard/registry"
	"github.com/switchboardhq/switchboard/session"
)

// DefaultMaxBodyBytes bounds a request body unless a route says otherwise.
const DefaultMaxBodyBytes = 4 << 20

// Options configures a Server. Registry and AdminToken are required.
type Options struct {
	Registry   *registry.Registry
	AdminToken string
	// AllowOrigins lists browser origins (scheme://host[:port]) allowed to
	// call the API besides the daemon's own.
	AllowOrigins []string
	// AllowHosts, when non-empty, lists the Host header values (host names,
	// any port) accepted; set for loopback binds against DNS rebinding.
	AllowHosts   []string
	MaxBodyBytes int64
	Logger       *slog.Logger
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
	// Panels serves the tab's panel routes (instances, edits, actions); nil
	// leaves them out.
	Panels *panel.Service
	// Extra mounts more handlers (e.g. /mcp) behind the same Host and Origin
	// checks; the pattern is a net/http ServeMux pattern.
	Extra map[string]http.Handler
	// Governance serves agent tokens, approvals, the ledger and jobs, and
	// lets agent tokens in where an agent may act; nil leaves those routes
	// out and accepts only the admin token.
	Governance *Governance
}

// Server serves the HTTP API. Create it with New.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	reg  *registry.Registry
}

// New builds a Server and its routes.
func New(opts Options) (*Server, error) {
	if opts.Registry == nil || opts.AdminToken == "" {
		return nil, errors.New("httpapi: Registry and AdminToken are required")
	}
	for _, o := range opts.AllowOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("httpapi: allowed origin %q must look like https://app.example.com", o)
		}
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux(), reg: opts.Registry}
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
	s.toolRoutes()
	s.callRoutes()
	s.sessionRoutes()
	s.agentRoutes()
	s.panelRoutes()
	s.governanceRoutes()
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
}

// ServeHTTP applies the checks every request passes, in order: recover,
// Host (DNS rebinding), Origin (and CORS preflight), then the route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
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
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version")
			h.Set("Access-Control-Max-Age", "600")
			sw.WriteHeader(http.StatusNoContent)
			return
		}
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
		tok, ok := bearer(r)
		if !ok {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeUnauthorized, "missing Authorization: Bearer token; the admin token is in <data>/admin.token"))
			return
		}
		if subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.AdminToken)) != 1 {
			err := s.agentRefused(r, tok) // a valid agent token is FORBIDDEN here, not UNAUTHORIZED
			if err == nil {
				err = switchboard.Errorf(switchboard.CodeUnauthorized, "the bearer token is not valid for this daemon")
			}
			s.writeError(w, r, err)
			return
		}
		ctx := switchboard.WithPrincipal(r.Context(), switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
		h(w, r.WithContext(ctx))
	}
}

func bearer(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

// decode reads a JSON body of at most limit bytes (0: the server default)
// into v, rejecting unknown fields and trailing data.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	if limit <= 0 {
		limit = s.opts.MaxBodyBytes
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "Content-Type must be application/json, not %q", ct)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, limit)
	}
	if _, err := dec.Token(); err != io.EOF {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "request body has data after the JSON value")
	}
	return nil
}

func decodeError(err error, limit int64) error {
	var (
		maxErr    *http.MaxBytesError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxErr):
		return switchboard.Errorf(switchboard.CodePayloadTooLarge, "request body is larger than %d bytes", limit)
	case errors.Is(err, io.EOF):
		return switchboard.Errorf(switchboard.CodeInvalidInput, "request body is empty; send a JSON document")
	case errors.As(err, &syntaxErr):
		return switchboard.Errorf(switchboard.CodeInvalidInput, "request body is not valid JSON at byte %d: %v", syntaxErr.Offset, err)
	case errors.As(err, &typeErr):
		return switchboard.Errorf(switchboard.CodeInvalidInput, "field %q must be %s, not JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return switchboard.Errorf(switchboard.CodeInvalidInput, "request body has an %s; check its spelling", strings.TrimPrefix(err.Error(), "json: "))
	}
	return switchboard.Errorf(switchboard.CodeInvalidInput, "request body: %v", err)
}

// statusWriter remembers the status for the access log and passes Flush
// through so SSE works.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
