package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The broker benchmarks measure what the one call path adds to a call:
// resolution, input validation, the invocation record (create + terminal
// compare-and-swap on a real SQLite file in WAL mode), the ledger append and
// output handling. Each benchmark times every call on its own and reports
// percentiles, because the targets are stated at p50:
//
//	go test ./bench -run '^$' -bench Broker -benchtime 3000x
//
// BenchmarkBrokerGoFunc: a Go-function tool through the broker against the
// same function called directly (target: < 100 µs added at p50).
// BenchmarkBrokerHTTP: an HTTP-bound tool against the same local backend
// called directly with net/http, interleaved in one run (target: ≤ 1.3×
// direct at p50).
//
// writes-p50-µs is the floor: the same store writes (create, then finish
// with the ledger entry) made straight on a second SQLite file in the same
// loop, without the broker.

// brokerEnv is a broker over a SQLite file under dir.
func brokerEnv(b testing.TB) (*broker.Broker, *registry.Registry) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	br := broker.New(broker.Options{Store: st, Registry: reg})
	b.Cleanup(br.Close)
	return br, reg
}

var brokerInputSchema = json.RawMessage(`{"type":"object","properties":{"projectId":{"type":"string"},"title":{"type":"string","maxLength":200},"priority":{"type":"integer","minimum":1,"maximum":5}},"required":["projectId","title"]}`)

var brokerInput = json.RawMessage(`{"projectId":"p1","title":"Write the broker benchmark","priority":2}`)

// brokerCreateTask is the work of the Go-function tool: decode, build, return.
func brokerCreateTask(_ context.Context, in json.RawMessage) (any, error) {
	var v struct {
		ProjectID string `json:"projectId"`
		Title     string `json:"title"`
		Priority  int    `json:"priority"`
	}
	if err := json.Unmarshal(in, &v); err != nil {
		return nil, err
	}
	return map[string]any{"id": "t1", "projectId": v.ProjectID, "title": v.Title, "priority": v.Priority, "done": false}, nil
}

// brokerDurations collects per-call timings and reports percentiles.
type brokerDurations []time.Duration

func (d brokerDurations) pct(p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(p * float64(len(s)-1))
	return s[i]
}

func brokerUS(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func BenchmarkBrokerGoFunc(b *testing.B) {
	br, reg := brokerEnv(b)
	ctx := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
	}}); err != nil {
		b.Fatal(err)
	}
	br.Handle("tasks.create", brokerCreateTask)
	floor := storeWrites(b)
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: &benchCaller}
	for range 200 { // warm caches, the WAL and the connection pools
		if _, err := br.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
		floor()
	}
	direct := make(brokerDurations, 0, b.N)
	via := make(brokerDurations, 0, b.N)
	writes := make(brokerDurations, 0, b.N)
	b.ResetTimer()
	for range b.N {
		writes = append(writes, floor())
		t0 := time.Now()
		v, err := brokerCreateTask(ctx, brokerInput)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(v); err != nil { // the broker encodes results too
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := br.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		direct = append(direct, t1.Sub(t0))
		via = append(via, t2.Sub(t1))
	}
	b.StopTimer()
	brokerReport(b, direct, via)
	b.ReportMetric(brokerUS(via.pct(0.5)-direct.pct(0.5)), "added-p50-µs")
	b.ReportMetric(brokerUS(writes.pct(0.5)), "writes-p50-µs")
}

