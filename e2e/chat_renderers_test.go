package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestChatRendererIDInChromium: a card uses the renderer the page
// registered for its tool's rendererId, and the default body for a
// rendererId the page has no renderer for.
func TestChatRendererIDInChromium(t *testing.T) {
	e, llm := newChatEnv(t)
	for _, tool := range []switchboard.Tool{
		{Name: "kpi.revenue", Description: "This month's revenue.", UI: &switchboard.UIMeta{RendererID: "metric-card"}},
		{Name: "kpi.churn", Description: "This month's churn.", UI: &switchboard.UIMeta{RendererID: "sparkline"}},
	} {
		tool.Class = switchboard.ClassRead
		tool.InputSchema = json.RawMessage(`{"type":"object"}`)
		label := strings.TrimPrefix(tool.Name, "kpi.")
		if err := e.d.RegisterFunc(context.Background(), tool, func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"label": label, "value": 42}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	e.connected(t, ctx, demoTools...)
	poll(t, ctx, chat+`.dataset.sbcReady === "true"`)
	eval[bool](t, ctx, chat+`.renderers = { "metric-card": (part) => {
		const d = document.createElement("div"); d.className = "host-metric";
		d.textContent = part.status === "succeeded" ? part.result.label + " = " + part.result.value + " (" + part.ui.rendererId + ")" : "…";
		return d } }, true`)
	llm.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "k1", Name: "kpi_revenue", Args: `{}`}, {ID: "k2", Name: "kpi_churn", Args: `{}`}}},
		modeltest.Turn{Text: "Revenue and churn are in."},
	)
	say(t, ctx, "How are revenue and churn?")
	poll(t, ctx, `!`+chat+`.busy && !!document.querySelector('`+toolCard("kpi.revenue")+`[data-sbc-status="succeeded"]') && !!document.querySelector('`+toolCard("kpi.churn")+`[data-sbc-status="succeeded"]')`)
	if got := eval[string](t, ctx, `document.querySelector('`+toolCard("kpi.revenue")+` .host-metric')?.textContent ?? "no renderer"`); got != "revenue = 42 (metric-card)" {
		t.Fatalf("the metric-card tool's card shows %q", got)
	}
	if got := eval[string](t, ctx, `(() => { const c = document.querySelector('`+toolCard("kpi.churn")+`');
		return !!c.querySelector(".host-metric") + "|" + !!c.querySelector(".sbc-out .sbc-result") + "|" + !!c.querySelector(".sbc-error") })()`); got != "false|true|false" {
		t.Fatalf("a rendererId the page has no renderer for: host|default|error = %s", got)
	}
}

// TestChatFollowUpPolicyBeforeCapabilities: until the capabilities route
// answers, the element assumes no native follow-up: a send while a run is
// busy keeps its text and posts nothing; once the built-in loop's
// capabilities arrive (native follow-up), Send is enabled again.
func TestChatFollowUpPolicyBeforeCapabilities(t *testing.T) {
	e, llm := newChatEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	e.connected(t, ctx, demoTools...)
	poll(t, ctx, chat+`.dataset.sbcReady === "true"`)
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	defer release()
	llm.Push(modeltest.Turn{Text: "Working on it.", Hold: hold})
	// A fresh element on the same tab whose capabilities request the test
	// holds; every path it requests is recorded.
	eval[bool](t, ctx, `(() => {
		const real = window.switchboard;
		window.capsGate = {};
		const gate = new Promise((r) => { window.capsGate.open = r; });
		window.requested = [];
		const conn = {
			get sessionId() { return real.sessionId; },
			on: (...a) => real.on(...a),
			stream: (...a) => real.stream(...a),
			request: (path, opts) => {
				window.requested.push(path);
				return path.startsWith("/api/v1/agent/capabilities") ? gate.then(() => real.request(path, opts)) : real.request(path, opts);
			},
		};
		const next = document.createElement("switchboard-chat");
		next.setAttribute("thread", "chat_caps");
		`+chat+`.replaceWith(next);
		next.connection = conn;
		return true })()`)
	poll(t, ctx, `window.requested.some((p) => p.startsWith("/api/v1/agent/capabilities"))`)
	say(t, ctx, "Start something long")
	poll(t, ctx, chat+`.busy`)
	say(t, ctx, "and this too")
	got := eval[string](t, ctx, `(() => { const c = `+chat+`;
		return c.querySelector("textarea").value + "|" + c.querySelector(".sbc-send").disabled + "|" + !!c.querySelector(".sbc-queued") + "|" +
			window.requested.some((p) => p.endsWith("/followup")) + "|" + c.dataset.sbcNative })()`)
	if got != "and this too|true|false|false|false" {
		t.Fatalf("a busy send before the capabilities: text|send disabled|queued bubble|followup posted|data-sbc-native = %s", got)
	}
	// The built-in loop takes follow-ups: once it says so, Send is enabled.
	eval[bool](t, ctx, `(window.capsGate.open(), true)`)
	poll(t, ctx, chat+`.dataset.sbcNative === "true" && !`+chat+`.querySelector(".sbc-send").disabled`)
	release()
	poll(t, ctx, `!`+chat+`.busy`)
}
