package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/sqlite"
)

// elicitEnv is a daemon with a mutating Go tool (an agent's call of it
// needs approval), an agent token and the admin's HTTP client (the
// console's approvals route).
type elicitEnv struct {
	t     *testing.T
	d     *daemon.Daemon
	srv   *httptest.Server
	admin *client.Client
	agent string // the agent's bearer token
	runs  atomic.Int32
	// version is the MCP revision connect offers: 2025-11-25 (session
	// elicitation) unless a test sets "" for the SDK's latest, 2026-07-28
	// (approval rounds, mcp_rounds_test.go).
	version string
}

const elicitConsole = "http://console.example/#approvals"

func newElicitEnv(t *testing.T, mode mcpserver.Elicitation) *elicitEnv {
	t.Helper()
	return newElicitEnvWith(t, mcpserver.Options{Elicitation: mode, ConsoleURL: elicitConsole})
}

func newElicitEnvWith(t *testing.T, mo mcpserver.Options) *elicitEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken,
		MCP: mo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	e := &elicitEnv{t: t, d: d, version: "2025-11-25"}
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "orders.place", Description: "Place an order.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"qty":{"type":"integer"}}}`)},
		func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"order": e.runs.Add(1)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(d.Handler())
	t.Cleanup(e.srv.Close)
	e.admin = client.New(e.srv.URL, mcpToken, nil)
	tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: "planner", Allow: []string{"orders.*"}})
	if err != nil {
		t.Fatal(err)
	}
	e.agent = tok.Token
	return e
}

// connect opens the agent's MCP session with the client options given
// (an ElicitationHandler declares elicitation).
func (e *elicitEnv) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent-client", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{e.agent}}}, &mcp.ClientSessionOptions{ProtocolVersion: e.version})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

func (e *elicitEnv) place(cs *mcp.ClientSession, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	e.t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "orders-place", Arguments: args, Meta: meta})
	if err != nil {
		e.t.Fatalf("tools/call: %v", err)
	}
	return res
}

// decided returns the one approval of the call that res answers, and its
// approval.decide ledger entries.
func (e *elicitEnv) decided(res *mcp.CallToolResult) (switchboard.ApprovalRequest, []switchboard.ActivityEntry) {
	e.t.Helper()
	ctx := context.Background()
	list, err := e.d.Approvals.List(ctx, switchboard.ApprovalFilter{InvocationID: res.Meta["switchboard/invocationId"].(string)})
	if err != nil || len(list) != 1 {
		e.t.Fatalf("approvals of the call: %+v %v", list, err)
	}
	entries, err := e.admin.Activity(ctx, client.ActivityQuery{Verb: activity.VerbApprovalDecide})
	if err != nil {
		e.t.Fatal(err)
	}
	return list[0], entries.Items
}

// pending waits for the one pending approval. Nothing signals its creation
// to an outside observer, so this polls the console's route.
func (e *elicitEnv) pending() switchboard.ApprovalRequest {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := e.admin.Approvals(context.Background(), client.ApprovalQuery{})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(list) == 1 {
			return list[0]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no pending approval: %+v", list)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// With elicitation: form, the agent's client asks its human in a form
// carrying who wants to do what and the arguments; its answer decides the
// approval, recorded with the channel elicitation.
func TestMCPElicitationFormDecides(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		answer  *mcp.ElicitResult
		approve bool
		reason  string
	}{
		{"approve", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "reason": "fine"}}, true, "fine"},
		{"approve false", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false, "reason": "not now"}}, false, "not now"},
		{"decline", &mcp.ElicitResult{Action: "decline"}, false, "the user chose decline in the MCP client"},
		{"cancel", &mcp.ElicitResult{Action: "cancel"}, false, "the user chose cancel in the MCP client"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newElicitEnv(t, mcpserver.ElicitForm)
			asked := make(chan *mcp.ElicitParams, 1)
			cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- r.Params
				return tc.answer, nil
			}})
			res := e.place(cs, map[string]any{"qty": 2}, nil)
			p := <-asked
			if p.Mode != "form" || !strings.Contains(p.Message, "agent:planner") || !strings.Contains(p.Message, "orders.place") || !strings.Contains(p.Message, `"qty": 2`) {
				t.Fatalf("elicitation %+v", p)
			}
			raw, _ := json.Marshal(p.RequestedSchema)
			var schema struct {
				Properties map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
				Required []string `json:"required"`
			}
			if json.Unmarshal(raw, &schema) != nil || schema.Properties["approve"].Type != "boolean" ||
				schema.Properties["reason"].Type != "string" || len(schema.Required) != 1 || schema.Required[0] != "approve" {
				t.Fatalf("requested schema %s", raw)
			}
			a, entries := e.decided(res)
			if a.Channel != approval.ChannelElicitation || a.DecidedBy != "user:admin" || a.Reason != tc.reason {
				t.Fatalf("approval %+v", a)
			}
			if len(entries) != 1 || string(entries[0].Provenance) != `{"channel":"elicitation"}` || entries[0].Actor != "user:admin" {
				t.Fatalf("decision entries %+v", entries)
			}
			if tc.approve {
				if res.IsError || e.runs.Load() != 1 || a.Status != switchboard.ApprovalApproved {
					t.Fatalf("approved call: %s, runs %d, %+v", text(res), e.runs.Load(), a)
				}
				return
			}
			if !res.IsError || !strings.HasPrefix(text(res), "USER_DENIED") || e.runs.Load() != 0 || a.Status != switchboard.ApprovalDenied {
				t.Fatalf("denied call: %s, runs %d, %+v", text(res), e.runs.Load(), a)
			}
		})
	}
}