func BenchmarkBrokerHTTP(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"t1","projectId":"` + r.PathValue("p") + `","echo":`))
		w.Write(body)
		w.Write([]byte(`}`))
	}))
	b.Cleanup(backend.Close)
	br, reg := brokerEnv(b)
	ctx := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{
			Method: "POST", URL: backend.URL + "/api/projects/{projectId}/tasks",
		}},
	}}); err != nil {
		b.Fatal(err)
	}
	// The direct client gets the same pooled transport settings the broker
	// uses, so the comparison is about the broker and not about pooling.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	hc := &http.Client{Transport: tr}
	b.Cleanup(hc.CloseIdleConnections)
	directBody := []byte(`{"priority":2,"title":"Write the broker benchmark"}`)
	callDirect := func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", backend.URL+"/api/projects/p1/tasks", bytes.NewReader(directBody))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !json.Valid(out) {
			b.Fatalf("direct call: %v %s", err, out)
		}
	}
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: &benchCaller}
	for range 200 {
		callDirect()
		if _, err := br.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	direct := make(brokerDurations, 0, b.N)
	via := make(brokerDurations, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		callDirect()
		t1 := time.Now()
		if _, err := br.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		direct = append(direct, t1.Sub(t0))
		via = append(via, t2.Sub(t1))
	}
	b.StopTimer()
	brokerReport(b, direct, via)
	b.ReportMetric(float64(via.pct(0.5))/float64(direct.pct(0.5)), "ratio-p50")
}

func brokerReport(b *testing.B, direct, via brokerDurations) {
	b.ReportMetric(brokerUS(direct.pct(0.5)), "direct-p50-µs")
	b.ReportMetric(brokerUS(via.pct(0.5)), "broker-p50-µs")
	b.ReportMetric(brokerUS(direct.pct(0.99)), "direct-p99-µs")
	b.ReportMetric(brokerUS(via.pct(0.99)), "broker-p99-µs")
	b.Logf("n=%d direct p50 %.1fµs p90 %.1fµs p99 %.1fµs | broker p50 %.1fµs p90 %.1fµs p99 %.1fµs",
		len(direct), brokerUS(direct.pct(0.5)), brokerUS(direct.pct(0.9)), brokerUS(direct.pct(0.99)),
		brokerUS(via.pct(0.5)), brokerUS(via.pct(0.9)), brokerUS(via.pct(0.99)))
}

// storeWrites returns a function that makes, straight on a second SQLite
// store, the writes the broker makes per call (create, then the terminal
// compare-and-swap with the ledger append in one transaction) and times them: the floor under the
// broker's overhead, measured in the same loop so both see the same load.
func storeWrites(b *testing.B) func() time.Duration {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "floor.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return callWrites(b, st)
}

// callWrites times one call's writes on st.
func callWrites(b *testing.B, st switchboard.Store) func() time.Duration {
	w := callWritesErr(st)
	return func() time.Duration {
		t0 := time.Now()
		if err := w(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
}

// callWritesErr makes one call's writes on st, as the broker makes them:
// InvocationCreate, then the terminal compare-and-swap with the ledger
// append in one transaction (Store.InvocationFinish). Safe for concurrent
// use.
func callWritesErr(st switchboard.Store) func() error {
	ctx := context.Background()
	return func() error {
		now := time.Now()
		inv := switchboard.Invocation{ID: broker.NewID(), RunID: broker.NewID(), Tool: "tasks.create", Surface: switchboard.SurfaceAPI,
			Status: switchboard.StatusDispatched, Input: brokerInput, InputBytes: len(brokerInput), CreatedAt: now, UpdatedAt: now}
		if err := st.InvocationCreate(ctx, inv); err != nil {
			return err
		}
		inv.Status, inv.Result, inv.FinishedAt = switchboard.StatusSucceeded, json.RawMessage(`{"id":"t1","done":false}`), time.Now()
		e := &switchboard.ActivityEntry{Ts: time.Now(), Actor: "user:admin", Verb: activity.VerbToolCall,
			Target: inv.Tool, Details: json.RawMessage(`{"invocationId":"` + inv.ID + `","status":"succeeded"}`)}
		_, err := st.InvocationFinish(ctx, inv, e, switchboard.InFlight...)
		return err
	}
}

// discardWrites is a store whose invocation and ledger writes do nothing
// (reads go to the real store), so BenchmarkBrokerOwnWork measures what the
// broker itself costs: resolution, validation, limits, JSON, ids, timers.
type discardWrites struct{ switchboard.Store }

func (discardWrites) InvocationCreate(context.Context, switchboard.Invocation) error { return nil }
func (discardWrites) InvocationUpdate(_ context.Context, inv switchboard.Invocation, _ ...switchboard.Status) (switchboard.Invocation, error) {
	return inv, nil
}
func (discardWrites) InvocationFinish(_ context.Context, inv switchboard.Invocation, _ *switchboard.ActivityEntry, _ ...switchboard.Status) (switchboard.Invocation, error) {
	return inv, nil
}
func (discardWrites) ActivityAppend(context.Context, *switchboard.ActivityEntry) error { return nil }

// BenchmarkBrokerOwnWork is BenchmarkBrokerGoFunc without persistence: the
// part of the overhead that is the broker's own code.
func BenchmarkBrokerOwnWork(b *testing.B) {
	_, reg := brokerEnv(b)
	ctx := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema, Binding: &switchboard.Binding{Go: true},
	}}); err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "reads.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	br := broker.New(broker.Options{Store: discardWrites{st}, Registry: reg})
	b.Cleanup(br.Close)
	br.Handle("tasks.create", brokerCreateTask)
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: &benchCaller}
	via := make(brokerDurations, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := br.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
		via = append(via, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(brokerUS(via.pct(0.5)), "broker-p50-µs")
	b.ReportMetric(brokerUS(via.pct(0.99)), "broker-p99-µs")
}
