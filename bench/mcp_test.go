package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/benchkit"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The MCP benchmarks measure switchboard's /mcp against a bare go-sdk
// server exposing the same Go function, in the same run, over loopback
// streamable HTTP with the SDK's own client on both sides:
//
//	go test ./bench -run '^$' -bench MCPCall -benchtime 3000x -count=1
//	go test ./bench -run TestMCPListSize -count=1 -v
//
// The switchboard side is the real daemon (daemon.New: httpapi's Host and
// Origin checks, bearer auth, the MCP middleware, the broker with input
// validation, the invocation record and the ledger on a SQLite file in WAL
// mode, resumable streams). The bare side is mcp.AddTool with a typed
// input, which validates against the inferred schema, and the SDK's
// default streamable handler.

const mcpBenchToken = "bench-mcp-token"

type mcpBearer struct{ next http.RoundTripper }

func (t mcpBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+mcpBenchToken)
	return t.next.RoundTrip(r)
}

// MCP revisions a benchmark compares like for like: the bare go-sdk
// server's default handler speaks 2025-11-25 sessions only, and a client
// left to choose would speak 2026-07-28 (one stateless exchange a call,
// each building its server-side state again) to switchboard, which serves
// both — a different protocol, not a slower server.
const (
	mcpSessions  = "2025-11-25"
	mcpStateless = "2026-07-28"
)

// mcpConnect connects over 2025-11-25 sessions.
func mcpConnect(tb testing.TB, url string) *mcp.ClientSession {
	tb.Helper()
	return mcpConnectAt(tb, url, mcpSessions)
}

// mcpConnectAt connects speaking revision and fails unless the server
// speaks it too.
func mcpConnectAt(tb testing.TB, url, revision string) *mcp.ClientSession {
	tb.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: mcpBearer{tr}}},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		tb.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != revision {
		tb.Fatalf("%s speaks MCP %s, not %s", url, got, revision)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// mcpSwitchboard serves the daemon with tasks.create as a Go function, over
// a SQLite file; store "memory" uses an in-memory database (no file I/O)
// and "none" discards the per-call writes (record and ledger), which leaves
// what the transport and the broker's logic cost.
func mcpSwitchboard(tb testing.TB, store string) string {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "bench.db")
	if store != "file" {
		path = sqlite.Memory
	}
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	var s switchboard.Store = st
	if store == "none" {
		s = discardWrites{st}
	}
	d, err := daemon.New(ctx, daemon.Options{Store: s, AdminToken: mcpBenchToken, AllowHosts: []string{"127.0.0.1"}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.RegisterFunc(ctx, switchboard.Tool{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: brokerInputSchema,
	}, brokerCreateTask); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	tb.Cleanup(func() { srv.Close(); d.Close() })
	return srv.URL + "/mcp"
}

type mcpTaskIn struct {
	ProjectID string `json:"projectId"`
	Title     string `json:"title"`
	Priority  int    `json:"priority,omitempty"`
}

// mcpBare serves the same function from a bare go-sdk server, with the
// same input schema (which the SDK validates), on the SDK's default
// (session) handler.
func mcpBare(tb testing.TB) string {
	tb.Helper()
	return mcpBareWith(tb, nil)
}

// mcpBareStateless is mcpBare on the SDK's stateless handler, which
// serves 2026-07-28.
func mcpBareStateless(tb testing.TB) string {
	tb.Helper()
	return mcpBareWith(tb, &mcp.StreamableHTTPOptions{Stateless: true})
}

func mcpBareWith(tb testing.TB, opts *mcp.StreamableHTTPOptions) string {
	tb.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "tasks-create", Description: "Create a task.", InputSchema: brokerInputSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpTaskIn) (*mcp.CallToolResult, any, error) {
			raw, _ := json.Marshal(in)
			v, err := brokerCreateTask(ctx, raw)
			if err != nil {
				return nil, nil, err
			}
			out, err := json.Marshal(v)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts))
	tb.Cleanup(srv.Close)
	return srv.URL
}

func mcpCallOnce(cs *mcp.ClientSession) func(context.Context) error {
	args := map[string]any{"projectId": "p1", "title": "Write the broker benchmark", "priority": 2}
	return func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tasks-create", Arguments: args})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		return err
	}
}

