package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/sqlite"
)

// bridge is a server with the browser bridge wired as the daemon wires it:
// registry, session manager, broker (Browser = the manager) and the routes.
type bridge struct {
	srv    *httptest.Server
	store  *sqlite.Store
	sess   *session.Manager
	admin  *client.Client
	closed chan net.Conn // connections the server closed
}

type bridgeOpts struct {
	session   session.Options
	origins   []string
	smallSend bool // tiny server send buffers, so a reader that stops reading blocks writes soon
}

func newBridge(t *testing.T, o bridgeOpts) *bridge {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	so := o.session
	so.Store = st
	if so.Heartbeat == 0 {
		so.Heartbeat = time.Minute
	}
	sm, err := session.New(so)
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{Store: st, Registry: reg, Browser: sm})
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: token, Broker: b, Sessions: sm, AllowOrigins: o.origins})
	if err != nil {
		t.Fatal(err)
	}
	br := &bridge{store: st, sess: sm, closed: make(chan net.Conn, 64)}
	br.srv = httptest.NewUnstartedServer(h)
	br.srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			select {
			case br.closed <- c:
			default:
			}
		}
	}
	if o.smallSend {
		br.srv.Listener = smallSendListener{br.srv.Listener}
	}
	br.srv.Start()
	br.admin = client.New(br.srv.URL, token, nil)
	t.Cleanup(func() {
		sm.Shutdown()
		br.srv.Close()
		b.Close()
		st.Close()
	})
	return br
}

type smallSendListener struct{ net.Listener }

func (l smallSendListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

func (br *bridge) open(t *testing.T) client.SessionCredentials {
	t.Helper()
	cred, err := br.admin.CreateSession(context.Background(), "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

func (br *bridge) tab(t *testing.T) *client.Tab {
	t.Helper()
	return br.admin.Tab(br.open(t))
}

// req sends one request with an explicit bearer ("" for none).
func (br *bridge) req(t *testing.T, method, path, bearer, body string, hdr ...string) (int, map[string]any, http.Header) {
	t.Helper()
	r, _ := http.NewRequest(method, br.srv.URL+path, strings.NewReader(body))
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out, resp.Header
}

var navTool = switchboard.Tool{
	Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
	InputSchema:  json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`),
	OutputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`),
}

// serveTab runs a Go tab that answers nav.goto with {"page": input.page}.
func serveTab(t *testing.T, tab *client.Tab) (stop func()) {
	t.Helper()
	if _, err := tab.Advertise(context.Background(), []switchboard.Tool{navTool}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tab.Serve(ctx, func(ctx context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error) {
			var in struct{ Page string }
			_ = json.Unmarshal(req.Input, &in)
			if in.Page == "missing" {
				return nil, switchboard.Errorf(switchboard.CodeNotFound, "no page %q", in.Page)
			}
			if in.Page == "bad" {
				return json.RawMessage(`{"page": 7}`), nil
			}
			return json.Marshal(map[string]string{"page": in.Page})
		})
	}()
	return func() { cancel(); <-done }
}

func TestSessionLifecycleAndAuth(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{})
	code, _, _ := br.req(t, "POST", "/api/v1/sessions", "", "")
	if code != http.StatusUnauthorized {
		t.Fatalf("open without the admin token: %d", code)
	}
	code, body, hdr := br.req(t, "POST", "/api/v1/sessions", token, `{"principal":"user:bob"}`)
	if code != http.StatusCreated || body["sessionId"] == "" || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("open: %d %v", code, body)
	}
	id, tok := body["sessionId"].(string), body["sessionToken"].(string)
	other := br.open(t)
	events := "/api/v1/sessions/" + id + "/events"
	for _, tc := range []struct {
		name, bearer string
		status       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"admin token", token, http.StatusUnauthorized},
		{"forged token", id + ".forged", http.StatusUnauthorized},
	} {
		if code, body, _ := br.req(t, "GET", events, tc.bearer, ""); code != tc.status {
			t.Errorf("stream with %s: %d %v", tc.name, code, body)
		}
	}
	// Another tab's valid token does not open this tab's stream or tools.
	code, body, _ = br.req(t, "PUT", "/api/v1/sessions/"+id+"/tools", other.SessionToken, `{"tools":[]}`)
	if code != http.StatusUnauthorized {
		t.Fatalf("another tab's token on this tab's tools: %d %v", code, body)
	}
	// Delete: another tab cannot; the tab itself can, twice; then it is gone.
	if code, _, _ := br.req(t, "DELETE", "/api/v1/sessions/"+id, other.SessionToken, ""); code != http.StatusUnauthorized {
		t.Fatalf("delete with another tab's token: %d", code)
	}
	for range 2 {
		if code, body, _ := br.req(t, "DELETE", "/api/v1/sessions/"+id, tok, ""); code != http.StatusNoContent {
			t.Fatalf("delete by its own tab: %d %v", code, body)
		}
	}
	if code, body, _ := br.req(t, "GET", events, tok, ""); code != http.StatusGone || codeOf(body) != "SESSION_GONE" {
		t.Fatalf("stream of a closed session: %d %v", code, body)
	}
	if err := br.admin.CloseSession(context.Background(), other.SessionID); err != nil {
		t.Fatalf("admin closes a session: %v", err)
	}
	if err := br.admin.CloseSession(context.Background(), "ses_nope"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("close unknown: %v", err)
	}
}

