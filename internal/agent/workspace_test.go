package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// digests reads a real workspace as the daemon's adapter does.
type digests struct{ ws *workspace.Workspace }

func (d digests) Digest(ctx context.Context, _ string) (json.RawMessage, error) {
	return d.ws.DigestJSON(ctx)
}

func (d digests) Changed() <-chan struct{} {
	ch, _ := d.ws.Changed()
	return ch
}

func report(t *testing.T, ws *workspace.Workspace, label string) {
	t.Helper()
	_, err := ws.Report(context.Background(), "tab-1", "", []switchboard.WorkspaceContext{{ID: "route:/" + label, Kind: "page", Label: label,
		Attention: switchboard.AttentionFocused, Panels: []switchboard.WorkspacePanel{{ID: "p1", Type: "form", Title: label + " settings", Origin: "host"}}}})
	if err != nil {
		t.Fatal(err)
	}
}

// A run gets the digest as STATE_SNAPSHOT at its start and a STATE_DELTA
// when a tab's context changes mid-run; every model turn gets the digest
// as system context in the tagged-data wrapper, refreshed between steps.
func TestRunStateFollowsTheWorkspace(t *testing.T) {
	var ws *workspace.Workspace
	e := newEnv(t, func(o *agent.Options) {
		var err error
		if ws, err = workspace.New(workspace.Options{Registry: o.Registry}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ws.Close)
		o.Digests = digests{ws}
	})
	e.addFunc(t, "notes.read", switchboard.ClassRead, nil, func(context.Context, json.RawMessage) (any, error) { return map[string]any{"ok": true}, nil })
	report(t, ws, "Projects")
	hold := make(chan struct{})
	e.model.Push(
		modeltest.Turn{Text: "Let me look.", Hold: hold, ToolCalls: []modeltest.Call{{ID: "c1", Name: "notes_read", Args: `{}`}}},
		modeltest.Turn{Text: "You are on Billing."},
	)
	run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-ws", Input: "what am I looking at?",
		State: json.RawMessage(`{"theme":"dark"}`)})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the held first turn, then move the user to another page.
	awaitEvent(t, run, func(ev agui.Event) bool {
		m, ok := ev.(*agui.TextMessageStart)
		return ok && m.Role == agui.RoleAssistant
	})
	report(t, ws, "Billing")
	delta := awaitEvent(t, run, func(ev agui.Event) bool { _, ok := ev.(*agui.StateDelta); return ok }).(*agui.StateDelta)
	close(hold)
	evs := events(t, run)

	snaps := find[*agui.StateSnapshot](evs)
	if len(snaps) != 1 || evs[1] != agui.Event(snaps[0]) {
		t.Fatalf("want one STATE_SNAPSHOT right after RUN_STARTED: %v", types(evs))
	}
	var snap struct {
		Theme     string                      `json:"theme"`
		Workspace switchboard.WorkspaceDigest `json:"workspace"`
	}
	b, _ := json.Marshal(snaps[0].Snapshot)
	if err := json.Unmarshal(b, &snap); err != nil || snap.Theme != "dark" || len(snap.Workspace.Contexts) != 1 || snap.Workspace.Contexts[0].Label != "Projects" {
		t.Fatalf("snapshot: %s", b)
	}
	var sawLabel bool
	for _, op := range delta.Delta {
		var o struct{ Op, Path string }
		_ = json.Unmarshal(op, &o)
		if !strings.HasPrefix(o.Path, "/workspace/") {
			t.Fatalf("a delta outside the workspace: %s", op)
		}
		// The page changed its id too, so the context is replaced whole.
		sawLabel = sawLabel || (o.Path == "/workspace/contexts/0" && o.Op == "add" && strings.Contains(string(op), `"label":"Billing"`))
	}
	if !sawLabel {
		t.Fatalf("the delta does not change the context's label: %s", delta.Delta)
	}

	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	for i, want := range []string{"Projects", "Billing"} {
		sys := systemOf(reqs[i])
		if !strings.Contains(sys, `"type":"workspace_digest","trust":"data"`) || !strings.Contains(sys, `"label":"`+want+`"`) ||
			!strings.Contains(sys, `"derivedFrom":"site-html"`) {
			t.Fatalf("turn %d's system context lacks the wrapped digest showing %s:\n%s", i+1, want, sys)
		}
	}
}

// awaitEvent returns the first event of run matching ok, waiting for it.
func awaitEvent(t *testing.T, run *agent.Run, ok func(agui.Event) bool) agui.Event {
	t.Helper()
	for from := 0; ; {
		recs, more, complete := run.Events(from)
		for _, r := range recs {
			if ok(r.Event) {
				return r.Event
			}
		}
		from += len(recs)
		if complete {
			t.Fatal("the run ended without the event")
		}
		<-more
	}
}

func systemOf(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "system" {
			s, _ := mm["content"].(string)
			return s
		}
	}
	return ""
}
