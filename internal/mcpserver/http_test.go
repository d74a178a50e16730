package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one JSON-RPC message to /mcp.
func post(t *testing.T, ctx context.Context, url, body string, hdr ...string) *http.Response {
	t.Helper()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// drain reads a response to its end, as a well-behaved client does (the
// SDK may end a session whose initialize answer was abandoned).
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func errorCode(t *testing.T, resp *http.Response) switchboard.Code {
	t.Helper()
	defer resp.Body.Close()
	var env switchboard.ErrorEnvelope
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &env); err != nil || env.Error == nil {
		t.Fatalf("%s: not an error envelope: %s", resp.Status, b)
	}
	return env.Error.Code
}

// RELIABILITY rows 1, 2 and 4 at /mcp: foreign Host and Origin refused
// before any MCP handling, missing and wrong tokens refused.
func TestHTTPGuards(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	url := e.srv.URL + "/mcp"
	auth := "Bearer " + adminToken
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
		code   switchboard.Code
	}{
		{"cross-site POST", []string{"Authorization", auth, "Origin", "https://evil.test", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}, 403, switchboard.CodeOriginRejected},
		{"foreign origin with a valid token", []string{"Authorization", auth, "Origin", "http://evil.test"}, 403, switchboard.CodeOriginRejected},
		{"DNS rebinding", []string{"Authorization", auth, "Host", "evil.test"}, 403, switchboard.CodeOriginRejected},
		{"no token", nil, 401, switchboard.CodeUnauthorized},
		{"wrong token", []string{"Authorization", "Bearer nope"}, 401, switchboard.CodeUnauthorized},
	} {
		r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			if tc.hdr[i] == "Host" {
				r.Host = tc.hdr[i+1]
			} else {
				r.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %s, want %d", tc.name, resp.Status, tc.status)
		}
		if code := errorCode(t, resp); code != tc.code {
			t.Errorf("%s: code %s, want %s", tc.name, code, tc.code)
		}
	}
	// The daemon's own origin is fine.
	resp := post(t, t.Context(), url, initializeBody, "Authorization", auth, "Origin", e.srv.URL)
	drain(resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("own origin: %s", resp.Status)
	}
}

// The SDK's own DNS-rebinding check stays on behind ours: the bare handler
// refuses a loopback connection that names a foreign host.
func TestSDKLocalhostProtection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	bare := httptest.NewServer(e.mcp.Handler())
	t.Cleanup(bare.Close)
	r, _ := http.NewRequest(http.MethodPost, bare.URL, strings.NewReader(initializeBody))
	r.Host = "evil.test"
	r.Header.Set("Authorization", "Bearer "+adminToken)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("%s, want 403", resp.Status)
	}
}

// A session opened with one token cannot be used with another.
func TestSessionBoundToPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: authFunc(func(r *http.Request) (switchboard.Principal, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer alice":
			return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "alice"}, nil
		case "Bearer bob":
			return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bob"}, nil
		}
		return switchboard.Principal{}, switchboard.Errorf(switchboard.CodeUnauthorized, "no")
	})})
	url := e.srv.URL + "/mcp"
	resp := post(t, t.Context(), url, initializeBody, "Authorization", "Bearer alice")
	drain(resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	resp = post(t, t.Context(), url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		"Authorization", "Bearer bob", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")
	drain(resp)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob using alice's session: %s", resp.Status)
	}
}

