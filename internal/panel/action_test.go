package panel_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/panel"
)

func TestRunActionSavesThroughTheBroker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, conn := e.tab(t)
	table := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)})
	form := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	do[panel.FillResult](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": form.InstanceID, "values": map[string]any{"budget": 4242, "name": "Apollo II"}})
	drain(conn)

	res := do[panel.ActionResult](t, e, agentP, panel.ToolRunAction, map[string]any{"instanceId": form.InstanceID, "action": "save"})
	if res.Status != panel.StatusOK || res.Tool != "data.projects.update" || res.InvocationID == "" {
		t.Fatalf("run_action: %+v", res)
	}
	if name, budget := e.project(t, "apollo"); name != "Apollo II" || budget != 4242 {
		t.Fatalf("saved %s %d", name, budget)
	}
	// The save is its own invocation, by the agent, with the form's values.
	inv, err := e.br.Get(context.Background(), res.InvocationID)
	if err != nil || inv.Caller != agentP.String() || !strings.Contains(string(inv.Input), `"budget":4242`) || !strings.Contains(string(inv.Input), `"key":"apollo"`) {
		t.Fatalf("invocation %+v %v", inv, err)
	}
	// The other panel on the same table refreshes; the saved form forgets
	// its unsaved marks and shows what is stored.
	for {
		sn := event[panel.Snapshot](t, conn, panel.EventUpdate)
		if sn.InstanceID == table.InstanceID && strings.Contains(string(sn.Data["all"]), `"budget":4242`) {
			break
		}
	}
	if sn, _ := e.svc.Snapshot(context.Background(), form.InstanceID); len(sn.Dirty)+len(sn.Filled) != 0 || sn.Values["project"]["name"] != "Apollo II" {
		t.Fatalf("after save: dirty %v filled %v values %v", sn.Dirty, sn.Filled, sn.Values)
	}

	t.Run("a form that is not ready is not sent", func(t *testing.T) {
		ctx := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: form.SessionID})
		if _, err := e.svc.Edit(ctx, form.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"name": json.RawMessage(`""`)}}); err != nil {
			t.Fatal(err)
		}
		res := do[panel.ActionResult](t, e, agentP, panel.ToolRunAction, map[string]any{"instanceId": form.InstanceID, "action": "save"})
		if res.Status != panel.StatusError || res.Error.Code != switchboard.CodeSchemaViolation || res.InvocationID != "" {
			t.Fatalf("%+v", res)
		}
		if name, _ := e.project(t, "apollo"); name != "Apollo II" {
			t.Fatal("an invalid form was saved")
		}
	})

	t.Run("unknown actions", func(t *testing.T) {
		if _, err := e.call(t, agentP, panel.ToolRunAction, map[string]any{"instanceId": form.InstanceID, "action": "publish"}); switchboard.CodeOf(err) != switchboard.CodeNotFound || !strings.Contains(err.Error(), "delete, save") {
			t.Fatalf("%v", err)
		}
	})
}

// gate is a broker policy that asks for approval of data.projects.update
// and lets the test decide.
type gate struct {
	mu        sync.Mutex
	requested chan string // approval ids, as requested
	decide    map[string]chan error
}

func newGate() *gate { return &gate{requested: make(chan string, 8), decide: map[string]chan error{}} }

func (g *gate) Admit(context.Context, switchboard.Principal, switchboard.Tool) error { return nil }

func (g *gate) NeedsApproval(_ switchboard.Principal, t switchboard.Tool, _ json.RawMessage) bool {
	return t.Name == "data.projects.update"
}

func (g *gate) RequestApproval(_ context.Context, inv switchboard.Invocation, _ switchboard.Tool) (string, error) {
	g.mu.Lock()
	g.decide[inv.ID] = make(chan error, 1)
	g.mu.Unlock()
	return inv.ID, nil
}

