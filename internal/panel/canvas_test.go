package panel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/preview"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/sqlite"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// The layers merge in order — guarded default, daemon, host, session —
// presets first within a layer, its gates over them; the session layer
// only narrows.
func TestMergeCanvas(t *testing.T) {
	t.Parallel()
	open := panel.CanvasPolicy{Preset: panel.CanvasOpen}
	guarded := panel.CanvasPolicy{Preset: panel.CanvasGuarded}
	for _, tc := range []struct {
		name                              string
		daemon, host, session             panel.CanvasPolicy
		preset                            string
		hitl, pin, del, code, openSurface bool
	}{
		{name: "nothing set is guarded", preset: panel.CanvasGuarded, hitl: true},
		{name: "daemon open", daemon: open, preset: panel.CanvasOpen, pin: true, del: true, openSurface: true},
		{name: "host open over daemon guarded", daemon: guarded, host: open, preset: panel.CanvasOpen, pin: true, del: true, openSurface: true},
		{name: "host guarded over daemon open", daemon: open, host: guarded, preset: panel.CanvasGuarded, hitl: true},
		{name: "a gate overrides its layer's preset", daemon: panel.CanvasPolicy{Preset: panel.CanvasOpen, AutoPin: no()},
			preset: panel.CanvasCustom, del: true, openSurface: true},
		{name: "a host gate overrides the daemon's preset", daemon: open, host: panel.CanvasPolicy{HITLOnCompose: yes()},
			preset: panel.CanvasCustom, hitl: true, pin: true, del: true, openSurface: true},
		{name: "a preset keeps code preview as the layer below set it", daemon: panel.CanvasPolicy{AllowCodePreview: yes()}, host: open,
			preset: panel.CanvasOpen, pin: true, del: true, code: true, openSurface: true},
		{name: "the session cannot open a guarded surface", session: open, preset: panel.CanvasGuarded, hitl: true},
		{name: "the session cannot allow code preview", session: panel.CanvasPolicy{AllowCodePreview: yes(), HITLOnCompose: no()},
			preset: panel.CanvasGuarded, hitl: true},
		{name: "the session narrows open to guarded", host: open, session: guarded, preset: panel.CanvasGuarded, hitl: true},
		{name: "the session takes one freedom away", host: open, session: panel.CanvasPolicy{AllowDelete: no()},
			preset: panel.CanvasCustom, pin: true, openSurface: true},
		{name: "the session keeps code preview off", daemon: panel.CanvasPolicy{AllowCodePreview: yes()}, session: panel.CanvasPolicy{AllowCodePreview: no()},
			preset: panel.CanvasGuarded, hitl: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := panel.MergeCanvas(tc.daemon, tc.host, tc.session)
			want := panel.Canvas{Preset: tc.preset, HITLOnCompose: tc.hitl, AutoPin: tc.pin, AllowDelete: tc.del, AllowCodePreview: tc.code, Open: tc.openSurface}
			if c != want {
				t.Fatalf("got  %+v\nwant %+v", c, want)
			}
		})
	}
	if err := (panel.CanvasPolicy{Preset: "wide-open"}).Validate(); switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), `"guarded" or "open"`) {
		t.Fatalf("unknown preset: %v", err)
	}
}