// BenchmarkMCPCall: tools/call of one Go-function tool, switchboard vs the
// bare SDK server. inflight=1 interleaves the two call by call (p50 target:
// switchboard ≤ 1.25× bare); inflight=8 measures throughput back to back.
// store=memory keeps the invocation record and ledger in an in-memory
// SQLite database and store=none skips those writes, which splits the
// overhead into persistence and everything else.
func BenchmarkMCPCall(b *testing.B) {
	for _, c := range []struct {
		store    string
		inflight int
	}{{"file", 1}, {"file", 8}, {"memory", 1}, {"none", 1}} {
		inflight := c.inflight
		b.Run(fmt.Sprintf("store=%s/inflight=%d", c.store, inflight), func(b *testing.B) {
			sb := mcpCallOnce(mcpConnect(b, mcpSwitchboard(b, c.store)))
			bare := mcpCallOnce(mcpConnect(b, mcpBare(b)))
			ctx := context.Background()
			n := max(b.N, inflight)
			for _, f := range []func(context.Context) error{bare, sb} {
				measure(b, min(n, 1000), inflight, f) // warm connections, caches, the WAL
			}
			b.ResetTimer()
			var sbLat, bareLat brokerDurations
			var sbWall, bareWall time.Duration
			if inflight == 1 {
				for range n {
					t0 := time.Now()
					if err := bare(ctx); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := sb(ctx); err != nil {
						b.Fatal(err)
					}
					t2 := time.Now()
					bareLat, sbLat = append(bareLat, t1.Sub(t0)), append(sbLat, t2.Sub(t1))
					bareWall, sbWall = bareWall+t1.Sub(t0), sbWall+t2.Sub(t1)
				}
			} else {
				bareLat, bareWall = measure(b, n, inflight, bare)
				sbLat, sbWall = measure(b, n, inflight, sb)
			}
			b.StopTimer()
			b.ReportMetric(brokerUS(bareLat.pct(0.5)), "bare-p50-µs")
			b.ReportMetric(brokerUS(sbLat.pct(0.5)), "sb-p50-µs")
			b.ReportMetric(brokerUS(bareLat.pct(0.99)), "bare-p99-µs")
			b.ReportMetric(brokerUS(sbLat.pct(0.99)), "sb-p99-µs")
			b.ReportMetric(float64(n)/bareWall.Seconds(), "bare-calls/s")
			b.ReportMetric(float64(n)/sbWall.Seconds(), "sb-calls/s")
			b.ReportMetric(float64(sbLat.pct(0.5))/float64(bareLat.pct(0.5)), "p50-ratio")
		})
	}
}

// TestMCPListSize reports what tools/list costs a model in each listing
// mode: the JSON of every listed tool (all pages), in o200k_base tokens
// (the tokenizer of manifest_test.go) and bytes, at 50, 500 and 5,000 tools
// of the synthetic catalog, plus one deferred search page.
func TestMCPListSize(t *testing.T) {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	count := func(b []byte) int {
		ids, _, err := enc.Encode(string(b))
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	var out strings.Builder
	out.WriteString("\n| tools | full: tokens | full: bytes | deferred: tokens | deferred: bytes | deferred/full | one search page (10 hits): tokens |\n|---|---|---|---|---|---|---|\n")
	for _, n := range []int{50, 500, 5000} {
		ctx := context.Background()
		st, err := sqlite.Open(ctx, sqlite.Memory, nil)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := registry.New(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Register(ctx, switchboard.SourceHost, benchkit.SyntheticCatalog(n, 1)); err != nil {
			t.Fatal(err)
		}
		d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpBenchToken})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(d.Handler())
		sizes := map[mcpserver.Mode][2]int{}
		var searchTokens int
		for _, mode := range []mcpserver.Mode{mcpserver.ModeFull, mcpserver.ModeDeferred} {
			cs := mcpConnect(t, srv.URL+"/mcp?mode="+string(mode))
			var all []*mcp.Tool
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, tool)
			}
			b, _ := json.Marshal(all)
			sizes[mode] = [2]int{count(b), len(b)}
			if mode == mcpserver.ModeDeferred {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "switchboard_search", Arguments: map[string]any{"query": "export the archived invoices"}})
				if err != nil || res.IsError {
					t.Fatalf("search: %v %+v", err, res)
				}
				rb, _ := json.Marshal(res.Content)
				searchTokens = count(rb)
			}
			cs.Close()
		}
		full, def := sizes[mcpserver.ModeFull], sizes[mcpserver.ModeDeferred]
		fmt.Fprintf(&out, "| %d | %d | %d | %d | %d | %.1f%% | %d |\n", n, full[0], full[1], def[0], def[1], 100*float64(def[0])/float64(full[0]), searchTokens)
		srv.Close()
		d.Close()
		st.Close()
	}
	t.Log(out.String())
}
