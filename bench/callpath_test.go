package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestCallPath measures the call path against its baselines (issue 15's
// four targets) and logs one markdown row a compared path, the rows of
// bench/README.md's "Call path" table:
//
//	go test -count=1 ./bench -run 'TestCallPath$' -v -timeout 30m
//	go test -count=1 ./bench -run 'TestCallPath$/mcp' -v         # one family
//	SWITCHBOARD_BENCH_N=3000 SWITCHBOARD_BENCH_ROUNDS=5 go test …  # bigger runs
//	SWITCHBOARD_BENCH_PROFILE=/tmp/prof go test …   # + where the time goes
//
// scripts/bench-callpath.sh runs it and prints just the rows. Each case is
// a comparison (harness_test.go): the baseline and the paths compared with
// it, interleaved in one run, three rounds, min/median/max.
//
// Named in -run it measures; otherwise (go test ./bench, CI) every case runs
// once with a handful of calls and at most 4 in flight, so the harness and
// every path it drives keep working, without timing anything. -short skips
// even that.
func TestCallPath(t *testing.T) {
	heavy := strings.Contains(testRunFlag(), "TestCallPath")
	if !heavy && testing.Short() {
		t.Skip("smoke run skipped in -short")
	}
	if heavy {
		t.Logf("machine: %d CPUs (GOMAXPROCS %d), %s %s/%s; %s", runtime.NumCPU(), runtime.GOMAXPROCS(0),
			runtime.Version(), runtime.GOOS, runtime.GOARCH, loadAverage())
		for _, h := range strings.Split(callPathHeader, "\n") {
			t.Log("callpath-row: " + h)
		}
	}
	for _, c := range callPathCases() {
		t.Run(fmt.Sprintf("%s/inflight=%d", c.family, c.inflight), func(t *testing.T) {
			inflight, n, rounds, warm := c.inflight, 0, 0, 0
			if heavy {
				n, rounds = benchSize(c.n, inflight)
				warm = min(n, 500)
			} else {
				inflight, n, rounds, warm = min(inflight, 4), 12, 1, 4
			}
			sides := c.setup(t)
			cmp := runComparison(t, n, inflight, rounds, warm, sides...)
			if !heavy {
				return
			}
			t.Logf("%s at %d in flight, %d calls a side × %d rounds; %s", c.family, inflight, n, rounds, loadAverage())
			for s := 1; s < len(sides); s++ {
				t.Log("callpath-row: " + c.row(cmp, s))
			}
			if dir := os.Getenv("SWITCHBOARD_BENCH_PROFILE"); dir != "" {
				profileSide(t, dir, c.family, inflight, n, sides[1])
			}
		})
	}
}

const callPathHeader = "| path | in flight | baseline | baseline p50 µs | path p50 µs | p50 ratio | added p50 µs | baseline calls/s | path calls/s | baseline/path calls/s | target | result |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|"

// callPathCase is one comparison: setup builds the sides (sides[0] the
// baseline, sides[1] the path the target is about, later sides the
// breakdown), target judges sides[1].
type callPathCase struct {
	family   string
	inflight int
	n        int // default calls a side and round
	setup    func(testing.TB) []side
	target   string                // as issue 15 states it
	met      func(comparison) bool // judged on the medians
}

func (c callPathCase) row(cmp comparison, s int) string {
	target, result := "—", "—"
	if s == 1 && c.target != "" {
		target, result = c.target, "**miss**"
		if c.met(cmp) {
			result = "pass"
		}
	}
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s× | %s | %s | %s | %s× | %s | %s |",
		cmp.sides[s], cmp.inflight, cmp.sides[0], fmtMMM(cmp.p50(0), 0), fmtMMM(cmp.p50(s), 0),
		fmtMMM(cmp.p50Ratio(s), 2), fmtMMM(cmp.added(s), 0),
		fmtRate(cmp.perSec(0)), fmtRate(cmp.perSec(s)), fmtMMM(cmp.slowdown(s), 2), target, result)
}