func TestAdvertiseOverHTTP(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{})
	ctx := context.Background()
	tab := br.tab(t)
	bad := navTool
	bad.Class = switchboard.ClassMutate
	_, err := tab.Advertise(ctx, []switchboard.Tool{navTool, bad})
	if switchboard.CodeOf(err) != switchboard.CodeExemptionViolation {
		t.Fatalf("mutate browser tool: %v", err)
	}
	noClaim := navTool
	noClaim.ViewStateOnly = false
	if _, err := tab.Advertise(ctx, []switchboard.Tool{noClaim}); switchboard.CodeOf(err) != switchboard.CodeExemptionViolation {
		t.Fatalf("missing viewStateOnly: %v", err)
	}
	// A catalog api tool of the same name stays listed: a tab's tool under
	// an api tool's name is seen by no one (internal/registry/shadow.go; the daemon
	// also refuses the advertisement, which this server is not wired to).
	api := switchboard.Tool{Name: "nav.goto", Description: "Catalog version.", Class: switchboard.ClassRead}
	other := switchboard.Tool{Name: "tasks.list", Description: "List tasks.", Class: switchboard.ClassRead}
	if _, err := br.admin.RegisterTools(ctx, "", []switchboard.Tool{api, other}); err != nil {
		t.Fatal(err)
	}
	s, err := tab.Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := tab.Advertise(ctx, []switchboard.Tool{navTool}); err != nil {
		t.Fatal(err)
	}
	m, err := br.admin.ListTools(ctx, client.ListOptions{SessionID: tab.ID})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range m.Tools {
		got = append(got, string(tl.Surface)+":"+tl.Name)
	}
	if fmt.Sprint(got) != "[api:nav.goto api:tasks.list]" {
		t.Fatalf("listing with the session: %v", got)
	}
	if tools, err := br.admin.SessionTools(ctx, tab.ID); err != nil || len(tools) != 1 || tools[0].Origin.SessionID != tab.ID {
		t.Fatalf("session tools: %v %v", tools, err)
	}
	if _, err := br.admin.ListTools(ctx, client.ListOptions{SessionID: "ses_nope"}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("unknown session listing: %v", err)
	}
}

