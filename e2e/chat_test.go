package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/daemon"
	"github.com/switchboardhq/switchboard/model"
	"github.com/switchboardhq/switchboard/model/modeltest"
	"github.com/switchboardhq/switchboard/session"
	"github.com/switchboardhq/switchboard/sqlite"
)

// newChatEnv is newEnv with an assistant: the daemon's model alias points
// at a scripted OpenAI-compatible server, and an api tool (tasks.list) is
// served by a Go function.
func newChatEnv(t *testing.T) (*env, *modeltest.OpenAI) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser end-to-end tests: %s not found", chromium)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srvModel := modeltest.NewOpenAI(t)
	models, err := model.NewResolver(map[string]model.Config{
		"default": {Provider: "openai", Model: "scripted-1", BaseURL: srvModel.BaseURL()},
	}, &model.Options{MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{
		Store: st, AdminToken: adminToken, Demo: true, DemoKey: demoKey, Resolver: models,
		Session: session.Options{Heartbeat: heartbeat},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterFunc(ctx, switchboard.Tool{
		Name: "tasks.list", Description: "List the open tasks of a project.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"projectId":{"type":"string"}}}`),
	}, func(context.Context, json.RawMessage) (any, error) {
		return []map[string]string{{"id": "t1", "title": "Hero video"}, {"id": "t2", "title": "Press kit"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, d: d, admin: nil}
	e.srv = httptestServer(t, d)
	e.admin = client.New(e.srv.URL, adminToken, nil)
	e.browser = startChromium(t, e)
	t.Cleanup(func() {
		d.Close()
		st.Close()
	})
	return e, srvModel
}

// chat is the demo page's <switchboard-chat>.
const chat = `document.querySelector("switchboard-chat")`

// say types text into the chat's composer and presses Enter.
func say(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`switchboard-chat textarea`), text), enter)
}

// enter presses Enter the way a keyboard does: a key down the page may
// cancel, and a key up. (chromedp's "\r" adds a char event that types a
// line break even when keydown was cancelled; a real keyboard does not.)
var enter = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
		}); err != nil {
			return err
		}
	}
	return nil
})

