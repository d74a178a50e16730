package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/oauth"
)

// principalKey carries the caller in the SDK's TokenInfo, which the SDK
// hands to every request of a session and uses to refuse a session id
// presented by anyone but the principal that opened it.
const principalKey = "switchboard/principal"

// subjectKey carries an OAuth caller's access token in the request's
// TokenInfo, for bindings that exchange it (httpbind.WithSubjectToken).
const subjectKey = "switchboard/subject-token"

type subjectCtx struct{}

// Handler serves MCP's streamable HTTP transport (mount it at /mcp). Every
// request is authenticated with Options.Auth. Mount it behind
// httpapi.Server (Options.Extra), which refuses foreign Host and Origin
// headers before routing: the SDK's handler checks neither Origin nor, for
// non-loopback connections, Host. Its own DNS-rebinding check (loopback
// connections with a non-loopback Host) stays on as a second line.
func (s *Server) Handler() http.Handler { return s.http }

func (s *Server) newHTTPHandler() http.Handler {
	store := mcp.NewMemoryEventStore(nil)
	store.SetMaxBytes(eventStoreBytes)
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdk }, &mcp.StreamableHTTPOptions{
		Logger: s.log,
		// Resumable streams: a client whose stream drops mid-call picks the
		// result up with Last-Event-ID instead of calling again.
		EventStore:     store,
		SessionTimeout: s.opts.SessionTimeout,
	})
	// The 2026-07-28 revision has no sessions: every request carries its
	// protocol version and client capabilities, any replica can answer it,
	// and nothing of it is kept once it is answered (approvals cross
	// rounds in a signed requestState, mrtr.go).
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdk }, &mcp.StreamableHTTPOptions{
		Logger:    s.log,
		Stateless: true,
		// The POST is the request's whole life: a client that gives up
		// (or drops the connection) cancels the call, as
		// notifications/cancelled does in a session.
		PropagateRequestCancellation: true,
	})
	tokenInfo := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		p, _ := switchboard.PrincipalFrom(ctx) // set just before, by ServeHTTP below
		// The SDK binds a session to UserID: an agent for one user never
		// resumes the session of the same client acting for another.
		extra := map[string]any{principalKey: p}
		if tok, ok := ctx.Value(subjectCtx{}).(string); ok {
			extra[subjectKey] = tok // this request's own token: a session's later requests bring theirs
		}
		return &auth.TokenInfo{UserID: p.String() + " for " + p.ActsFor(), Extra: extra}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	withToken, withTokenStateless := tokenInfo(stream), tokenInfo(stateless)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := r.URL.Query().Get("mode"); m != "" {
			if m != string(ModeFull) && m != string(ModeDeferred) {
				writeHTTPError(w, switchboard.Errorf(switchboard.CodeInvalidInput, "mode=%s: use full or deferred", m))
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), modeKey{}, Mode(m)))
		}
		if s.opts.Auth == nil {
			writeHTTPError(w, switchboard.Errorf(switchboard.CodeUnauthorized, "this MCP endpoint has no authenticator configured"))
			return
		}
		c, err := s.opts.Auth.Authenticate(r)
		if err == nil && c.Kind != authn.Admin && c.Kind != authn.Agent && (c.Kind != authn.OAuth || s.opts.Resource == nil) {
			err = switchboard.Errorf(switchboard.CodeUnauthorized, "the bearer token is not valid for this daemon")
		}
		if err != nil {
			s.refuse(w, r, err, "")
			return
		}
		if c.Kind == authn.OAuth && !slices.Contains(c.Scopes, s.opts.Resource.RequiredScope()) { // Resource is set: checked above
			need := s.opts.Resource.RequiredScope()
			s.refuse(w, r, switchboard.Errorf(switchboard.CodeForbidden,
				"the access token lacks the scope %q that /mcp needs; authorize again asking for it", need), oauth.ErrInsufficientScope)
			return
		}
		body, ok := strictBody(w, r)
		if !ok {
			return
		}
		markTask(r, body)
		r = r.WithContext(switchboard.WithPrincipal(r.Context(), c.Principal))
		if c.Kind == authn.OAuth { // the token Authenticate just accepted
			tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			r = r.WithContext(context.WithValue(r.Context(), subjectCtx{}, strings.TrimSpace(tok)))
		}
		if statelessRequest(r) {
			withTokenStateless.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			s.opening(w, r, c.Principal, withToken) // initialize: a new session
			return
		}
		withToken.ServeHTTP(w, r)
	})
}