func TestCallThroughTheAPI(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{})
	ctx := context.Background()
	// A name no catalog and no tab knows is TOOL_NOT_FOUND (the broker's
	// rule); a browser tool the catalog declares but no tab has mounted is
	// TOOL_UNAVAILABLE.
	_, err := br.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"x"}`), client.CallOptions{})
	if switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("unknown everywhere: %v", err)
	}
	declared := navTool
	declared.Name, declared.Surface = "ui.focus", switchboard.SurfaceBrowser
	if _, err := br.admin.RegisterTools(ctx, "", []switchboard.Tool{declared}); err != nil {
		t.Fatal(err)
	}
	if _, err := br.admin.CallTool(ctx, "ui.focus", json.RawMessage(`{"page":"x"}`), client.CallOptions{}); switchboard.CodeOf(err) != switchboard.CodeToolUnavailable {
		t.Fatalf("declared browser tool, no tab: %v", err)
	}
	tab := br.tab(t)
	stop := serveTab(t, tab)
	defer stop()
	waitLive(t, br, 1)
	resp, err := br.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"media"}`), client.CallOptions{SessionID: tab.ID})
	if err != nil || resp.Status != switchboard.StatusSucceeded || string(resp.Result) != `{"page":"media"}` {
		t.Fatalf("call: %+v %v", resp, err)
	}
	// The only live tab is found without naming it.
	if resp, err := br.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"settings"}`), client.CallOptions{}); err != nil || string(resp.Result) != `{"page":"settings"}` {
		t.Fatalf("implicit session: %+v %v", resp, err)
	}
	resp, err = br.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"missing"}`), client.CallOptions{SessionID: tab.ID})
	if switchboard.CodeOf(err) != switchboard.CodeNotFound || resp.Status != switchboard.StatusFailed {
		t.Fatalf("tab error: %+v %v", resp, err)
	}
	resp, err = br.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"bad"}`), client.CallOptions{SessionID: tab.ID})
	if switchboard.CodeOf(err) != switchboard.CodeSchemaViolation || resp.Status != switchboard.StatusFailed {
		t.Fatalf("result breaking the outputSchema: %+v %v", resp, err)
	}
	_, err = br.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{}`), client.CallOptions{SessionID: tab.ID})
	if switchboard.CodeOf(err) != switchboard.CodeSchemaViolation {
		t.Fatalf("input breaking the inputSchema: %v", err)
	}
	inv, err := br.admin.GetInvocation(ctx, resp.InvocationID)
	if err != nil || inv.SessionID != tab.ID || inv.Surface != switchboard.SurfaceBrowser {
		t.Fatalf("record: %+v %v", inv, err)
	}
}

func waitLive(t *testing.T, br *bridge, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for br.sess.Live() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d live sessions, want %d", br.sess.Live(), n)
		}
		time.Sleep(time.Millisecond) // polling a condition the stream sets from another goroutine
	}
}