// RELIABILITY row 12: the stream of a call drops; the client re-sends it
// under a new JSON-RPC id (here from a new session) with the same
// idempotency key; it runs once and both get its outcome.
func TestResentCallRunsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	var runs atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	e.goTool(tool("orders.place", "mutate"), func(ctx context.Context, in json.RawMessage) (any, error) {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return map[string]any{"order": 42}, nil
	})
	url := e.srv.URL + "/mcp"
	auth := "Bearer " + adminToken
	resp := post(t, t.Context(), url, initializeBody, "Authorization", auth)
	drain(resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	hdr := []string{"Authorization", auth, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"}
	resp = post(t, t.Context(), url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...)
	drain(resp)
	// The SDK handles that notification asynchronously and refuses calls
	// until it has: a successful tools/list shows the session is ready.
	for i := 0; ; i++ {
		resp = post(t, t.Context(), url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `"result"`) {
			break
		}
		if i == 100 {
			t.Fatalf("session never became ready: %s", b)
		}
	}

	// First attempt: the stream is cut while the call runs.
	ctx, drop := context.WithCancel(t.Context())
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"orders-place","arguments":{"x":1},"_meta":{"switchboard/idempotencyKey":"k-1"}}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		if resp, err := http.DefaultClient.Do(r); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // until the drop
			resp.Body.Close()
		}
	}()
	<-started
	drop()
	<-firstDone

	// The re-send, under another id and from another session.
	cs := e.connect(adminToken, nil)
	key := mcp.Meta{metaIdempotencyKey: "k-1"}
	resc := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"x": 1}, Meta: key})
		if err != nil {
			t.Error(err)
		}
		resc <- res
	}()
	// Same key, other arguments: refused without running.
	conflict, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"x": 2}, Meta: key})
	if err != nil || !conflict.IsError || !strings.HasPrefix(text(t, conflict), "IDEMPOTENCY_CONFLICT: ") {
		t.Fatalf("conflicting re-use of a key: %v %+v", err, conflict)
	}
	close(release)
	joined := <-resc
	if joined == nil || joined.IsError || text(t, joined) != `{"order":42}` {
		t.Fatalf("joined re-send: %+v", joined)
	}
	again, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "orders-place", Arguments: map[string]any{"x": 1}, Meta: key})
	if err != nil || again.Meta[metaInvocationID] != joined.Meta[metaInvocationID] {
		t.Fatalf("replay after completion: %v %v vs %v", err, again.Meta, joined.Meta)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
}

// RELIABILITY row 2, without an Origin: a browser that marks a request
// Sec-Fetch-Site: cross-site but sends no Origin is refused at /mcp before
// the tool runs; same-origin and header-less (non-browser) clients work.
func TestCrossSiteWithoutOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	var runs atomic.Int32
	e.goTool(tool("orders.place", "mutate"), func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		return map[string]any{"order": 42}, nil
	})
	url := e.srv.URL + "/mcp"
	auth := "Bearer " + adminToken
	resp := post(t, t.Context(), url, initializeBody, "Authorization", auth)
	drain(resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	hdr := []string{"Authorization", auth, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"}
	drain(post(t, t.Context(), url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...))
	for i := 0; ; i++ { // the SDK takes the notification asynchronously
		resp = post(t, t.Context(), url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `"result"`) {
			break
		}
		if i == 100 {
			t.Fatalf("session never became ready: %s", b)
		}
	}
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"orders-place","arguments":{}}}`

	resp = post(t, t.Context(), url, call, append(hdr, "Sec-Fetch-Site", "cross-site")...)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site without Origin: %s, want 403", resp.Status)
	}
	if code := errorCode(t, resp); code != switchboard.CodeOriginRejected {
		t.Errorf("cross-site without Origin: code %s", code)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("refused call ran %d times", n)
	}
	for i, site := range []string{"same-origin", ""} {
		h := hdr
		if site != "" {
			h = append(h, "Sec-Fetch-Site", site)
		}
		resp = post(t, t.Context(), url, call, h...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `{\"order\":42}`) {
			t.Errorf("Sec-Fetch-Site %q: %s %s", site, resp.Status, b)
		}
		if n := runs.Load(); n != int32(i+1) {
			t.Errorf("Sec-Fetch-Site %q: ran %d times, want %d", site, n, i+1)
		}
	}
}

// A tools/call POST with a W3C traceparent continues the caller's trace:
// the tool runs in it, whatever context the MCP session was opened with.
func TestTraceparentContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	got := make(chan string, 1)
	e.goTool(tool("orders.place", "mutate"), func(ctx context.Context, in json.RawMessage) (any, error) {
		got <- trace.SpanContextFromContext(ctx).TraceID().String()
		return map[string]any{"order": 42}, nil
	})
	url := e.srv.URL + "/mcp"
	auth := "Bearer " + adminToken
	resp := post(t, t.Context(), url, initializeBody, "Authorization", auth)
	drain(resp)
	hdr := []string{"Authorization", auth, "Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version", "2025-11-25"}
	drain(post(t, t.Context(), url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...))
	for i := 0; ; i++ { // the session is ready once tools/list answers
		resp = post(t, t.Context(), url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `"result"`) {
			break
		}
		if i == 100 {
			t.Fatalf("session never became ready: %s", b)
		}
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	hdr = append(hdr, "Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	drain(post(t, t.Context(), url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"orders-place","arguments":{}}}`, hdr...))
	if id := <-got; id != traceID {
		t.Fatalf("the tool ran in trace %s; want the caller's %s", id, traceID)
	}
}
