package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The assistant benchmarks (README "## Agent"):
//
//	go test ./bench -run '^$' -bench 'Agent' -benchtime 300x -count=1
//
// BenchmarkAgentStep: what the daemon adds to one agent step, model time
// excluded. Each run is two steps against the scripted OpenAI-compatible
// server through the real openai-go client: step 1 streams a tool call of
// a Go-function api tool (through the broker: validation, an invocation
// record and a ledger entry in a SQLite file), step 2 streams the answer;
// the run then saves the chat history. Time inside Provider.Stream (the
// model, its HTTP and SSE decoding) is measured and subtracted: what is
// left is the loop, tool presentation, event encoding, the broker call and
// the history write.
//
// BenchmarkAgentFanOut100: events per second delivered to 100 concurrent
// SSE subscribers of GET /runs/{id}/events, all connected before the run
// starts streaming (an in-process model emits 2,000 text deltas as fast as
// the loop takes them, so the fan-out is the bottleneck).

// timedProvider measures the time spent in the model.
type timedProvider struct {
	model.Provider
	ns atomic.Int64
}

func (p *timedProvider) Stream(ctx context.Context, req model.Request, emit func(model.Event)) (model.Response, error) {
	start := time.Now()
	r, err := p.Provider.Stream(ctx, req, emit)
	p.ns.Add(int64(time.Since(start)))
	return r, err
}

type agentBench struct {
	rt  *agent.Runtime
	srv *httptest.Server
}

func newAgentBench(b *testing.B, p model.Provider, tools int) *agentBench {
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
	var decl []switchboard.Tool
	for i := range tools {
		decl = append(decl, switchboard.Tool{Name: fmt.Sprintf("tasks.op_%d", i), Description: "Operate on tasks.", InputSchema: agentInputSchema,
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, Binding: &switchboard.Binding{Go: true}})
	}
	if len(decl) > 0 {
		if _, err := reg.Register(ctx, switchboard.SourceHost, decl); err != nil {
			b.Fatal(err)
		}
	}
	br.Handle("tasks.op_0", agentCreateTask)
	binding := model.Binding{Alias: "default", Provider: "openai", Model: "scripted", Caps: model.Caps{Tools: true, Streaming: true}, Client: p}
	rt, err := agent.New(agent.Options{Broker: br, Registry: reg, History: st,
		Models: model.ResolverFunc(func(context.Context, string) (model.Binding, error) { return binding, nil })})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rt.Close)
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: "bench", Broker: br, Agent: rt})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return &agentBench{rt: rt, srv: srv}
}

func BenchmarkAgentStep(b *testing.B) {
	model := modeltest.NewOpenAI(b)
	model.Func(func(n int, _ map[string]any) modeltest.Turn {
		if n%2 == 0 {
			return modeltest.Turn{Text: "Creating it.", ToolCalls: []modeltest.Call{{ID: "c", Name: "tasks_op_0", Args: string(agentInput)}}, ChunkSize: 64}
		}
		return modeltest.Turn{Text: "Created task t1 in project p1.", ChunkSize: 64}
	})
	p := &timedProvider{Provider: newScriptedOpenAI(model.BaseURL())}
	env := newAgentBench(b, p, 10)
	ctx := context.Background()
	per := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		before := p.ns.Load()
		start := time.Now()
		run, err := env.rt.Start(ctx, agent.StartRequest{ThreadID: fmt.Sprintf("chat-%d", i), Input: "create a task"})
		if err != nil {
			b.Fatal(err)
		}
		<-run.Done()
		wall := time.Since(start)
		if info := run.Info(); info.Status != switchboard.RunSucceeded || info.Steps != 2 {
			b.Fatalf("run %+v", info)
		}
		modelTime := time.Duration(p.ns.Load() - before)
		per = append(per, (wall-modelTime)/2)
	}
	b.StopTimer()
	slices.Sort(per)
	b.ReportMetric(float64(per[len(per)/2].Microseconds()), "µs/step-p50")
	b.ReportMetric(float64(per[len(per)*9/10].Microseconds()), "µs/step-p90")
}

func newScriptedOpenAI(base string) model.Provider {
	return model.NewOpenAI(model.OpenAIOptions{BaseURL: base, Options: model.Options{MaxRetries: -1}})
}

// burstProvider answers with n text deltas once released.
type burstProvider struct {
	n       int
	release chan struct{}
}

func (p *burstProvider) Stream(ctx context.Context, _ model.Request, emit func(model.Event)) (model.Response, error) {
	select {
	case <-p.release:
	case <-ctx.Done():
		return model.Response{}, ctx.Err()
	}
	for range p.n {
		emit(model.Event{Type: model.EventText, Text: "token "})
	}
	return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "…"}, Finish: model.FinishStop}, nil
}

func BenchmarkAgentFanOut100(b *testing.B) {
	const subs, deltas = 100, 2000
	var total time.Duration
	var delivered int64
	for i := range b.N {
		p := &burstProvider{n: deltas, release: make(chan struct{})}
		env := newAgentBench(b, p, 0)
		run, err := env.rt.Start(context.Background(), agent.StartRequest{ThreadID: fmt.Sprintf("fan-%d", i), Input: "talk"})
		if err != nil {
			b.Fatal(err)
		}
		var connected, done sync.WaitGroup
		connected.Add(subs)
		done.Add(subs)
		var count atomic.Int64
		for range subs {
			go func() {
				defer done.Done()
				req, _ := http.NewRequest("GET", env.srv.URL+"/api/v1/runs/"+run.ID()+"/events", nil)
				req.Header.Set("Authorization", "Bearer bench")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					connected.Done()
					return
				}
				defer resp.Body.Close()
				first := true
				agui.ReadFrames(resp.Body, func(_ string, data []byte) error {
					if first {
						first = false
						connected.Done()
					}
					count.Add(1)
					return nil
				})
			}()
		}
		connected.Wait()
		start := time.Now()
		close(p.release)
		done.Wait()
		total += time.Since(start)
		delivered += count.Load()
		if n := count.Load(); n < subs*deltas {
			b.Fatalf("delivered %d events, want ≥ %d", n, subs*deltas)
		}
	}
	b.ReportMetric(float64(delivered)/total.Seconds(), "events/s")
	b.ReportMetric(float64(delivered)/float64(b.N*subs), "events/subscriber")
}

var (
	agentInputSchema = json.RawMessage(`{"type":"object","properties":{"projectId":{"type":"string"},"title":{"type":"string","maxLength":200},"priority":{"type":"integer","minimum":1,"maximum":5}},"required":["projectId","title"]}`)
	agentInput       = json.RawMessage(`{"projectId":"p1","title":"Write the agent benchmark","priority":2}`)
)

func agentCreateTask(_ context.Context, in json.RawMessage) (any, error) {
	var v map[string]any
	if err := json.Unmarshal(in, &v); err != nil {
		return nil, err
	}
	v["id"] = "t1"
	return v, nil
}