func (g *gate) AwaitApproval(ctx context.Context, id string, _ switchboard.Invocation) error {
	g.mu.Lock()
	ch := g.decide[id]
	g.mu.Unlock()
	g.requested <- id // the broker has recorded the call and announced it (OnRecord) by now
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return switchboard.Errorf(switchboard.CodeCancelled, "gave up")
	}
}

func (g *gate) answer(id string, err error) {
	g.mu.Lock()
	ch := g.decide[id]
	g.mu.Unlock()
	ch <- err
}

func TestRunActionWithApproval(t *testing.T) {
	t.Parallel()
	g := newGate()
	e := newEnv(t, g)
	_, conn := e.tab(t)
	form := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	do[panel.FillResult](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": form.InstanceID, "values": map[string]any{"budget": 7}})

	t.Run("a denied save is rejected_by_user and saves nothing", func(t *testing.T) {
		go func() { g.answer(<-g.requested, switchboard.Errorf(switchboard.CodeUserDenied, "denied")) }()
		res := do[panel.ActionResult](t, e, agentP, panel.ToolRunAction, map[string]any{"instanceId": form.InstanceID, "action": "save"})
		if res.Status != panel.StatusRejectedByUser || res.Error.Code != switchboard.CodeUserDenied {
			t.Fatalf("%+v", res)
		}
		if _, budget := e.project(t, "apollo"); budget != 1200 {
			t.Fatal("a denied save changed the record")
		}
		if sn, _ := e.svc.Snapshot(context.Background(), form.InstanceID); sn.Values["project"]["budget"] != float64(7) {
			t.Fatalf("a denied save lost the unsaved value: %v", sn.Values)
		}
	})

	t.Run("a caller that stops waiting gets pending_approval; the outcome reaches the panel", func(t *testing.T) {
		drain(conn)
		ctx, cancel := context.WithCancel(switchboard.WithPrincipal(context.Background(), agentP))
		var id string
		go func() { id = <-g.requested; cancel() }()
		res, err := e.svc.RunAction(ctx, panel.ActionRequest{InstanceID: form.InstanceID, Action: "save"})
		if err != nil || res.Status != panel.StatusPendingApproval || res.InvocationID != id {
			t.Fatalf("%+v %v (want invocation %s)", res, err, id)
		}
		// The digest names the panel an approval waiting for the user is of.
		if got := e.svc.InstanceOf(id); got != form.InstanceID {
			t.Fatalf("InstanceOf(%s) = %q, want %s", id, got, form.InstanceID)
		}
		if got := e.svc.InstanceOf("inv_unknown"); got != "" {
			t.Fatalf("InstanceOf(unknown) = %q", got)
		}
		g.answer(id, nil)
		for {
			sn := event[panel.Snapshot](t, conn, panel.EventUpdate)
			if st := sn.Actions["save"]; st.Status == panel.StatusOK {
				if st.InvocationID != id {
					t.Fatalf("outcome of %s, want %s", st.InvocationID, id)
				}
				break
			}
		}
		if _, budget := e.project(t, "apollo"); budget != 7 {
			t.Fatalf("budget %d after the approval", budget)
		}
	})
}

func TestUserActionPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	sid, _ := e.tab(t)
	tab := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sid})

	// A host panel the user opened: its actions run as the session's user.
	host, err := e.svc.Open(tab, panel.OpenRequest{Panel: "project.settings", Params: map[string]any{"projectId": "borealis"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.UserAction(tab, host.InstanceID, "save")
	if err != nil || res.Status != panel.StatusOK {
		t.Fatalf("%+v %v", res, err)
	}
	if inv, _ := e.br.Get(context.Background(), res.InvocationID); inv.Caller != "user:42" {
		t.Fatalf("host action ran as %q", inv.Caller)
	}

	// An agent's panel: its actions run as the agent, whoever clicks.
	spec := `{"v": 1, "root": "b", "nodes": {"b": {"type": "panel-body", "children": ["go"]},
		"go": {"type": "button", "props": {"label": "Rename", "action": "rename"}}},
		"actions": {"rename": {"kind": "tool", "tool": "data.projects.update", "input": {"key": "borealis", "values": {"name": "Renamed"}}}}}`
	composed := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(spec), "sessionId": sid})
	res, err = e.svc.UserAction(tab, composed.InstanceID, "rename")
	if err != nil || res.Status != panel.StatusOK {
		t.Fatalf("%+v %v", res, err)
	}
	if inv, _ := e.br.Get(context.Background(), res.InvocationID); inv.Caller != agentP.String() {
		t.Fatalf("composed action ran as %q", inv.Caller)
	}
	if name, _ := e.project(t, "borealis"); name != "Renamed" {
		t.Fatalf("name %q", name)
	}

	// Another tab cannot run this tab's actions.
	other := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: "ses_x"})
	if _, err := e.svc.UserAction(other, host.InstanceID, "save"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("foreign action: %v", err)
	}
}