// The return path's failure cases, over HTTP.
func TestReturnPath(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{session: session.Options{MaxResultBytes: 1 << 10}})
	ctx := context.Background()
	cred, _ := br.admin.CreateSession(ctx, "")
	tab := br.admin.Tab(cred)
	otherCred, _ := br.admin.CreateSession(ctx, "")
	if _, err := tab.Advertise(ctx, []switchboard.Tool{navTool, {Name: "ui.slow", Description: "Never answers.", Class: "ui", ViewStateOnly: true, TimeoutMs: 200}}); err != nil {
		t.Fatal(err)
	}
	s, err := tab.Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call := func(tool, input string) <-chan switchboard.CallResponse {
		ch := make(chan switchboard.CallResponse, 1)
		go func() {
			resp, _ := br.admin.CallTool(ctx, tool, json.RawMessage(input), client.CallOptions{SessionID: cred.SessionID})
			ch <- resp
		}()
		return ch
	}
	nextReq := func() switchboard.BrowserActionRequest {
		for {
			ev, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == session.KindRequest {
				var req switchboard.BrowserActionRequest
				_ = json.Unmarshal(ev.Data, &req)
				return req
			}
		}
	}
	post := func(bearer, run, inv, body string) (int, map[string]any) {
		code, out, _ := br.req(t, "POST", "/api/v1/runs/"+run+"/actions/"+inv+"/result", bearer, body)
		return code, out
	}

	done := call("nav.goto", `{"page":"a"}`)
	req := nextReq()
	good := `{"protocolVersion":"` + switchboard.ProtocolVersion + `","invocationId":"` + req.InvocationID + `","ok":true,"result":{"page":"a"}}`
	for _, tc := range []struct {
		name, bearer, run, inv, body string
		status                       int
		code                         string
	}{
		{"no token", "", req.RunID, req.InvocationID, good, 401, "UNAUTHORIZED"},
		{"admin token", token, req.RunID, req.InvocationID, good, 401, "UNAUTHORIZED"},
		{"another tab", otherCred.SessionToken, req.RunID, req.InvocationID, good, 404, "NOT_FOUND"},
		{"guessed invocation", cred.SessionToken, req.RunID, broker.NewID(), good, 404, "NOT_FOUND"},
		{"wrong run", cred.SessionToken, broker.NewID(), req.InvocationID, good, 404, "NOT_FOUND"},
		{"not JSON", cred.SessionToken, req.RunID, req.InvocationID, `{"ok":`, 400, "INVALID_INPUT"},
		{"unknown field", cred.SessionToken, req.RunID, req.InvocationID, `{"ok":true,"result":1,"extra":1}`, 400, "INVALID_INPUT"},
	} {
		if code, body := post(tc.bearer, tc.run, tc.inv, tc.body); code != tc.status || codeOf(body) != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, code, body, tc.status, tc.code)
		}
	}
	if code, body := post(cred.SessionToken, req.RunID, req.InvocationID, good); code != 200 || body["status"] != "succeeded" {
		t.Fatalf("the right tab: %d %v", code, body)
	}
	if resp := <-done; resp.Status != switchboard.StatusSucceeded {
		t.Fatalf("caller: %+v", resp)
	}
	if code, _ := post(cred.SessionToken, req.RunID, req.InvocationID, good); code != 200 {
		t.Fatalf("the same result twice: %d", code)
	}
	diff := strings.Replace(good, `"page":"a"`, `"page":"b"`, 1)
	if code, body := post(cred.SessionToken, req.RunID, req.InvocationID, diff); code != 422 || codeOf(body) != "IDEMPOTENCY_CONFLICT" {
		t.Fatalf("a different result: %d %v", code, body)
	}

	// Oversize: 413, and the caller hears PAYLOAD_TOO_LARGE at once.
	done = call("nav.goto", `{"page":"big"}`)
	req = nextReq()
	big := `{"ok":true,"result":{"page":"` + strings.Repeat("x", 2<<10) + `"}}`
	if code, body := post(cred.SessionToken, req.RunID, req.InvocationID, big); code != 413 || codeOf(body) != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("oversize: %d %v", code, body)
	}
	if resp := <-done; resp.Error == nil || resp.Error.Code != switchboard.CodePayloadTooLarge {
		t.Fatalf("caller after oversize: %+v", resp)
	}

	// A silent tab: TIMEOUT for the caller, then the late POST gets 409 with
	// the final state.
	done = call("ui.slow", `{}`)
	req = nextReq()
	if resp := <-done; resp.Status != switchboard.StatusTimedOut || resp.Error.Code != switchboard.CodeTimeout {
		t.Fatalf("silent tab: %+v", resp)
	}
	for range 2 {
		code, body := post(cred.SessionToken, req.RunID, req.InvocationID, `{"ok":true,"result":null}`)
		details, _ := body["error"].(map[string]any)["details"].(map[string]any)
		if code != 409 || codeOf(body) != "CONFLICT" || details["status"] != "timed_out" {
			t.Fatalf("late result: %d %v", code, body)
		}
	}
}

