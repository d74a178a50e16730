package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// StdioOptions configures ServeStdio.
type StdioOptions struct {
	// URL is the daemon's MCP endpoint, e.g. http://127.0.0.1:7766/mcp.
	URL string
	// Token is the bearer token sent to the daemon.
	Token      string
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// ServeStdio serves MCP over r and w (newline-delimited JSON-RPC, the stdio
// transport) by relaying to the running daemon's /mcp: `switchboard mcp`.
//
// A relay rather than a second server over the data root, so a stdio
// client sees what an HTTP client sees: the live browser tabs (their
// sessions exist only in the daemon's memory), one writer to the store,
// one broker deciding every call (concurrency limits, approvals), and the
// same list_changed notifications. tools/list and tools/call go to the
// daemon with their _meta (progress tokens, idempotency keys); progress,
// list_changed and the daemon's approval questions (elicitation) come back; cancelling a call on stdio cancels it in the
// daemon. Initialize and ping are answered locally.
//
// It fails with UNAVAILABLE at once when no daemon answers, and returns nil
// when the stdio client goes away or ctx ends.
func ServeStdio(ctx context.Context, r io.Reader, w io.Writer, opts StdioOptions) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &proxy{opts: opts}
	if err := p.connect(ctx); err != nil {
		return err
	}
	defer p.close()
	init := p.current().InitializeResult()
	impl := &mcp.Implementation{Name: "switchboard", Title: "switchboard (stdio relay)"}
	if init.ServerInfo != nil {
		impl.Version = init.ServerInfo.Version
	}
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: init.Instructions,
		Logger:       sdkLogger(opts.Logger),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	srv.AddReceivingMiddleware(p.middleware)
	p.srv.Store(srv)
	err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopCloser{w}})
	if clientGone(err) || ctx.Err() != nil {
		return nil // the stdio client went away or we were told to stop
	}
	return err
}

// clientGone reports whether err only says the stdio client hung up.
func clientGone(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, syscall.EPIPE)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type proxy struct {
	opts StdioOptions
	// srv is set once the upstream session is open, so the daemon's
	// list_changed may arrive (on the client's goroutine) before it.
	srv atomic.Pointer[mcp.Server]

	mu sync.Mutex
	cs *mcp.ClientSession
	// stdio is the stdio client's session, for relaying progress.
	stdio atomic.Pointer[mcp.ServerSession]
}

// connect opens a session with the daemon.
func (p *proxy) connect(ctx context.Context) error {
	hc := p.opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	authed := *hc
	authed.Transport = bearerTransport{token: p.opts.Token, next: hc.Transport}
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-stdio", Version: switchboard.ProtocolVersion}, &mcp.ClientOptions{
		// The relay connects before the stdio client says what it supports,
		// so it declares both modes and forwards each question; the SDK
		// refuses one the stdio client did not declare, and the daemon then
		// leaves the approval to the console, CLI and tab.
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			ss := p.stdio.Load()
			if ss == nil {
				return nil, errors.New("no stdio client to ask")
			}
			return ss.Elicit(ctx, req.Params)
		},
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			if ss := p.stdio.Load(); ss != nil {
				_ = ss.NotifyElicitationComplete(ctx, req.Params)
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			if srv := p.srv.Load(); srv != nil {
				notifyToolsChanged(srv)
			}
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if ss := p.stdio.Load(); ss != nil {
				_ = ss.NotifyProgress(ctx, req.Params)
			}
		},
	})
	// 2025-11-25: the stdio client on the other side holds a session, and
	// the relay keeps one upstream too, so the daemon's questions
	// (elicitation) and notifications reach it as they are sent.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.opts.URL, HTTPClient: &authed},
		&mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		return switchboard.Errorf(switchboard.CodeUnavailable,
			"cannot reach the daemon's MCP endpoint %s (%v); start it with `switchboard serve`, or point --addr and --token at it", p.opts.URL, err)
	}
	p.mu.Lock()
	p.cs = cs
	p.mu.Unlock()
	return nil
}

func (p *proxy) current() *mcp.ClientSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cs
}

func (p *proxy) close() {
	if cs := p.current(); cs != nil {
		_ = cs.Close()
	}
}

// session returns the daemon session, reconnecting once if the previous
// one ended (the daemon restarted).
func (p *proxy) session(ctx context.Context, failed *mcp.ClientSession) (*mcp.ClientSession, error) {
	p.mu.Lock()
	cs := p.cs
	p.mu.Unlock()
	if cs != failed {
		return cs, nil
	}
	_ = failed.Close()
	if err := p.connect(ctx); err != nil {
		return nil, err
	}
	return p.current(), nil
}

func (p *proxy) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			p.stdio.Store(r.Session)
			return p.list(ctx, r)
		case *mcp.CallToolRequest:
			p.stdio.Store(r.Session)
			return p.call(ctx, r)
		}
		return next(ctx, method, req)
	}
}

// list is idempotent, so it is retried once on a fresh daemon session.
func (p *proxy) list(ctx context.Context, r *mcp.ListToolsRequest) (mcp.Result, error) {
	params := &mcp.ListToolsParams{}
	if r.Params != nil {
		params.Meta, params.Cursor = relayMeta(r.Params.Meta), r.Params.Cursor
	}
	cs := p.current()
	res, err := cs.ListTools(ctx, params)
	if err != nil && sessionLost(err) {
		if cs, err = p.session(ctx, cs); err == nil {
			res, err = cs.ListTools(ctx, params)
		}
	}
	if err != nil {
		return nil, relayError(err)
	}
	return res, nil
}

// call is never retried: a call that may have reached the daemon must not
// run twice (clients that retry send an idempotency key in _meta).
func (p *proxy) call(ctx context.Context, r *mcp.CallToolRequest) (mcp.Result, error) {
	params := &mcp.CallToolParams{Meta: relayMeta(r.Params.Meta), Name: r.Params.Name}
	if len(r.Params.Arguments) > 0 {
		params.Arguments = r.Params.Arguments
	}
	cs := p.current()
	res, err := cs.CallTool(ctx, params)
	if err == nil {
		return res, nil
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return nil, rpc // the daemon's own answer, e.g. an unknown tool
	}
	if sessionLost(err) {
		_, _ = p.session(context.WithoutCancel(ctx), cs) // reconnect for the next request
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return errorResult(switchboard.Errorf(switchboard.CodeUnavailable,
		"the daemon did not answer (%v); whether the call ran is unknown — check with the daemon before calling again", err), nil), nil
}

// relayMeta is the _meta of a request as sent on to the daemon: the
// caller's own keys (progress token, idempotency key) without the
// protocol's per-request keys (protocol version, client info), which
// describe the stdio hop, not the HTTP one.
func relayMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	out := make(mcp.Meta, len(m))
	for k, v := range m {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			out[k] = v
		}
	}
	return out
}

func sessionLost(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing)
}

func relayError(err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "UNAVAILABLE: the daemon did not answer: " + err.Error()}
}

// bearerTransport adds the daemon token to every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	if t.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return next.RoundTrip(r)
}
