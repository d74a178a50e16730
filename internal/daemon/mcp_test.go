package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/sqlite"
)

const mcpToken = "mcp-daemon-test-token"

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// startMCP runs a daemon over the SQLite file at path with a counting Go
// tool and returns an MCP client session on its /mcp; the test ends both.
func startMCP(t *testing.T, path string, runs *atomic.Int32) (*mcp.ClientSession, func()) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken})
	if err != nil {
		t.Fatal(err)
	}
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "orders.place", Description: "Place an order.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"qty":{"type":"integer"}}}`)},
		func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"order": runs.Add(1)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{mcpToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := func() {
		cs.Close()
		d.Close()
		srv.Close()
		st.Close()
	}
	t.Cleanup(stop)
	return cs, stop
}

// RELIABILITY row 12 across a restart: an MCP call re-sent with the same
// idempotency key after the daemon restarted on the same store replays the
// first outcome (the key lives in the store, not in the MCP server), and
// the key reused for another call is IDEMPOTENCY_CONFLICT.
func TestMCPIdempotencyKeySurvivesRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sb.db")
	var runs atomic.Int32
	key := mcp.Meta{"switchboard/idempotencyKey": "order-1"}
	call := func(cs *mcp.ClientSession, qty int) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"qty": qty}, Meta: key})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	cs, stop := startMCP(t, path, &runs)
	first := call(cs, 1)
	if first.IsError {
		t.Fatalf("first call: %+v", first)
	}
	stop()

	cs, _ = startMCP(t, path, &runs)
	again := call(cs, 1)
	if again.IsError || again.Meta["switchboard/invocationId"] != first.Meta["switchboard/invocationId"] {
		t.Fatalf("re-sent after a restart: %+v; want the replay of invocation %v", again, first.Meta["switchboard/invocationId"])
	}
	conflict := call(cs, 2)
	if tc, ok := conflict.Content[0].(*mcp.TextContent); !conflict.IsError || !ok || !strings.HasPrefix(tc.Text, "IDEMPOTENCY_CONFLICT: ") {
		t.Fatalf("the key reused for another call: %+v", conflict.Content)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}

// One authenticator serves every transport: an agent token reaches /mcp as
// its agent (its calls recorded under it) and the HTTP API with the same
// check; a browser session token, which /mcp does not take, is refused.
func TestMCPAndAPIShareTheAuthenticator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "orders.list", Description: "List orders.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage) (any, error) { return []string{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: "planner", Allow: []string{"orders.*"}})
	if err != nil {
		t.Fatal(err)
	}
	connect := func(token string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	}

	cs, err := connect(tok.Token)
	if err != nil {
		t.Fatalf("agent token on /mcp: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "orders-list"})
	if err != nil || res.IsError {
		t.Fatalf("agent call: %v %+v", err, res)
	}
	inv, err := d.Broker.Get(ctx, res.Meta["switchboard/invocationId"].(string))
	if err != nil || inv.Caller != "agent:planner" {
		t.Fatalf("record %+v %v; want caller agent:planner", inv, err)
	}

	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/tools", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("agent token on the HTTP API: %s", resp.Status)
	}

	tab, err := d.Sessions.Create(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := connect(tab.SessionToken); err == nil {
		cs.Close()
		t.Fatal("a browser session token opened an MCP session")
	}
	if _, err := d.Tokens.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if cs, err := connect(tok.Token); err == nil {
		cs.Close()
		t.Fatal("a revoked agent token opened an MCP session")
	}
}