// A client that declared no elicitation is never asked, and nothing it
// sends counts as a decision: the call waits with approval-looking
// arguments and _meta until the console decides. The same holds, under
// the default (url), for a client that declared only form elicitation
// and would answer yes at once.
func TestMCPWithoutElicitationWaitsForConsole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode mcpserver.Elicitation
		form bool
	}{{"no elicitation", mcpserver.ElicitForm, false}, {"form under url default", mcpserver.ElicitURL, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newElicitEnv(t, tc.mode)
			var asked atomic.Int32
			var opts *mcp.ClientOptions
			if tc.form {
				opts = &mcp.ClientOptions{
					Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked.Add(1)
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
					}}
			}
			cs := e.connect(opts)
			out := make(chan *mcp.CallToolResult, 1)
			go func() {
				out <- e.place(cs, map[string]any{"qty": 3, "approved": true},
					mcp.Meta{"switchboard/approval": "approved", "approved": true, "decision": "approve"})
			}()
			// The tool rejects the unknown "approved" property only if its schema
			// says so; it does not, so the call is recorded and waits.
			a := e.pending()
			if a.Status != switchboard.ApprovalPending || e.runs.Load() != 0 {
				t.Fatalf("while waiting: %+v runs %d", a, e.runs.Load())
			}
			if _, err := e.admin.Decide(context.Background(), a.ID, client.Decision{Approve: true}); err != nil {
				t.Fatal(err)
			}
			res := <-out
			if res.IsError || e.runs.Load() != 1 || asked.Load() != 0 {
				t.Fatalf("call %s, runs %d, asked %d", text(res), e.runs.Load(), asked.Load())
			}
			got, entries := e.decided(res)
			if got.Channel != approval.ChannelHTTP || len(entries) != 1 {
				t.Fatalf("approval %+v, entries %+v", got, entries)
			}
		})
	}
}

// A decision on the console while the elicitation is open wins: the
// client's question is withdrawn (notifications/cancelled ends its
// handler's context), the call proceeds by the console's decision, and the
// late answer changes nothing.
func TestMCPConsoleDecidesWhileElicitationPending(t *testing.T) {
	t.Parallel()
	e := newElicitEnv(t, mcpserver.ElicitForm)
	// The withdrawal (notifications/cancelled) travels on the call's own
	// stream, which may close first when the call ends at once; so the
	// client answers when withdrawn or, failing that, when released.
	asked, release := make(chan struct{}), make(chan struct{})
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asked)
		select {
		case <-ctx.Done():
		case <-release:
		}
		// Answering yes after the console said no must change nothing.
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	out := make(chan *mcp.CallToolResult, 1)
	go func() { out <- e.place(cs, map[string]any{"qty": 4}, nil) }()
	<-asked
	a := e.pending()
	if _, err := e.admin.Decide(context.Background(), a.ID, client.Decision{Approve: false, Reason: "console says no"}); err != nil {
		t.Fatal(err)
	}
	res := <-out
	close(release) // the late "yes", if the withdrawal did not arrive
	if !res.IsError || !strings.Contains(text(res), "console says no") || e.runs.Load() != 0 {
		t.Fatalf("call %s, runs %d", text(res), e.runs.Load())
	}
	got, entries := e.decided(res)
	if got.Channel != approval.ChannelHTTP || got.Status != switchboard.ApprovalDenied || len(entries) != 1 {
		t.Fatalf("approval %+v, entries %+v", got, entries)
	}
}