func callPathCases() []callPathCase {
	return []callPathCase{
		{family: "gofunc", inflight: 1, n: 3000, setup: goFuncSides,
			target: "added p50 < 60 µs", met: func(c comparison) bool { return c.added(1).med < 60 }},
		{family: "gofunc", inflight: 64, n: 10000, setup: goFuncSides,
			target: "≥ 10,000 calls/s", met: func(c comparison) bool { return c.perSec(1).med >= 10_000 }},
		{family: "gofunc-pg", inflight: 1, n: 2000, setup: goFuncPGSides,
			target: "added p50 < 60 µs", met: func(c comparison) bool { return c.added(1).med < 60 }},
		{family: "gofunc-pg", inflight: 64, n: 5000, setup: goFuncPGSides,
			target: "≥ 10,000 calls/s", met: func(c comparison) bool { return c.perSec(1).med >= 10_000 }},
		{family: "http", inflight: 1, n: 2000, setup: httpSides(0),
			target: "p50 ≤ 3×", met: func(c comparison) bool { return c.p50Ratio(1).med <= 3 }},
		{family: "http", inflight: 64, n: 5000, setup: httpSides(0),
			target: "calls/s ≥ bare / 6", met: func(c comparison) bool { return c.slowdown(1).med <= 6 }},
		{family: "http-0.5ms", inflight: 1, n: 1000, setup: httpSides(500 * time.Microsecond),
			target: "p50 ≤ 1.3×", met: func(c comparison) bool { return c.p50Ratio(1).med <= 1.3 }},
		{family: "http-0.5ms", inflight: 64, n: 5000, setup: httpSides(500 * time.Microsecond)},
		{family: "mcp", inflight: 1, n: 2000, setup: mcpSides,
			target: "p50 ≤ 1.25×", met: func(c comparison) bool { return c.p50Ratio(1).med <= 1.25 }},
		{family: "mcp", inflight: 64, n: 5000, setup: mcpSides,
			target: "p50 ≤ 1.25×", met: func(c comparison) bool { return c.p50Ratio(1).med <= 1.25 }},
		{family: "mcp-stateless", inflight: 1, n: 2000, setup: mcpStatelessSides,
			target: "p50 ≤ 1.25×", met: func(c comparison) bool { return c.p50Ratio(1).med <= 1.25 }},
		{family: "mcp-stateless", inflight: 64, n: 5000, setup: mcpStatelessSides,
			target: "p50 ≤ 1.25×", met: func(c comparison) bool { return c.p50Ratio(1).med <= 1.25 }},
		{family: "browser", inflight: 1, n: 2000, setup: browserSides,
			target: "p50 ≤ 2×", met: func(c comparison) bool { return c.p50Ratio(1).med <= 2 }},
		{family: "browser", inflight: 256, n: 10000, setup: browserSides,
			target: "≥ 4,000 round trips/s", met: func(c comparison) bool { return c.perSec(1).med >= 4000 }},
	}
}

// loadAverage is /proc/loadavg's first three fields, for the log.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// benchCaller is the caller of the benchmarks' broker calls.
var benchCaller = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}

var benchAdmin = switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})

// goFuncSides: the function called directly (and its result encoded, as
// the broker does), the same function as a Go-function tool through
// broker.Call in process, and the store writes one call makes, straight on
// a second SQLite file (the floor under the broker's overhead).
func goFuncSides(tb testing.TB) []side {
	br, reg := brokerEnv(tb)
	if _, err := reg.Register(benchAdmin, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
	}}); err != nil {
		tb.Fatal(err)
	}
	br.Handle("tasks.create", brokerCreateTask)
	// The same work as a read tool: recorded in one transaction at its end
	// (broker RecordAfter), where a mutate call's started record is
	// committed before it runs.
	if _, err := reg.Register(benchAdmin, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.preview", Description: "Preview a task.", Class: switchboard.ClassRead,
		InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
	}}); err != nil {
		tb.Fatal(err)
	}
	br.Handle("tasks.preview", brokerCreateTask)
	readReq := broker.CallRequest{Tool: "tasks.preview", Input: brokerInput, Caller: &benchCaller}
	floor, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "floor.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { floor.Close() })
	writes := callWritesErr(floor)
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: &benchCaller}
	return []side{
		{"function called directly", func(ctx context.Context) error {
			v, err := brokerCreateTask(ctx, brokerInput)
			if err == nil {
				_, err = json.Marshal(v)
			}
			return err
		}},
		{"Go-function tool via broker.Call", func(context.Context) error {
			_, err := br.Call(benchAdmin, req)
			return err
		}},
		{"its store writes alone (create; finish + ledger)", func(context.Context) error { return writes() }},
		{"the same function as a read tool (one transaction)", func(context.Context) error {
			_, err := br.Call(benchAdmin, readReq)
			return err
		}},
	}
}

// benchDaemon is a daemon over a SQLite file in WAL mode, served on
// loopback, with an admin client whose transport keeps enough idle
// connections for 256 callers.
func benchDaemon(tb testing.TB) (*daemon.Daemon, *client.Client) {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "bench.db"), nil)
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
	return d, client.New(srv.URL, bridgeToken, &client.Options{HTTPClient: bridgeHTTPClient()})
}

