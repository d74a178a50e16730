package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// env is a runtime over a real SQLite file, the real registry and broker,
// and a scripted OpenAI-compatible model server.
type env struct {
	store  *sqlite.Store
	reg    *registry.Registry
	broker *broker.Broker
	model  *modeltest.OpenAI
	rt     *agent.Runtime
}

func newEnv(t *testing.T, mutate func(*agent.Options)) *env {
	t.Helper()
	return newEnvWith(t, nil, mutate)
}

// newEnvWith is newEnv with the broker's options adjusted first (a policy).
func newEnvWith(t *testing.T, withBroker func(*sqlite.Store, *broker.Options), mutate func(*agent.Options)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	bo := broker.Options{Store: st, Registry: reg}
	if withBroker != nil {
		withBroker(st, &bo)
	}
	br := broker.New(bo)
	t.Cleanup(br.Close)
	srv := modeltest.NewOpenAI(t)
	models, err := model.NewResolver(map[string]model.Config{
		"default": {Provider: "openai", Model: "scripted-1", BaseURL: srv.BaseURL(), APIKeyEnv: "TEST_OPENAI_KEY",
			Price: &model.Price{InputPerMTok: 2, OutputPerMTok: 8}},
	}, &model.Options{MaxRetries: -1, LookupEnv: func(string) (string, bool) { return "sk-test", true }})
	if err != nil {
		t.Fatal(err)
	}
	opts := agent.Options{Broker: br, Registry: reg, Models: models, History: st}
	if mutate != nil {
		mutate(&opts)
	}
	rt, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return &env{store: st, reg: reg, broker: br, model: srv, rt: rt}
}

var taskSchema = json.RawMessage(`{"type":"object","properties":{"projectId":{"type":"string"},"title":{"type":"string"}},"required":["projectId","title"],"additionalProperties":false}`)

// addFunc registers a Go-function api tool and its executor.
func (e *env) addFunc(t *testing.T, name string, class switchboard.Class, schema json.RawMessage, fn broker.Func) {
	t.Helper()
	if schema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	_, err := e.reg.Register(context.Background(), switchboard.SourceHost, []switchboard.Tool{{
		Name: name, Description: "Test tool " + name + ".", InputSchema: schema,
		Surface: switchboard.SurfaceAPI, Class: class, Binding: &switchboard.Binding{Go: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.broker.Handle(name, fn)
}

// events waits for run to end and returns its stream, checked against the
// AG-UI lifecycle rules.
func events(t *testing.T, run *agent.Run) []agui.Event {
	t.Helper()
	<-run.Done()
	recs, _, complete := run.Events(0)
	if !complete {
		t.Fatal("run done but its log is not complete")
	}
	evs := make([]agui.Event, len(recs))
	for i, r := range recs {
		evs[i] = r.Event
		back, err := agui.Decode(r.JSON)
		if err != nil || back.EventType() != r.Event.EventType() {
			t.Fatalf("record %d does not decode: %v", i, err)
		}
	}
	if err := agui.CheckAll(evs); err != nil {
		t.Fatalf("lifecycle: %v\n%s", err, dump(recs))
	}
	return evs
}

func dump(recs []agent.Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.Write(r.JSON)
		b.WriteByte('\n')
	}
	return b.String()
}

func types(evs []agui.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.EventType())
		if c, ok := e.(*agui.Custom); ok {
			out[i] += ":" + c.Name
		}
	}
	return out
}

func find[T agui.Event](evs []agui.Event) []T {
	var out []T
	for _, e := range evs {
		if x, ok := e.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func last(evs []agui.Event) agui.Event { return evs[len(evs)-1] }