// canvasEnv is the panel env over the real approval service, wired as the
// daemon wires it (the canvas policy adds approvals through Situational).
// Requested approvals arrive on the returned channel.
func canvasEnv(t *testing.T, opt func(*panel.Options)) (*env, *approval.Service, chan string) {
	t.Helper()
	requests := make(chan string, 16)
	var ap *approval.Service
	e := newEnvPolicy(t, func(st *sqlite.Store, e *env) broker.Policy {
		var err error
		ap, err = approval.New(approval.Options{Store: st, Delegates: map[string]bool{panel.ToolRunAction: true},
			Situational: func(c switchboard.Principal, tl switchboard.Tool, in json.RawMessage) bool {
				return e.svc.NeedsApproval(c, tl, in)
			},
			Notify: func(_ context.Context, kind string, data []byte) {
				if kind == approval.EventRequest {
					var ev approval.RequestEvent
					_ = json.Unmarshal(data, &ev)
					requests <- ev.ApprovalID
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return ap
	}, opt)
	return e, ap, requests
}

const mineSpec = `{"v": 1, "root": "body", "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Mine"}, "children": ["a", "b"]},
  "a": {"type": "text", "props": {"text": "first"}},
  "b": {"type": "text", "props": {"text": "second"}}}}`

var userP = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}

// decide answers an approval as the user.
func decide(t *testing.T, ap *approval.Service, id string, ok bool) {
	t.Helper()
	if _, err := ap.Decide(context.Background(), id, approval.Decision{By: userP, Approve: ok, Channel: approval.ChannelHTTP}); err != nil {
		t.Fatal(err)
	}
}

// callAsync runs a call in the background; its outcome arrives later.
func callAsync(t *testing.T, e *env, ctx context.Context, tool string, input any) chan callOutcome {
	t.Helper()
	b, _ := json.Marshal(input)
	out := make(chan callOutcome, 1)
	go func() {
		inv, err := e.br.Call(ctx, requestIn(ctx, tool, b))
		out <- callOutcome{inv, err}
	}()
	return out
}

type callOutcome struct {
	inv switchboard.Invocation
	err error
}

func instances(t *testing.T, e *env) map[string]panel.Summary {
	t.Helper()
	list, err := e.svc.List(switchboard.WithPrincipal(context.Background(), userP), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]panel.Summary{}
	for _, in := range list.Instances {
		out[in.InstanceID] = in
	}
	return out
}

// Guarded (the default): an agent's compose waits for the user; what it
// composes is a draft its next compose replaces, until the user pins it;
// closing its own panel asks too.
func TestCanvasGuarded(t *testing.T) {
	t.Parallel()
	e, ap, requests := canvasEnv(t, nil)
	sid, _ := e.tab(t)
	agent := switchboard.WithPrincipal(context.Background(), agentP)

	compose := func() view {
		t.Helper()
		done := callAsync(t, e, agent, panel.ToolCompose, map[string]any{"spec": json.RawMessage(mineSpec)})
		id := <-requests
		if a, err := ap.Get(context.Background(), id); err != nil || a.Tool != panel.ToolCompose || a.Status != switchboard.ApprovalPending {
			t.Fatalf("approval %+v %v", a, err)
		}
		select {
		case o := <-done:
			t.Fatalf("compose ended before the user decided: %+v %v", o.inv, o.err)
		default:
		}
		before := len(instances(t, e))
		decide(t, ap, id, true)
		o := <-done
		v := result[view](t, o.inv, o.err)
		if len(instances(t, e)) > before+1 {
			t.Fatal("more than one panel appeared")
		}
		return v
	}
	first := compose()
	if sn, _ := e.svc.Snapshot(context.Background(), first.InstanceID); sn.Pinned || sn.Origin != "agent" {
		t.Fatalf("a guarded compose is an agent draft: %+v", sn)
	}
	second := compose()
	if got := instances(t, e); len(got) != 1 || got[second.InstanceID].InstanceID == "" {
		t.Fatalf("the second draft replaces the first: %+v", got)
	}

	t.Run("a spec that will be refused is not put to the user", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(agent, 30*time.Second) // a bound: a call that asked would block
		defer cancel()
		_, err := e.callIn(t, ctx, panel.ToolCompose, map[string]any{"spec": json.RawMessage(`{"v": 1, "root": "t", "nodes": {"t": {"type": "text", "props": {"txt": "x"}}}}`)})
		if switchboard.CodeOf(err) != switchboard.CodeSpecProps || len(requests) != 0 {
			t.Fatalf("want SPEC_PROPS at once, no approval: %v (%d asked)", err, len(requests))
		}
	})

	t.Run("a denied compose shows nothing", func(t *testing.T) {
		done := callAsync(t, e, agent, panel.ToolCompose, map[string]any{"spec": json.RawMessage(mineSpec)})
		decide(t, ap, <-requests, false)
		if o := <-done; switchboard.CodeOf(o.err) != switchboard.CodeUserDenied {
			t.Fatalf("denied compose: %v", o.err)
		}
		if len(instances(t, e)) != 1 {
			t.Fatal("a denied compose opened a panel")
		}
	})

	t.Run("a pinned panel stays", func(t *testing.T) {
		tab := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sid})
		if _, err := e.svc.Pin(agent, second.InstanceID); switchboard.CodeOf(err) != switchboard.CodeForbidden {
			t.Fatalf("an agent pins: %v", err)
		}
		sn, err := e.svc.Pin(tab, second.InstanceID)
		if err != nil || !sn.Pinned {
			t.Fatalf("pin: %+v %v", sn.Pinned, err)
		}
		third := compose()
		if got := instances(t, e); len(got) != 2 || !got[second.InstanceID].Pinned || got[third.InstanceID].Pinned {
			t.Fatalf("after a compose beside a pinned panel: %+v", got)
		}
	})

	t.Run("a patch asks; one that will be refused does not", func(t *testing.T) {
		patch := []map[string]any{{"op": "replace", "path": "/nodes/a/props/text", "value": "patched"}}
		done := callAsync(t, e, agent, panel.ToolPatch, map[string]any{"instanceId": second.InstanceID, "patch": patch})
		decide(t, ap, <-requests, true)
		o := <-done
		result[view](t, o.inv, o.err)
		ctx, cancel := context.WithTimeout(agent, 30*time.Second)
		defer cancel()
		bad := []map[string]any{{"op": "replace", "path": "/nodes/a/props/txt", "value": "x"}}
		if _, err := e.callIn(t, ctx, panel.ToolPatch, map[string]any{"instanceId": second.InstanceID, "patch": bad}); !strings.HasPrefix(string(switchboard.CodeOf(err)), "SPEC_") || len(requests) != 0 {
			t.Fatalf("a bad patch: %v (%d asked)", err, len(requests))
		}
	})

	t.Run("closing its own panel asks; a denial keeps it", func(t *testing.T) {
		done := callAsync(t, e, agent, panel.ToolClose, map[string]any{"instanceId": second.InstanceID})
		decide(t, ap, <-requests, false)
		if o := <-done; switchboard.CodeOf(o.err) != switchboard.CodeUserDenied {
			t.Fatalf("denied close: %v", o.err)
		}
		if _, ok := instances(t, e)[second.InstanceID]; !ok {
			t.Fatal("a denied close closed the panel")
		}
	})
}