// MCP revisions: the first without sessions, and the latest with them.
const (
	statelessRevision = "2026-07-28"
	sessionRevision   = "2025-11-25"
)

// statelessRequest reports whether r speaks the sessionless revision: its
// Mcp-Protocol-Version header names 2026-07-28 or later (a client sends
// it with server/discover and every request after) and it holds no
// session. Everything else — initialize, and every request of a
// 2025-11-25 session — goes to the stateful handler, whose sessions live
// in this process.
func statelessRequest(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v >= statelessRevision && r.Header.Get("Mcp-Session-Id") == ""
}

// principal returns the caller of an MCP request: from the request's token
// info, else from the context of the request that opened the session (the
// SDK keeps its values), else none.
func principal(ctx context.Context, extra *mcp.RequestExtra) (switchboard.Principal, bool) {
	if extra != nil && extra.TokenInfo != nil {
		if p, ok := extra.TokenInfo.Extra[principalKey].(switchboard.Principal); ok {
			p.Harness = Harness
			return p, true
		}
	}
	p, ok := switchboard.PrincipalFrom(ctx)
	p.Harness = Harness
	return p, ok
}

// Harness is the runtime binding of MCP clients: a tool declared with
// this harness (Tool.Harness) is offered only over MCP.
const Harness = "mcp"

// refuse answers a request whose credential /mcp does not take. With a
// Resource, the challenge follows the MCP authorization spec: every 401
// names the resource metadata (how a client finds the authorization
// server) and, when a token was presented, error="invalid_token"; a 403
// for a missing scope says error="insufficient_scope" and the scope to
// ask for. code is the OAuth error when the caller knows it.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error, code string) {
	if res := s.opts.Resource; res != nil {
		e := switchboard.AsError(err)
		if code == "" && e.Code == switchboard.CodeUnauthorized {
			if _, presented := authn.Bearer(r); presented {
				code = oauth.ErrInvalidToken
			}
		}
		if code != "" || e.Code == switchboard.CodeUnauthorized {
			w.Header().Set("WWW-Authenticate", res.Challenge(code, e.Message))
		}
	}
	writeHTTPError(w, err)
}

// writeHTTPError answers a request refused before MCP with the daemon's
// JSON error envelope.
func writeHTTPError(w http.ResponseWriter, err error) {
	e := switchboard.AsError(err)
	status := http.StatusInternalServerError
	switch e.Code {
	case switchboard.CodeInvalidInput:
		status = http.StatusBadRequest
	case switchboard.CodeUnauthorized:
		status = http.StatusUnauthorized
		if w.Header().Get("WWW-Authenticate") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
		}
	case switchboard.CodeForbidden, switchboard.CodeOriginRejected:
		status = http.StatusForbidden
	case switchboard.CodeRateLimited:
		status = http.StatusTooManyRequests
		if d, _ := e.Details.(map[string]any); d != nil {
			if ms, ok := d["retryAfterMs"].(int64); ok {
				w.Header().Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
			}
		}
	case switchboard.CodeUnavailable:
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(switchboard.ErrorEnvelope{Error: e})
}

// ProtocolVersions lists the MCP revisions /mcp negotiates, newest first:
// the go-sdk's set, which this package does not narrow.
func ProtocolVersions() []string { return mcp.SupportedProtocolVersions() }
