package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// offeredTools lists the tool names of one model request.
func offeredTools(req map[string]any) string {
	var names []string
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		fn, _ := t.(map[string]any)["function"].(map[string]any)
		names = append(names, fmt.Sprint(fn["name"]))
	}
	return strings.Join(names, ",")
}

// TestRunSeesToolsRegisteredWhileItRuns: a tool registered during a run
// is offered from the next step on and can be called; the run says so
// with a switchboard.tools.changed event carrying its manifest (runId
// filled); a step with no change emits nothing.
func TestRunSeesToolsRegisteredWhileItRuns(t *testing.T) {
	e := newEnv(t, nil)
	e.addFunc(t, "setup.install", switchboard.ClassRead, nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		// The app registers a new capability while the run goes on.
		e.broker.Handle("reports.weekly", func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"pages": 4}, nil
		})
		_, err := e.reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{
			Name: "reports.weekly", Description: "Build the weekly report.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead, Binding: &switchboard.Binding{Go: true},
		}})
		return "installed", err
	})
	e.addFunc(t, "setup.check", switchboard.ClassRead, nil, func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "setup_check", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c2", Name: "setup_install", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c3", Name: "reports_weekly", Args: `{}`}}},
		modeltest.Turn{Text: "The weekly report has 4 pages."},
	)
	run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-fresh", Input: "install reports, then build the weekly one"})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run)
	reqs := e.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	if got := offeredTools(reqs[1]); strings.Contains(got, "reports_weekly") {
		t.Fatalf("step 2 was offered %s before the tool existed", got)
	}
	if got := offeredTools(reqs[2]); !strings.Contains(got, "reports_weekly") {
		t.Fatalf("step 3 was offered %s, without the tool registered in step 2", got)
	}
	res := find[*agui.ToolCallResult](evs)
	if len(res) != 3 || res[2].IsError || !strings.Contains(res[2].Content, `"pages":4`) {
		t.Fatalf("results %+v", res)
	}
	var changed []*agui.Custom
	for _, c := range find[*agui.Custom](evs) {
		if c.Name == agent.EventToolsChanged {
			changed = append(changed, c)
		}
	}
	if len(changed) != 1 {
		t.Fatalf("%d %s events, want 1 (only step 3 saw a change)", len(changed), agent.EventToolsChanged)
	}
	b, _ := json.Marshal(changed[0].Value)
	var m switchboard.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range m.Tools {
		names = append(names, tl.Name+"/"+string(tl.Surface))
	}
	if m.RunID != run.ID() || m.ProtocolVersion != switchboard.ProtocolVersion ||
		strings.Join(names, ",") != "reports.weekly/api,setup.check/api,setup.install/api" {
		t.Fatalf("manifest %s", b)
	}
}