// httpSides: an HTTP backend (in process, answering at once, or after
// work: a sleep, standing for a backend that waits on its own database)
// called directly with net/http, and the same backend as an HTTP-bound
// tool called through the daemon's HTTP API (client → httpapi → broker →
// the binding → the backend and back, with the invocation record and the
// ledger entry on SQLite).
func httpSides(work time.Duration) func(testing.TB) []side {
	return func(tb testing.TB) []side {
		backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if work > 0 {
				time.Sleep(work)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"id":"t1","projectId":"` + r.PathValue("p") + `","echo":`))
			w.Write(body)
			w.Write([]byte(`}`))
		}))
		tb.Cleanup(backend.Close)
		_, admin := benchDaemon(tb)
		if _, err := admin.RegisterTools(context.Background(), switchboard.SourceHost, []switchboard.Tool{{
			Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
			InputSchema: brokerInputSchema,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{
				Method: "POST", URL: backend.URL + "/api/projects/{projectId}/tasks",
			}},
		}}); err != nil {
			tb.Fatal(err)
		}
		hc := bridgeHTTPClient() // the same pooled transport the daemon's callers get
		tb.Cleanup(hc.CloseIdleConnections)
		directBody := []byte(`{"priority":2,"title":"Write the broker benchmark"}`)
		backendName := "backend called directly (in process)"
		if work > 0 {
			backendName = fmt.Sprintf("backend called directly (%v of work)", work)
		}
		return []side{
			{backendName, func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, "POST", backend.URL+"/api/projects/p1/tasks", bytes.NewReader(directBody))
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					return err
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && !json.Valid(out) {
					err = fmt.Errorf("backend answered %s", out)
				}
				return err
			}},
			{"HTTP-bound tool via the HTTP API", func(ctx context.Context) error {
				resp, err := admin.CallTool(ctx, "tasks.create", brokerInput, client.CallOptions{})
				if err == nil && resp.Status != switchboard.StatusSucceeded {
					err = fmt.Errorf("status %s", resp.Status)
				}
				return err
			}},
		}
	}
}

// mcpSides: tools/call of the same Go function on a bare go-sdk server, on
// switchboard's /mcp (the real daemon, SQLite file), and on /mcp with the
// per-call writes discarded (what is left is the transport and the broker's
// logic), all through the go-sdk client over streamable HTTP.
func mcpSides(tb testing.TB) []side {
	return []side{
		{"bare go-sdk server", mcpCallOnce(mcpConnect(tb, mcpBare(tb)))},
		{"switchboard /mcp", mcpCallOnce(mcpConnect(tb, mcpSwitchboard(tb, "file")))},
		{"switchboard /mcp, store writes discarded", mcpCallOnce(mcpConnect(tb, mcpSwitchboard(tb, "none")))},
	}
}

// mcpStatelessSides are mcpSides over MCP 2026-07-28, which has no
// sessions: a bare go-sdk server on the SDK's stateless handler, and
// switchboard's /mcp, which serves that revision statelessly.
func mcpStatelessSides(tb testing.TB) []side {
	return []side{
		{"bare go-sdk server, stateless", mcpCallOnce(mcpConnectAt(tb, mcpBareStateless(tb), mcpStateless))},
		{"switchboard /mcp, 2026-07-28", mcpCallOnce(mcpConnectAt(tb, mcpSwitchboard(tb, "file"), mcpStateless))},
		{"switchboard /mcp, 2026-07-28, store writes discarded", mcpCallOnce(mcpConnectAt(tb, mcpSwitchboard(tb, "none"), mcpStateless))},
	}
}

// browserSides: the three-exchange floor (bridge_floor_test.go: a POST that
// pushes over SSE to a Go tab that POSTs the result back, no daemon), the
// daemon's real browser path (a Go tab on the session's SSE stream), one
// bare POST (the floor's floor), and a Go-function api tool through the
// same HTTP API (the daemon's call path without the browser hop).
func browserSides(tb testing.TB) []side {
	e := newBridgeEnv(tb, false)
	e.serveTab(tb)
	api := e.apiTool(tb)
	bare, stop := bareServer(tb)
	tb.Cleanup(stop)
	return []side{
		{"three-exchange floor (POST → SSE → POST back, no daemon)", newBridgeFloor(tb).call},
		{"browser round trip via the daemon", e.call},
		{"one bare POST", bare},
		{"Go-function api tool via the HTTP API", api},
	}
}