// Open: compose, patch and delete of the agent's own content run without
// asking and what it composes is pinned; the hard boundary holds — host
// content and other agents' content are refused, and a destructive action
// on host data still waits for the user.
func TestCanvasOpen(t *testing.T) {
	t.Parallel()
	e, ap, requests := canvasEnv(t, func(o *panel.Options) { o.Canvas = panel.CanvasPolicy{Preset: panel.CanvasOpen} })
	e.tab(t)
	agent := switchboard.WithPrincipal(context.Background(), agentP)
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(agent, 30*time.Second) // a bound, not a pause: a call that asked would block here
	}
	ctx, cancel := bounded()
	defer cancel()
	first := doIn[view](t, e, ctx, panel.ToolCompose, map[string]any{"spec": json.RawMessage(mineSpec)})
	second := doIn[view](t, e, ctx, panel.ToolCompose, map[string]any{"spec": json.RawMessage(mineSpec)})
	if got := instances(t, e); len(got) != 2 || !got[first.InstanceID].Pinned || !got[second.InstanceID].Pinned {
		t.Fatalf("open auto-pins, so nothing is replaced: %+v", got)
	}
	patch := []map[string]any{{"op": "remove", "path": "/nodes/body/children/1"}, {"op": "remove", "path": "/nodes/b"}}
	doIn[view](t, e, ctx, panel.ToolPatch, map[string]any{"instanceId": first.InstanceID, "patch": patch})
	doIn[map[string]any](t, e, ctx, panel.ToolClose, map[string]any{"instanceId": first.InstanceID})
	if len(requests) != 0 {
		t.Fatalf("%d approvals asked on an open surface", len(requests))
	}

	t.Run("host content is not the agent's to delete", func(t *testing.T) {
		form := doIn[view](t, e, ctx, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
		_, err := e.callIn(t, ctx, panel.ToolPatch, map[string]any{"instanceId": form.InstanceID, "patch": []map[string]any{{"op": "remove", "path": "/nodes/form"}}})
		if switchboard.CodeOf(err) != switchboard.CodeForbidden {
			t.Fatalf("removing from a host panel: %v", err)
		}
	})

	t.Run("nor another agent's", func(t *testing.T) {
		planner := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"})
		pctx, cancel := context.WithTimeout(planner, 30*time.Second)
		defer cancel()
		_, err := e.callIn(t, pctx, panel.ToolClose, map[string]any{"instanceId": second.InstanceID})
		if switchboard.CodeOf(err) != switchboard.CodeForbidden || !strings.Contains(err.Error(), "agent:assistant") {
			t.Fatalf("closing another agent's panel: %v", err)
		}
		_, err = e.callIn(t, pctx, panel.ToolPatch, map[string]any{"instanceId": second.InstanceID, "patch": []map[string]any{{"op": "remove", "path": "/nodes/body/children/1"}, {"op": "remove", "path": "/nodes/b"}}})
		if switchboard.CodeOf(err) != switchboard.CodeForbidden {
			t.Fatalf("removing from another agent's panel: %v", err)
		}
		if _, ok := instances(t, e)[second.InstanceID]; !ok {
			t.Fatal("the panel is gone")
		}
	})

	t.Run("a destructive action on host data still waits for the user", func(t *testing.T) {
		form := doIn[view](t, e, ctx, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "borealis"}})
		done := callAsync(t, e, agent, panel.ToolRunAction, map[string]any{"instanceId": form.InstanceID, "action": "delete"})
		id := <-requests
		if a, _ := ap.Get(context.Background(), id); a.Tool != "data.projects.delete" {
			t.Fatalf("the approval is for %s", a.Tool)
		}
		decide(t, ap, id, false)
		o := <-done
		if res := result[panel.ActionResult](t, o.inv, o.err); res.Status != panel.StatusRejectedByUser {
			t.Fatalf("%+v", res)
		}
		if name, _ := e.project(t, "borealis"); name == "" {
			t.Fatal("the record was deleted")
		}
	})
}