func TestChatInChromium(t *testing.T) {
	e, llm := newChatEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	id := e.connected(t, ctx, demoTools...)
	poll(t, ctx, chat+`.dataset.sbcReady === "true"`)

	t.Run("a run shows its tool calls, asks for approval and drives the tab", func(t *testing.T) {
		llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_list", Args: `{"projectId":"apollo"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c2", Name: "data_projects_update", Args: `{"key":"apollo","values":{"owner":"Kim Park"}}`}}},
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c3", Name: "nav_goto", Args: `{"page":"media"}`}}},
			modeltest.Turn{Text: "All done: Kim owns Apollo now."},
		)
		say(t, ctx, "Give Apollo to Kim, then show me the media")
		poll(t, ctx, `!!document.querySelector('switchboard-chat li.sbc-tool[data-sbc-tool="tasks.list"][data-sbc-status="succeeded"]')`)
		// The mutation waits for the user: a card in the chat.
		card := `switchboard-chat li.sbc-approval[data-sbc-tool="data.projects.update"]`
		poll(t, ctx, `!!document.querySelector('`+card+`')`)
		if got := eval[string](t, ctx, `document.querySelector('`+card+` pre').textContent`); !strings.Contains(got, `"owner": "Kim Park"`) {
			t.Fatalf("the card shows %q", got)
		}
		if !eval[bool](t, ctx, chat+`.busy`) {
			t.Fatal("the run is not busy while it waits")
		}
		click(t, ctx, card+` button.sbc-approve`)
		poll(t, ctx, `document.querySelector('`+card+`').dataset.sbcResolved === "approved"`)
		poll(t, ctx, `!!document.querySelector('switchboard-chat li.sbc-tool[data-sbc-tool="data.projects.update"][data-sbc-status="succeeded"]')`)
		// The browser tool ran in this tab.
		poll(t, ctx, `!!document.querySelector('switchboard-chat li.sbc-tool[data-sbc-tool="nav.goto"][data-sbc-status="succeeded"][data-sbc-tab="true"]')`)
		poll(t, ctx, `location.pathname === "/demo/media" && !`+chat+`.busy`)
		if got := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].map(n => n.textContent).join("|")`); got != "All done: Kim owns Apollo now." {
			t.Fatalf("assistant said %q", got)
		}
		res := panelCall[map[string]any](t, e, "data.projects.query", map[string]any{"query": map[string]any{"where": map[string]any{"id": "apollo"}}})
		if owner := res["records"].([]any)[0].(map[string]any)["owner"]; owner != "Kim Park" {
			t.Fatalf("owner %v", owner)
		}
		// The chat stayed mounted across the page change, bound to this tab.
		if got := eval[string](t, ctx, `document.body.dataset.session`); got != id {
			t.Fatalf("session changed to %s", got)
		}
	})

	t.Run("the assistant opens, fills and saves a panel only after approval", func(t *testing.T) {
		// The model reads each tool result to make its next call.
		llm.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "p1", Name: "panel_open", Args: `{"panel":"project.settings","params":{"projectId":"borealis"}}`}}})
		llm.Func(func(n int, body map[string]any) modeltest.Turn {
			msgs, _ := body["messages"].([]any)
			last, _ := msgs[len(msgs)-1].(map[string]any)
			content, _ := last["content"].(string)
			if parts, ok := last["content"].([]any); ok && len(parts) > 0 { // content parts
				p, _ := parts[0].(map[string]any)
				content, _ = p["text"].(string)
			}
			var res struct {
				InstanceID string   `json:"instanceId"`
				Applied    []string `json:"applied"`
				Status     string   `json:"status"`
			}
			var envelope struct {
				Data json.RawMessage `json:"data"` // the loop wraps tool output as data
			}
			if json.Unmarshal([]byte(content), &envelope) == nil && len(envelope.Data) > 0 {
				content = string(envelope.Data)
			}
			_ = json.Unmarshal([]byte(content), &res)
			switch {
			case res.Status != "":
				return modeltest.Turn{Text: "Saved: " + res.Status}
			case res.Applied != nil:
				return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "p3", Name: "panel_run_action", Args: `{"instanceId":"` + res.InstanceID + `","action":"save"}`}}}
			default:
				return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "p2", Name: "panel_fill", Args: `{"instanceId":"` + res.InstanceID + `","values":{"owner":"Alex Doe","budget":9000}}`}}}
			}
		})
		defer llm.Func(nil)
		before := eval[int](t, ctx, `document.querySelectorAll("switchboard-chat li.sbc-approval").length`)
		say(t, ctx, "Hand Borealis to Alex with a 9000 budget")
		const owner = `[data-sb-panel="project.settings"] [data-sb-path="owner"]`
		poll(t, ctx, `document.querySelector('`+owner+`')?.value === "Alex Doe"`)
		// The save waits for the user; nothing is stored yet.
		poll(t, ctx, `!!document.querySelector('switchboard-chat li.sbc-approval:not([data-sbc-resolved])')`)
		query := func() map[string]any {
			res := panelCall[map[string]any](t, e, "data.projects.query", map[string]any{"query": map[string]any{"where": map[string]any{"id": "borealis"}}})
			return res["records"].([]any)[0].(map[string]any)
		}
		if rec := query(); rec["owner"] != "Sam Lee" {
			t.Fatalf("saved before the approval: %v", rec)
		}
		// One act, one question: panel.run_action forwards its approval to
		// the tool it calls, so the user is asked once, for that tool.
		click(t, ctx, `switchboard-chat li.sbc-approval:not([data-sbc-resolved]) button.sbc-approve`)
		poll(t, ctx, `!!document.querySelector('switchboard-chat li.sbc-tool[data-sbc-tool="panel.run_action"][data-sbc-status="succeeded"]')`)
		poll(t, ctx, `!`+chat+`.busy`)
		if asked := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat li.sbc-approval")].slice(`+strconv.Itoa(before)+`).map(l => l.dataset.sbcTool).join(", ")`); asked != "data.projects.update" {
			t.Fatalf("approval cards %q, want one for data.projects.update", asked)
		}
		if got := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop().textContent`); got != "Saved: ok" {
			t.Fatalf("run_action reported %q", got)
		}
		if rec := query(); rec["owner"] != "Alex Doe" || rec["budget"] != float64(9000) {
			t.Fatalf("stored %v", rec)
		}
		poll(t, ctx, `document.querySelector('[data-sb-panel="project.settings"] [data-sb-action-status="save"]')?.textContent === "Done."`)
	})

	t.Run("an element that comes back resumes after the last event it showed", func(t *testing.T) {
		hold := make(chan struct{})
		llm.Push(modeltest.Turn{Text: "first second", ChunkSize: 6, Hold: hold})
		say(t, ctx, "Say two words")
		poll(t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop()?.textContent === "first "`)
		// The element goes away mid-run (a framework re-mount, say) and a
		// new one takes its place.
		eval[bool](t, ctx, `(() => { const old = `+chat+`; const next = document.createElement("switchboard-chat");
			old.replaceWith(next); next.connection = window.switchboard; return true })()`)
		poll(t, ctx, chat+`.dataset.sbcReady === "true" && `+chat+`.busy`)
		close(hold)
		poll(t, ctx, `!`+chat+`.busy`)
		if got := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop().textContent`); got != "first second" {
			t.Fatalf("resumed text %q (a replay from the start would repeat the first word)", got)
		}
	})

	t.Run("with native follow-up, a busy send is queued and consumed", func(t *testing.T) {
		if eval[string](t, ctx, chat+`.dataset.sbcNative`) != "true" {
			t.Fatal("the built-in loop has native follow-up")
		}
		hold := make(chan struct{})
		llm.Push(modeltest.Turn{Text: "working on it", Hold: hold}, modeltest.Turn{Text: "and the follow-up too"})
		say(t, ctx, "Start something long")
		poll(t, ctx, chat+`.busy && [...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop()?.textContent.startsWith("working")`)
		say(t, ctx, "also this")
		poll(t, ctx, `document.querySelector('switchboard-chat li.sbc-queued')?.textContent === "also this"`)
		close(hold)
		poll(t, ctx, `!`+chat+`.busy && !document.querySelector('switchboard-chat li.sbc-queued')`)
		if got := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat li.sbc-user")].pop().textContent + "|" + [...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop().textContent`); got != "also this|and the follow-up too" {
			t.Fatalf("after the follow-up: %q", got)
		}
	})

	t.Run("without native follow-up, a busy composer keeps the text and sends nothing", func(t *testing.T) {
		// A chat last run by an AI SDK client: the runtime says it has no
		// native follow-up for it.
		llm.Push(modeltest.Turn{Text: "hello from useChat"})
		eval[bool](t, ctx, `window.switchboard.request("/api/v1/agent/chat", { method: "POST", body: {
			id: "chat_aisdk", trigger: "submit-message",
			messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }] } }).then(() => true)`)
		eval[bool](t, ctx, `(() => { const old = `+chat+`; const next = document.createElement("switchboard-chat");
			next.setAttribute("thread", "chat_aisdk"); old.replaceWith(next); next.connection = window.switchboard; return true })()`)
		poll(t, ctx, chat+`.dataset.sbcReady === "true"`)
		if got := eval[string](t, ctx, chat+`.dataset.sbcNative`); got != "false" {
			t.Fatalf("nativeFollowUp for an AI SDK chat: %s", got)
		}
		hold := make(chan struct{})
		llm.Push(modeltest.Turn{Text: "busy now", Hold: hold})
		asked := len(llm.Requests())
		say(t, ctx, "Do a thing")
		poll(t, ctx, chat+`.busy`)
		// The element is busy before the model server has the request; count
		// from when it does, or the held request itself looks like a send.
		for deadline := time.Now().Add(stepTimeout); len(llm.Requests()) == asked; {
			if time.Now().After(deadline) {
				t.Fatal("the model never received the busy turn")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !eval[bool](t, ctx, `document.querySelector("switchboard-chat .sbc-send").disabled`) {
			t.Fatal("send is enabled while busy")
		}
		sent := len(llm.Requests())
		say(t, ctx, "not yet")
		if got := eval[string](t, ctx, `document.querySelector("switchboard-chat textarea").value`); got != "not yet" {
			t.Fatalf("the composer holds %q", got)
		}
		if eval[int](t, ctx, `document.querySelectorAll("switchboard-chat li.sbc-queued").length`) != 0 {
			t.Fatal("a queued bubble appeared without native follow-up")
		}
		close(hold)
		poll(t, ctx, `!`+chat+`.busy && !document.querySelector("switchboard-chat .sbc-send").disabled`)
		if len(llm.Requests()) != sent {
			t.Fatal("Enter sent the text while busy")
		}
		if got := eval[string](t, ctx, `document.querySelector("switchboard-chat textarea").value`); got != "not yet" {
			t.Fatalf("the composer lost the text: %q", got)
		}
	})
}

func httptestServer(t *testing.T, d *daemon.Daemon) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}
