package daemon_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// connectLatest opens a session on the SDK's latest revision, 2026-07-28
// (server/discover, no Mcp-Session-Id), with the multi-round-trip retry
// loop the SDK runs for its caller turned off when manual is set.
func (e *elicitEnv) connectLatest(opts *mcp.ClientOptions, manual bool) *mcp.ClientSession {
	e.t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: manual}
	e.version = ""
	cs := e.connect(opts)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		e.t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	if cs.ID() != "" {
		e.t.Fatalf("a 2026-07-28 connection holds session %q", cs.ID())
	}
	return cs
}

var urlElicitation = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}

// A 2026-07-28 client lists and calls a read tool without a session.
func TestMCPStatelessListsAndCalls(t *testing.T) {
	t.Parallel()
	e := newElicitEnv(t, mcpserver.ElicitURL)
	ctx := context.Background()
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "orders.count", Description: "Count orders.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, json.RawMessage) (any, error) { return map[string]int{"orders": 7}, nil }); err != nil {
		t.Fatal(err)
	}
	cs := e.connectLatest(nil, false)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
	}
	if !names["orders-count"] || !names["orders-place"] {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "orders-count", Arguments: map[string]any{}})
	if err != nil || res.IsError || text(res) != `{"orders":7}` {
		t.Fatalf("call: %v %+v", err, res)
	}
}

// The approval of a 2026-07-28 call crosses rounds: the first answers
// input_required with a link to the console and a signed requestState; a
// retry while nobody decided asks again; once the console approves, the
// retry gets the outcome, the tool having run once however often the
// client retries; the ledger holds one call and one decision.
func TestMCPRoundsApproveThroughConsole(t *testing.T) {
	t.Parallel()
	// A retry before the decision answers at once.
	e := newElicitEnvWith(t, mcpserver.Options{ConsoleURL: elicitConsole, InputWait: time.Nanosecond})
	ctx := context.Background()
	cs := e.connectLatest(&mcp.ClientOptions{Capabilities: urlElicitation,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}, true)
	params := &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"qty": 2}}
	first, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !first.NeedsInput() || first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("first round %+v", first)
	}
	a := e.pending()
	ask, ok := first.InputRequests["switchboard/approval"].(*mcp.ElicitParams)
	if !ok || ask.Mode != "url" || ask.URL != elicitConsole || ask.ElicitationID != a.ID || !strings.Contains(ask.Message, "orders.place") {
		t.Fatalf("input request %+v for %s", first.InputRequests, a.ID)
	}
	retry := func() *mcp.CallToolResult {
		t.Helper()
		p := *params
		p.RequestState = first.RequestState
		p.InputResponses = mcp.InputResponseMap{"switchboard/approval": &mcp.ElicitResult{Action: "accept"}}
		res, err := cs.CallTool(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if again := retry(); !again.NeedsInput() || e.runs.Load() != 0 {
		t.Fatalf("retry while pending: %+v, runs %d", again, e.runs.Load())
	}
	if _, err := e.admin.Decide(ctx, a.ID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		res := retry()
		if res.NeedsInput() || res.IsError || text(res) != `{"order":1}` {
			t.Fatalf("retry after approval: %+v %s", res, text(res))
		}
	}
	if e.runs.Load() != 1 {
		t.Fatalf("the tool ran %d times", e.runs.Load())
	}
	got, entries := e.decided(first)
	if got.Channel != approval.ChannelHTTP || got.Status != switchboard.ApprovalApproved || len(entries) != 1 {
		t.Fatalf("approval %+v, entries %+v", got, entries)
	}
	calls, err := e.admin.Activity(ctx, client.ActivityQuery{Verb: "tool.call"})
	if err != nil || len(calls.Items) != 1 {
		t.Fatalf("tool.call entries %+v %v", calls, err)
	}
}

// Denied on the console, the retry answers USER_DENIED as a 2025-11-25
// call does; the SDK's own retry loop drives the rounds.
func TestMCPRoundsDenied(t *testing.T) {
	t.Parallel()
	e := newElicitEnv(t, mcpserver.ElicitURL)
	ctx := context.Background()
	asked := make(chan *mcp.ElicitParams, 1)
	cs := e.connectLatest(&mcp.ClientOptions{Capabilities: urlElicitation,
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case asked <- r.Params:
			default:
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}, false)
	out := make(chan *mcp.CallToolResult, 1)
	go func() { out <- e.place(cs, map[string]any{"qty": 3}, nil) }()
	<-asked
	a := e.pending()
	if _, err := e.admin.Decide(ctx, a.ID, client.Decision{Approve: false, Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	res := <-out
	if !res.IsError || !strings.HasPrefix(text(res), "USER_DENIED") || !strings.Contains(text(res), "not today") || e.runs.Load() != 0 {
		t.Fatalf("denied call: %s, runs %d", text(res), e.runs.Load())
	}
}

// Form mode (where --mcp-elicitation form allows it): the client's answer
// in the retry decides, recorded with the channel elicitation.
func TestMCPRoundsFormDecides(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		e := newElicitEnv(t, mcpserver.ElicitForm)
		cs := e.connectLatest(&mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if r.Params.Mode != "form" {
					t.Errorf("asked in %q", r.Params.Mode)
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve, "reason": "said so"}}, nil
			}}, false)
		res := e.place(cs, map[string]any{"qty": 4}, nil)
		a, entries := e.decided(res)
		if a.Channel != approval.ChannelElicitation || len(entries) != 1 || res.IsError == approve || int(e.runs.Load()) != map[bool]int{true: 1}[approve] {
			t.Fatalf("approve=%v: %s, approval %+v, entries %d, runs %d", approve, text(res), a, len(entries), e.runs.Load())
		}
	}
}