// Whether an action waits for a person is the approval policy's answer,
// not the tool's declaration: a tool that declares an approval the policy
// does not ask for (here: the gate asks only for data.projects.update),
// still queued for its slot when the caller stops waiting, is reported
// still running, not pending_approval.
func TestActionApprovalIsThePolicysAnswer(t *testing.T) {
	t.Parallel()
	g := newGate()
	e := newEnv(t, g)
	sid, _ := e.tab(t)
	// The first call (the holder) waits for release, the action's call for
	// finish, so the action is still running when it is answered.
	release, finish := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	e.register(t, []panel.ToolFunc{{
		Tool: switchboard.Tool{Name: "test.slow", Description: "A slow change.", Class: switchboard.ClassMutate,
			Approval: switchboard.ApprovalHITL, MaxConcurrency: 1, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			wait := finish
			if calls.Add(1) == 1 {
				wait = release
			}
			select {
			case <-wait:
			case <-ctx.Done():
			}
			return map[string]any{"ok": true}, nil
		},
	}})
	spec := `{"v": 1, "root": "b", "nodes": {"b": {"type": "panel-body", "children": ["go"]},
		"go": {"type": "button", "props": {"label": "Go", "action": "go"}}},
		"actions": {"go": {"kind": "tool", "tool": "test.slow", "input": {}}}}`
	composed := do[view](t, e, agentP, panel.ToolCompose, map[string]any{"spec": json.RawMessage(spec), "sessionId": sid})

	// Another call holds the tool's one slot, so the action's call queues.
	held := make(chan error, 1)
	go func() {
		_, err := e.br.Call(context.Background(), broker.CallRequest{Tool: "test.slow", Caller: &agentP})
		held <- err
	}()
	for running, _ := e.br.Load("test.slow"); running == 0; running, _ = e.br.Load("test.slow") {
		runtime.Gosched()
	}
	// The caller has stopped waiting before anything could be recorded.
	ctx, cancel := context.WithCancel(switchboard.WithPrincipal(context.Background(), agentP))
	cancel()
	answered := make(chan panel.ActionResult, 1)
	go func() {
		res, err := e.svc.RunAction(ctx, panel.ActionRequest{InstanceID: composed.InstanceID, Action: "go"})
		if err != nil {
			t.Error(err)
		}
		answered <- res
	}()
	for _, waiting := e.br.Load("test.slow"); waiting == 0; _, waiting = e.br.Load("test.slow") {
		select {
		case res := <-answered: // answered while queued
			close(release)
			close(finish)
			if res.Status == panel.StatusPendingApproval {
				t.Fatalf("a call no policy holds for approval answered %+v", res)
			}
			return
		default:
			runtime.Gosched()
		}
	}
	close(release) // the holder ends; the action's call is recorded, runs, and is still running
	res := <-answered
	close(finish)
	if res.Status != panel.StatusError || res.Error == nil || res.Error.Code != switchboard.CodeTimeout || res.InvocationID == "" {
		t.Fatalf("a call no policy holds for approval: %+v, want still running (TIMEOUT) with its invocation", res)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