// doIn runs a call with ctx and decodes its successful result.
func doIn[T any](t *testing.T, e *env, ctx context.Context, tool string, input any) T {
	t.Helper()
	inv, err := e.callIn(t, ctx, tool, input)
	return result[T](t, inv, err)
}

// One setting switches a surface: the host's layer over the daemon's, and
// the tab is told; a session minted guarded stays guarded.
func TestCanvasLayers(t *testing.T) {
	t.Parallel()
	e, _, requests := canvasEnv(t, nil)
	sid, conn := e.tab(t)
	if c := e.svc.CanvasFor(sid); c.Preset != panel.CanvasGuarded || c.Open {
		t.Fatalf("default %+v", c)
	}
	l, err := e.svc.SetHostCanvas(panel.CanvasPolicy{Preset: panel.CanvasOpen})
	if err != nil || l.Effective.Preset != panel.CanvasOpen {
		t.Fatalf("%+v %v", l, err)
	}
	if c := event[panel.Canvas](t, conn, panel.EventCanvas); !c.Open || c.HITLOnCompose {
		t.Fatalf("the tab's indicator: %+v", c)
	}
	ctx, cancel := context.WithTimeout(switchboard.WithPrincipal(context.Background(), agentP), 30*time.Second)
	defer cancel()
	doIn[view](t, e, ctx, panel.ToolCompose, map[string]any{"spec": json.RawMessage(mineSpec)})
	if len(requests) != 0 {
		t.Fatal("the open host layer still asked")
	}
	if _, err := e.svc.SetHostCanvas(panel.CanvasPolicy{Preset: "everything"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("bad preset: %v", err)
	}
	if e.svc.CanvasFor(sid).Preset != panel.CanvasOpen {
		t.Fatal("a refused setting changed the policy")
	}

	// A session minted with a guarded narrowing asks, under the open host.
	c, err := e.sess.Create(context.Background(), "user:43")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.NarrowSession(c.SessionID, panel.CanvasPolicy{Preset: panel.CanvasGuarded}); err != nil {
		t.Fatal(err)
	}
	if got := e.svc.CanvasFor(c.SessionID); got.Preset != panel.CanvasGuarded || !got.HITLOnCompose {
		t.Fatalf("narrowed %+v", got)
	}
	if !e.svc.NeedsApproval(agentP, switchboard.Tool{Name: panel.ToolCompose}, json.RawMessage(`{"sessionId": "`+c.SessionID+`", "spec": `+mineSpec+`}`)) {
		t.Fatal("a compose in the narrowed session does not ask")
	}
	if e.svc.NeedsApproval(userP, switchboard.Tool{Name: panel.ToolCompose}, json.RawMessage(`{"sessionId": "`+c.SessionID+`", "spec": `+mineSpec+`}`)) {
		t.Fatal("the user's own compose asks")
	}
}

const previewSpec = `{"v": 1, "root": "body", "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Widget"}, "children": ["p"]},
  "p": {"type": "preview", "props": {"title": "Counter", "code": "<button id=b>0</button><script>b.onclick=()=>b.textContent++</script>"}}}}`

// A preview node is refused with SPEC_UNSAFE unless the surface allows
// code preview and a preview origin serves it; then the snapshot carries
// its URL on that origin.
func TestCanvasPreviewGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		canvas   panel.CanvasPolicy
		previews bool
		ok       bool
	}{
		{"off by default", panel.CanvasPolicy{Preset: panel.CanvasOpen}, true, false},
		{"allowed but no preview origin", panel.CanvasPolicy{Preset: panel.CanvasOpen, AllowCodePreview: yes()}, false, false},
		{"allowed with a preview origin", panel.CanvasPolicy{Preset: panel.CanvasOpen, AllowCodePreview: yes()}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := preview.New("http://127.0.0.2:7767", nil)
			e, _, _ := canvasEnv(t, func(o *panel.Options) {
				o.Canvas = tc.canvas
				if tc.previews {
					o.Previews, o.PreviewOrigin = srv, srv.Origin()
				}
			})
			e.tab(t)
			ctx, cancel := context.WithTimeout(switchboard.WithPrincipal(context.Background(), agentP), 30*time.Second)
			defer cancel()
			inv, err := e.callIn(t, ctx, panel.ToolCompose, map[string]any{"spec": json.RawMessage(previewSpec)})
			if !tc.ok {
				if switchboard.CodeOf(err) != switchboard.CodeSpecUnsafe || !strings.Contains(err.Error(), "/nodes/p") || !strings.Contains(err.Error(), "allowCodePreview") {
					t.Fatalf("want SPEC_UNSAFE at /nodes/p: %v", err)
				}
				if len(instances(t, e)) != 0 {
					t.Fatal("a refused preview opened a panel")
				}
				return
			}
			v := result[view](t, inv, err)
			sn, _ := e.svc.Snapshot(context.Background(), v.InstanceID)
			if u := sn.Previews["p"]; !strings.HasPrefix(u, "http://127.0.0.2:7767/p/") {
				t.Fatalf("preview URL %q", u)
			}
		})
	}
}

// A host panel's preview is the host's own code: shown (in the same
// sandbox) whatever the canvas gate says, when a preview origin exists.
func TestHostPreview(t *testing.T) {
	t.Parallel()
	srv := preview.New("http://127.0.0.2:7767", nil)
	e, _, _ := canvasEnv(t, func(o *panel.Options) { o.Previews, o.PreviewOrigin = srv, srv.Origin() })
	e.tab(t)
	spec, issues := panelspec.Validate([]byte(previewSpec), &panelspec.Options{ForceOrigin: panelspec.OriginHost})
	if spec == nil {
		t.Fatal(issues)
	}
	if err := e.svc.Register(panel.Def{ID: "widget.demo", Title: "Widget", Description: "A host widget.", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	if e.svc.CanvasFor("").AllowCodePreview {
		t.Fatal("code preview is on by default")
	}
	v := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "widget.demo"})
	if sn, _ := e.svc.Snapshot(context.Background(), v.InstanceID); !strings.HasPrefix(sn.Previews["p"], srv.Origin()+"/p/") {
		t.Fatalf("host preview: %v", sn.Previews)
	}
}