// A requestState that was altered, issued by a daemon with another admin
// token, or echoed by another agent is refused with a clear error and
// decides nothing.
func TestMCPRoundsRefuseForeignState(t *testing.T) {
	t.Parallel()
	e := newElicitEnv(t, mcpserver.ElicitURL)
	ctx := context.Background()
	opts := &mcp.ClientOptions{Capabilities: urlElicitation,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}
	cs := e.connectLatest(opts, true)
	params := &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"qty": 5}}
	first, err := cs.CallTool(ctx, params)
	if err != nil || !first.NeedsInput() {
		t.Fatalf("first round %+v %v", first, err)
	}
	payload, _, _ := strings.Cut(first.RequestState, ".")
	m := hmac.New(sha256.New, mcpserver.StateKey("another-admin-token"))
	m.Write([]byte(payload))
	other := payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	for name, state := range map[string]string{
		"altered":       payload + ".AAAA",
		"foreign key":   other,
		"args changed":  first.RequestState, // sent with other arguments below
		"not a state":   "hello",
		"flipped bytes": strings.ToUpper(payload[:4]) + first.RequestState[4:],
	} {
		p := *params
		p.RequestState = state
		if name == "args changed" {
			p.Arguments = map[string]any{"qty": 500}
		}
		_, err := cs.CallTool(ctx, &p)
		if err == nil || !strings.Contains(err.Error(), "INVALID_INPUT: requestState") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Another agent echoing the first agent's state.
	tok, err := e.d.Tokens.Create(ctx, scope.TokenRequest{Agent: "intruder", Allow: []string{"orders.*"}})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "intruder", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ics, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok.Token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ics.Close()
	p := *params
	p.RequestState = first.RequestState
	if _, err := ics.CallTool(ctx, &p); err == nil || !strings.Contains(err.Error(), "another caller") {
		t.Fatalf("intruder: %v", err)
	}
	if a := e.pending(); a.Status != switchboard.ApprovalPending || e.runs.Load() != 0 {
		t.Fatalf("after refused rounds: %+v, runs %d", a, e.runs.Load())
	}
}

// Close does not wait for a human: a 2025-11-25 call waiting for approval
// ends CANCELLED with its session, and a 2026-07-28 call between rounds is
// left awaiting approval, its request pending, for the next start or a
// survivor to resume; nothing runs.
func TestMCPCloseEndsCallsAwaitingApproval(t *testing.T) {
	t.Parallel()
	e := newElicitEnv(t, mcpserver.ElicitURL)
	ctx := context.Background()
	session := e.connect(nil) // 2025-11-25, no elicitation: the call waits
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := session.CallTool(ctx, &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"qty": 1}})
		out <- res
	}()
	waiting := e.pending()
	rounds := e.connectLatest(&mcp.ClientOptions{Capabilities: urlElicitation,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}, true)
	first, err := rounds.CallTool(ctx, &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"qty": 2}})
	if err != nil || !first.NeedsInput() {
		t.Fatalf("first round %+v %v", first, err)
	}
	if err := e.d.Close(); err != nil { // returns: the test would time out otherwise
		t.Fatal(err)
	}
	if res := <-out; res != nil && (!res.IsError || !strings.HasPrefix(text(res), "CANCELLED")) {
		t.Fatalf("session call after Close: %s", text(res))
	}
	for id, want := range map[string]switchboard.Status{
		waiting.InvocationID:                            switchboard.StatusCancelled,
		first.Meta["switchboard/invocationId"].(string): switchboard.StatusAwaitingApproval,
	} {
		inv, err := e.d.Broker.Get(ctx, id)
		if err != nil || inv.Status != want {
			t.Fatalf("invocation %s after Close: %+v %v, want %s", id, inv, err, want)
		}
	}
	if a := e.pending(); a.InvocationID != first.Meta["switchboard/invocationId"] {
		t.Fatalf("pending after Close: %+v", a)
	}
	if e.runs.Load() != 0 {
		t.Fatalf("ran %d", e.runs.Load())
	}
}