// RELIABILITY row 15 over HTTP: the stream is cut and resumed with
// Last-Event-ID; keep-alive comments flow while idle.
func TestStreamResumeAndHeartbeats(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{session: session.Options{Heartbeat: 20 * time.Millisecond, Grace: time.Minute}})
	ctx := context.Background()
	cred, _ := br.admin.CreateSession(ctx, "")
	tab := br.admin.Tab(cred)
	_, _ = tab.Advertise(ctx, []switchboard.Tool{navTool})

	// Raw frames: session.ready first (no id), then heartbeats.
	r, _ := http.NewRequest("GET", br.srv.URL+"/api/v1/sessions/"+cred.SessionID+"/events", nil)
	r.Header.Set("Authorization", "Bearer "+cred.SessionToken)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	rd := bufio.NewReader(resp.Body)
	var lines []string
	for len(lines) < 5 {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	if lines[0] != "event: session.ready" || !strings.HasPrefix(lines[1], "data: {") || lines[2] != "" || lines[3] != ": heartbeat" {
		t.Fatalf("stream starts %q", lines)
	}
	resp.Body.Close()

	// Dispatch three calls; read one; cut; two more while cut; resume.
	var calls []<-chan struct{}
	call := func(page string) {
		ch := make(chan struct{})
		calls = append(calls, ch)
		go func() {
			defer close(ch)
			_, _ = br.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"`+page+`"}`), client.CallOptions{SessionID: cred.SessionID})
		}()
	}
	s, err := tab.Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	read := func(s *client.EventStream, n int) {
		for n > 0 {
			ev, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == session.KindRequest {
				var req switchboard.BrowserActionRequest
				_ = json.Unmarshal(ev.Data, &req)
				seen[req.InvocationID]++
				n--
			}
		}
	}
	call("p1")
	read(s, 1)
	last := s.LastEventID()
	s.Close()
	call("p2")
	call("p3")
	waitLogged(t, br, cred.SessionID, 2)
	s, err = tab.Events(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	read(s, 2)
	if len(seen) != 3 {
		t.Fatalf("after resume saw %v: want three distinct requests", seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("request %s delivered %d times", id, n)
		}
	}
	s.Close()
	_ = br.sess.Close(ctx, cred.SessionID) // the waiting calls end with SESSION_GONE
	for _, ch := range calls {
		<-ch
	}
}

// waitLogged waits until n requests are open for session id (dispatch is
// asynchronous to the HTTP call).
func waitLogged(t *testing.T, br *bridge, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for br.sess.Open(id) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d open requests, want %d", br.sess.Open(id), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// RELIABILITY row 16 over HTTP: a reader that stops reading is
// disconnected once its backlog passes the bound, and its handler returns.
func TestSlowReaderOverHTTP(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{session: session.Options{MaxQueued: 4}, smallSend: true})
	ctx := context.Background()
	cred, _ := br.admin.CreateSession(ctx, "")
	tab := br.admin.Tab(cred)
	big := navTool
	big.InputSchema = nil
	big.OutputSchema = nil
	_, _ = tab.Advertise(ctx, []switchboard.Tool{big})

	conn, err := net.Dial("tcp", br.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(conn, "GET /api/v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", cred.SessionID, cred.SessionToken)
	status, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.Contains(status, "200") {
		t.Fatalf("stream: %q", status)
	}
	waitLive(t, br, 1)
	// Now stop reading, and dispatch far more than the buffers hold.
	payload := strings.Repeat("x", 64<<10)
	var wg sync.WaitGroup
	cctx, cancel := context.WithCancel(ctx)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = br.admin.CallTool(cctx, "nav.goto", json.RawMessage(`{"page":"`+payload+`"}`), client.CallOptions{SessionID: cred.SessionID})
		}()
	}
	// The server closes the slow stream's connection: a signal, not a sleep.
	select {
	case <-br.closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow reader was never disconnected")
	}
	cancel()
	wg.Wait()
}

// CORS: with --allow-origin, preflights are answered for allowed origins
// and refused for all others, on the session routes too.
func TestSessionCORS(t *testing.T) {
	t.Parallel()
	br := newBridge(t, bridgeOpts{origins: []string{"https://app.example.com"}})
	cred := br.open(t)
	tab := br.admin.Tab(cred)
	for _, path := range []string{
		"/api/v1/sessions/" + tab.ID + "/events",
		"/api/v1/sessions/" + tab.ID + "/tools",
		"/api/v1/runs/r/actions/i/result",
	} {
		code, _, hdr := br.req(t, "OPTIONS", path, "", "", "Origin", "https://app.example.com",
			"Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "authorization, content-type, last-event-id")
		if code != http.StatusNoContent || hdr.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
			!strings.Contains(hdr.Get("Access-Control-Allow-Headers"), "Authorization") ||
			!strings.Contains(hdr.Get("Access-Control-Allow-Headers"), "Last-Event-ID") {
			t.Errorf("preflight from the allowed origin on %s: %d %v", path, code, hdr)
		}
		code, body, hdr := br.req(t, "OPTIONS", path, "", "", "Origin", "https://evil.example",
			"Access-Control-Request-Method", "PUT")
		if code != http.StatusForbidden || codeOf(body) != "ORIGIN_REJECTED" || hdr.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from another origin on %s: %d %v", path, code, body)
		}
	}
	code, body, hdr := br.req(t, "PUT", "/api/v1/sessions/"+tab.ID+"/tools", cred.SessionToken, `{"tools":[]}`, "Origin", "https://evil.example")
	if code != http.StatusForbidden || codeOf(body) != "ORIGIN_REJECTED" || hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a request from another origin: %d %v", code, body)
	}
}
