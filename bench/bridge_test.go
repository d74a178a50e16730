package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The browser bridge benchmarks measure a browser action's whole round trip
// through the real daemon over loopback HTTP, with SQLite persistence on a
// file in WAL mode:
//
//	caller POST /api/v1/tools/nav.goto/call → broker records the invocation
//	→ session dispatches on the tab's SSE stream → a Go tab (client.Tab.Serve,
//	which behaves like the browser SDK) reads it and POSTs the result → the
//	return path records it → the caller wakes and gets its answer.
//
// Each is set against a bare net/http request/response on the same loopback
// in the same run. Run:
//
//	go test ./bench -run '^$' -bench Bridge -benchtime 3000x -count=1
//	go test ./bench -run 'TestBridgeIdleSessionMemory' -count=1 -v

const bridgeToken = "bench-admin-token"

type bridgeEnv struct {
	d     *daemon.Daemon
	srv   *httptest.Server
	admin *client.Client
	cred  client.SessionCredentials
}

// bridgeHTTPClient keeps enough idle connections for 256 callers.
func bridgeHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	return &http.Client{Transport: tr}
}

// newBridgeEnv runs a daemon over a SQLite file (memory: an in-memory
// SQLite database, to separate file I/O from the rest).
func newBridgeEnv(tb testing.TB, memory bool) *bridgeEnv {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "bench.db")
	if memory {
		path = sqlite.Memory
	}
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: bridgeToken})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	tb.Cleanup(func() {
		d.Close()
		srv.CloseClientConnections()
		srv.Close()
		st.Close()
	})
	e := &bridgeEnv{d: d, srv: srv, admin: client.New(srv.URL, bridgeToken, &client.Options{HTTPClient: bridgeHTTPClient()})}
	if e.cred, err = e.admin.CreateSession(ctx, "bench"); err != nil {
		tb.Fatal(err)
	}
	return e
}

// navBench is the tool the Go tab serves; maxConcurrency lets 256 calls be
// in flight on one tab. The timeout is raised from the default 30 s: on a
// machine at load 40, 256 in flight took longer than that (see the Call
// path section of README.md), and a throughput benchmark should report
// slowness, not fail on it.
var navBench = switchboard.Tool{
	TimeoutMs: 300_000,
	Name:      "nav.goto", Description: "Open a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
	InputSchema:    json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"},"id":{"type":"string"}},"required":["page"]}`),
	MaxConcurrency: 1024,
}

// serveTab runs the SDK-like Go tab: it answers each request with a small
// acknowledgement built from the input, as the demo's nav.goto does.
func (e *bridgeEnv) serveTab(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tab := e.admin.Tab(e.cred)
	if _, err := tab.Advertise(ctx, []switchboard.Tool{navBench}); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tab.Serve(ctx, func(_ context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error) {
			var in struct{ Page string }
			_ = json.Unmarshal(req.Input, &in)
			return json.RawMessage(`{"page":"` + in.Page + `","url":"/demo/` + in.Page + `","title":"Media library"}`), nil
		})
	}()
	tb.Cleanup(func() { cancel(); <-done })
	for { // the tab attaches asynchronously
		_, err := e.admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"media"}`), client.CallOptions{SessionID: e.cred.SessionID})
		if err == nil {
			return
		}
		if switchboard.CodeOf(err) != switchboard.CodeSessionGone {
			tb.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

var bridgeInput = json.RawMessage(`{"page":"media","id":"media-7"}`)

// apiTool registers a Go-function api tool with the same schema and answer
// as the tab's: the same HTTP call and broker path, minus the browser hop.
func (e *bridgeEnv) apiTool(tb testing.TB) func(context.Context) error {
	tb.Helper()
	t := navBench
	t.Name, t.Surface, t.Class, t.ViewStateOnly = "bench.goto", switchboard.SurfaceAPI, switchboard.ClassRead, false
	err := e.d.RegisterFunc(context.Background(), t, func(_ context.Context, in json.RawMessage) (any, error) {
		var v struct{ Page string }
		_ = json.Unmarshal(in, &v)
		return json.RawMessage(`{"page":"` + v.Page + `","url":"/demo/` + v.Page + `","title":"Media library"}`), nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return func(ctx context.Context) error {
		_, err := e.admin.CallTool(ctx, "bench.goto", bridgeInput, client.CallOptions{})
		return err
	}
}

func (e *bridgeEnv) call(ctx context.Context) error {
	resp, err := e.admin.CallTool(ctx, "nav.goto", bridgeInput, client.CallOptions{SessionID: e.cred.SessionID})
	if err == nil && resp.Status != switchboard.StatusSucceeded {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return err
}

// bareServer answers a JSON POST with a JSON body of the same shape as a
// call response: the floor for any request/response over loopback.
func bareServer(tb testing.TB) (func(context.Context) error, func()) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"invocationId":"0123456789abcdef0123456789abcdef","status":"succeeded","result":{"page":"media","url":"/demo/media","title":"Media library"}}` + "\n"))
	}))
	hc := bridgeHTTPClient()
	body := []byte(`{"input":{"page":"media","id":"media-7"},"sessionId":"ses_0123456789abcdef0123456789abcdef"}`)
	call := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/v1/tools/nav.goto/call", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bridgeToken)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		var out map[string]any
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		return err
	}
	return call, srv.Close
}

// measure runs n calls with inflight callers and returns every call's
// latency, sorted, and the wall time (harness_test.go's runBlock).
func measure(tb testing.TB, n, inflight int, call func(context.Context) error) ([]time.Duration, time.Duration) {
	tb.Helper()
	lat, wall, err := runBlock(context.Background(), n, inflight, call)
	if err != nil {
		tb.Fatal(err)
	}
	return lat, wall
}

