package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/sqlite"
)

const adminToken = "mcp-test-admin-token"

// env is a daemon assembled like daemon.New (real SQLite, registry,
// sessions, broker, httpapi with /mcp mounted through Extra) on a loopback
// test server.
type env struct {
	t      *testing.T
	ctx    context.Context
	store  *sqlite.Store
	reg    *registry.Registry
	sess   *session.Manager
	br     *broker.Broker
	mcp    *Server
	srv    *httptest.Server
	admin  *client.Client
	ledger *ledgerStore
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The session side ends browser calls with their entries, so it
	// writes through the ledger store too.
	ledger := &ledgerStore{Store: st, entries: make(chan switchboard.ActivityEntry, 100)}
	sess, err := session.New(session.Options{Store: ledger, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	br := broker.New(broker.Options{Store: ledger, Registry: reg, Browser: sess})
	e := &env{t: t, ctx: ctx, store: st, reg: reg, sess: sess, br: br, ledger: ledger}
	if opts.Live == nil {
		opts.Live = sess
	}
	if opts.Auth == nil {
		opts.Auth = authFunc(adminOnly)
	}
	e.mcp, err = New(ctx, reg, br, &opts)
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Options{
		Registry: reg, AdminToken: adminToken, Broker: br, Sessions: sess,
		AllowHosts: []string{"localhost", "127.0.0.1", "::1"},
		Extra:      map[string]http.Handler{"/mcp": e.mcp.Handler()},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(api)
	e.admin = client.New(e.srv.URL, adminToken, nil)
	t.Cleanup(func() {
		e.mcp.Close()
		sess.Shutdown()
		e.srv.Close()
		br.Close()
	})
	return e
}

// authFunc is a test Authenticator: a principal of kind user is the admin
// credential, of kind agent an agent's.
type authFunc func(*http.Request) (switchboard.Principal, error)

func (f authFunc) Authenticate(r *http.Request) (authn.Credential, error) {
	p, err := f(r)
	if err != nil {
		return authn.Credential{}, err
	}
	kind := authn.Admin
	if p.Kind == switchboard.PrincipalAgent {
		kind = authn.Agent
	}
	return authn.Credential{Kind: kind, Principal: p}, nil
}

func adminOnly(r *http.Request) (switchboard.Principal, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(adminToken)) != 1 {
		return switchboard.Principal{}, switchboard.Errorf(switchboard.CodeUnauthorized, "missing or wrong bearer token")
	}
	return switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}, nil
}

// connect opens an MCP client session over streamable HTTP with token.
func (e *env) connect(token string, copts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	return e.connectPath(token, "/mcp", copts)
}

func (e *env) connectPath(token, path string, copts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	hc := &http.Client{Transport: bearerTransport{token: token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	// 2025-11-25: these tests pin the session revision's behaviour; the
	// 2026-07-28 rounds are tested in internal/daemon/mcp_rounds_test.go.
	cs, err := c.Connect(e.ctx, &mcp.StreamableClientTransport{Endpoint: e.srv.URL + path, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

func (e *env) register(tools ...switchboard.Tool) {
	e.t.Helper()
	if _, err := e.reg.Register(e.ctx, switchboard.SourceHost, tools); err != nil {
		e.t.Fatal(err)
	}
}

// goTool registers a Go-function tool.
func (e *env) goTool(t switchboard.Tool, fn broker.Func) {
	e.t.Helper()
	t.Binding = &switchboard.Binding{Go: true}
	e.register(t)
	e.br.Handle(t.Name, fn)
}

// tab opens a browser session, advertises tools and serves them with h
// until the test ends.
func (e *env) tab(h client.ActionHandler, tools ...switchboard.Tool) *client.Tab {
	e.t.Helper()
	cred, err := e.admin.CreateSession(e.ctx, "user:alice")
	if err != nil {
		e.t.Fatal(err)
	}
	tab := e.admin.Tab(cred)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tab.Serve(ctx, h)
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	if _, err := tab.Advertise(e.ctx, tools); err != nil {
		e.t.Fatal(err)
	}
	e.waitLive(tab.ID)
	return tab
}

// waitLive waits until the tab's stream is attached (Serve connects in the
// background), which is when its advertised tools become live.
func (e *env) waitLive(id string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tools, _ := e.sess.Tools(e.ctx, id); len(tools) > 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("tab %s never attached its stream", id)
		}
		time.Sleep(time.Millisecond) // the stream attaches on another goroutine; no signal is exposed
	}
}

func tool(name, class string) switchboard.Tool {
	return switchboard.Tool{
		Name: name, Description: "Does " + name + ".", Class: switchboard.Class(class),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`),
	}
}

// newEnvSharing serves a second MCP server with other options over base's
// registry, broker and sessions.
func newEnvSharing(t *testing.T, base *env, opts Options) *env {
	t.Helper()
	if opts.Live == nil {
		opts.Live = base.mcp.opts.Live
	}
	if opts.Auth == nil {
		opts.Auth = authFunc(adminOnly)
	}
	s, err := New(base.ctx, base.reg, base.br, &opts)
	if err != nil {
		t.Fatal(err)
	}
	e := *base
	e.t, e.mcp, e.srv = t, s, httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); e.srv.Close() })
	return &e
}

// ledgerStore hands every ledger entry the broker appends to the test, so
// a test can wait for a call's terminal record without polling.
type ledgerStore struct {
	switchboard.Store
	entries chan switchboard.ActivityEntry
}

func (s *ledgerStore) ActivityAppend(ctx context.Context, a *switchboard.ActivityEntry) error {
	err := s.Store.ActivityAppend(ctx, a)
	if err == nil {
		s.hand(a)
	}
	return err
}

// InvocationFinish is how the broker appends a call's entry.
func (s *ledgerStore) InvocationFinish(ctx context.Context, inv switchboard.Invocation, a *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error) {
	stored, err := s.Store.InvocationFinish(ctx, inv, a, from...)
	if err == nil {
		s.hand(a)
	}
	return stored, err
}

// InvocationCreateFinished is how a quick read is recorded with its entry.
func (s *ledgerStore) InvocationCreateFinished(ctx context.Context, inv switchboard.Invocation, a *switchboard.ActivityEntry) error {
	err := s.Store.InvocationCreateFinished(ctx, inv, a)
	if err == nil {
		s.hand(a)
	}
	return err
}

func (s *ledgerStore) hand(a *switchboard.ActivityEntry) {
	select {
	case s.entries <- *a:
	default:
	}
}

// ledgered waits for the next tool.call entry of tool and returns its
// details.
func (e *env) ledgered(tool string) (d struct {
	InvocationID string             `json:"invocationId"`
	Status       switchboard.Status `json:"status"`
	Code         switchboard.Code   `json:"code"`
	SessionID    string             `json:"sessionId"`
}) {
	e.t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case a := <-e.ledger.entries:
			if a.Verb == activity.VerbToolCall && a.Target == tool {
				if err := json.Unmarshal(a.Details, &d); err != nil {
					e.t.Fatal(err)
				}
				return d
			}
		case <-timeout.C:
			e.t.Fatalf("no ledger entry for %s", tool)
		}
	}
}