// URL mode links the console: the client's accept decides nothing, the
// console's decision does, and the client is told the elicitation is
// complete. A failing elicitation leaves the approval pending for the
// console too.
func TestMCPElicitationURLLinksConsole(t *testing.T) {
	t.Parallel()
	e := newElicitEnv(t, mcpserver.ElicitURL)
	asked := make(chan *mcp.ElicitParams, 1)
	complete := make(chan string, 1)
	cs := e.connect(&mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- r.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			complete <- r.Params.ElicitationID
		}})
	out := make(chan *mcp.CallToolResult, 1)
	go func() { out <- e.place(cs, map[string]any{"qty": 5}, nil) }()
	p := <-asked
	a := e.pending()
	if p.Mode != "url" || p.URL != elicitConsole || p.ElicitationID != a.ID || !strings.Contains(p.Message, a.ID) {
		t.Fatalf("elicitation %+v for %s", p, a.ID)
	}
	if _, err := e.admin.Decide(context.Background(), a.ID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	res := <-out
	if res.IsError || e.runs.Load() != 1 {
		t.Fatalf("call %s, runs %d", text(res), e.runs.Load())
	}
	select {
	case id := <-complete:
		if id != a.ID {
			t.Fatalf("elicitation complete for %q, want %q", id, a.ID)
		}
	case <-time.After(time.Minute): // a bound, not a timing assertion: fail rather than hang
		t.Fatal("no notifications/elicitation/complete after the console decided")
	}

	// A client whose elicitation fails: the approval stays pending.
	failing := e.connect(&mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("no UI here")
		}})
	go func() { out <- e.place(failing, map[string]any{"qty": 6}, nil) }()
	a = e.pending()
	if _, err := e.admin.Decide(context.Background(), a.ID, client.Decision{Approve: true}); err != nil {
		t.Fatalf("decide after a failed elicitation: %v", err)
	}
	if res := <-out; res.IsError || e.runs.Load() != 2 {
		t.Fatalf("call %s, runs %d", text(res), e.runs.Load())
	}

	// A client whose answer to the link comes only after the console
	// decided (a slow client, a loaded machine): the call goes on without
	// it, and the client is still told the elicitation is complete.
	late, lateDone := make(chan struct{}), make(chan string, 1)
	slow := e.connect(&mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-late:
			case <-ctx.Done():
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			lateDone <- r.Params.ElicitationID
		}})
	go func() { out <- e.place(slow, map[string]any{"qty": 7}, nil) }()
	a = e.pending()
	if _, err := e.admin.Decide(context.Background(), a.ID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	if res := <-out; res.IsError || e.runs.Load() != 3 {
		t.Fatalf("call %s, runs %d", text(res), e.runs.Load())
	}
	close(late)
	select {
	case id := <-lateDone:
		if id != a.ID {
			t.Fatalf("elicitation complete for %q, want %q", id, a.ID)
		}
	case <-time.After(time.Minute): // a bound, not a timing assertion
		t.Fatal("a client whose answer came late was never told the elicitation is complete")
	}
}

// `switchboard mcp` relays the daemon's question to its stdio client and
// the answer back: the stdio client's human decides as over HTTP.
func TestMCPElicitationOverStdioRelay(t *testing.T) {
	t.Parallel()
	e := newElicitEnv(t, mcpserver.ElicitForm)
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.ServeStdio(ctx, serverR, serverW, mcpserver.StdioOptions{URL: e.srv.URL + "/mcp", Token: e.agent})
		serverW.Close()
	}()
	asked := make(chan *mcp.ElicitParams, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- r.Params
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}})
	// 2025-11-25, as today's clients speak: on 2026-07-28 a server may not
	// send elicitation/create on its own (SEP-2322), so the relay cannot
	// forward the question and the approval waits for the console.
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: clientR, Writer: clientW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	res := e.place(cs, map[string]any{"qty": 7}, nil)
	if p := <-asked; p.Mode != "form" || !strings.Contains(p.Message, "orders.place") {
		t.Fatalf("relayed elicitation %+v", p)
	}
	a, _ := e.decided(res)
	if res.IsError || e.runs.Load() != 1 || a.Channel != approval.ChannelElicitation || a.Status != switchboard.ApprovalApproved {
		t.Fatalf("call %s, runs %d, approval %+v", text(res), e.runs.Load(), a)
	}
}