func bridgePct(sorted []time.Duration, p float64) float64 {
	return float64(sorted[int(p*float64(len(sorted)-1))].Nanoseconds()) / 1e3
}

// BenchmarkBridge reports, per in-flight level, the browser action round
// trip, the same call of a Go-function api tool (the broker path without the
// browser hop) and the bare loopback round trip, measured back to back: p50
// and p99 in µs, throughput in round trips per second, and the p50 ratio of
// the browser round trip to the bare one. store=file is the target setup
// (SQLite persistence on); store=memory shows what file I/O costs.
func BenchmarkBridge(b *testing.B) {
	for _, c := range []struct {
		store    string
		inflight int
	}{{"file", 1}, {"file", 256}, {"memory", 1}} {
		inflight := c.inflight
		b.Run(fmt.Sprintf("store=%s/inflight=%d", c.store, inflight), func(b *testing.B) {
			e := newBridgeEnv(b, c.store == "memory")
			e.serveTab(b)
			api := e.apiTool(b)
			bare, stop := bareServer(b)
			defer stop()
			n := max(b.N, inflight)
			for _, f := range []func(context.Context) error{bare, api, e.call} { // warm every path
				measure(b, min(n, 2000), inflight, f)
			}
			b.ResetTimer()
			bareLat, bareWall := measure(b, n, inflight, bare)
			apiLat, apiWall := measure(b, n, inflight, api)
			lat, wall := measure(b, n, inflight, e.call)
			b.StopTimer()
			b.ReportMetric(bridgePct(apiLat, 0.5), "api-p50-µs")
			b.ReportMetric(bridgePct(apiLat, 0.99), "api-p99-µs")
			b.ReportMetric(float64(n)/apiWall.Seconds(), "api-rt/s")
			b.ReportMetric(bridgePct(bareLat, 0.5), "bare-p50-µs")
			b.ReportMetric(bridgePct(bareLat, 0.99), "bare-p99-µs")
			b.ReportMetric(float64(n)/bareWall.Seconds(), "bare-rt/s")
			b.ReportMetric(bridgePct(lat, 0.5), "p50-µs")
			b.ReportMetric(bridgePct(lat, 0.99), "p99-µs")
			b.ReportMetric(float64(n)/wall.Seconds(), "rt/s")
			b.ReportMetric(bridgePct(lat, 0.5)/bridgePct(bareLat, 0.5), "p50-ratio")
		})
	}
}

// TestBridgeIdleSessionMemory connects 1,000 tabs (each an SSE stream with
// five advertised tools, the demo's set) and reports the daemon's Go memory
// per idle connected session: heap in use plus goroutine stacks, after GC,
// with every session created but not connected as the baseline. The tabs'
// side is raw TCP connections in this process (no goroutine, a few hundred
// bytes each), so the figure is a slight overestimate.
func TestBridgeIdleSessionMemory(t *testing.T) {
	if !strings.Contains(testRunFlag(), "TestBridgeIdleSessionMemory") {
		t.Skip("run with -run TestBridgeIdleSessionMemory")
	}
	const n = 1000
	e := newBridgeEnv(t, false)
	ctx := context.Background()
	creds := make([]client.SessionCredentials, n)
	for i := range creds {
		var err error
		if creds[i], err = e.admin.CreateSession(ctx, "bench"); err != nil {
			t.Fatal(err)
		}
	}
	tools := demoLikeTools()
	addr := e.srv.Listener.Addr().String()
	before := goMemory()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, c := range creds {
		if _, err := e.admin.Tab(c).Advertise(ctx, tools); err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /api/v1/sessions/%s/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", c.SessionID, addr, c.SessionToken)
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, "200") {
			t.Fatalf("stream: %q %v", line, err)
		}
		conns = append(conns, conn)
	}
	e.admin = nil
	after := goMemory()
	per := float64(after-before) / n
	t.Logf("%d idle connected sessions: %.1f MiB of Go heap+stacks → %.1f KiB per session (target < 64 KiB); goroutines %d",
		n, float64(after-before)/(1<<20), per/1024, runtime.NumGoroutine())
}

func goMemory() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// demoLikeTools is the demo app's five browser tools, as the SDK sends them.
func demoLikeTools() []switchboard.Tool {
	target := `{"type":"string","description":"an element's data-target name (page.describe lists them)"}`
	obj := func(props, req string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":[` + req + `],"additionalProperties":false}`)
	}
	return []switchboard.Tool{
		{Name: "nav.goto", Class: "ui", ViewStateOnly: true, Description: "Open a page of the app: projects, media (the media library) or settings. With id, also highlight that item.",
			InputSchema:  obj(`"page":{"enum":["projects","media","settings"]},"id":{"type":"string"}`, `"page"`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"},"url":{"type":"string"},"title":{"type":"string"}},"required":["page","url"]}`)},
		{Name: "ui.scroll_to", Class: "ui", ViewStateOnly: true, Description: "Scroll an element of the current page into view.", InputSchema: obj(`"target":`+target, `"target"`)},
		{Name: "ui.focus", Class: "ui", ViewStateOnly: true, Description: "Move keyboard focus to an element of the current page.", InputSchema: obj(`"target":`+target, `"target"`)},
		{Name: "ui.select", Class: "ui", ViewStateOnly: true, Description: "Select a value in a dropdown of the current page, or an item of the media grid.",
			InputSchema: obj(`"target":`+target+`,"value":{"type":"string"}`, `"target","value"`)},
		{Name: "page.describe", Class: "read", ViewStateOnly: true, Description: "Describe the current page and the elements the ui tools can target.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
	}
}
