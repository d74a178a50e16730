package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
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
	d, srvModel := scriptedDaemon(t, daemon.Options{Demo: true, DemoKey: demoKey})
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
	return e, srvModel
}

// scriptedDaemon is a daemon over a SQLite file whose model alias
// "default" points at a scripted OpenAI-compatible server; o supplies the
// rest (store, admin token, model and heartbeat are set here). The test
// ends both.
func scriptedDaemon(t *testing.T, o daemon.Options) (*daemon.Daemon, *modeltest.OpenAI) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	llm := modeltest.NewOpenAI(t)
	models, err := model.NewResolver(map[string]model.Config{
		"default": {Provider: "openai", Model: "scripted-1", BaseURL: llm.BaseURL()},
	}, &model.Options{MaxRetries: -1})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	o.Store, o.AdminToken, o.Resolver = st, adminToken, models
	o.Session.Heartbeat = heartbeat
	d, err := daemon.New(ctx, o)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		st.Close()
	})
	return d, llm
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

// chatShot saves the chat element as docs/chat/NAME.png when
// SWITCHBOARD_CHAT_SHOTS names a directory (`make`-free: run the test with
// SWITCHBOARD_CHAT_SHOTS=$PWD/docs/chat to refresh the docs' pictures).
func chatShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_CHAT_SHOTS")
	if dir == "" {
		return
	}
	// The page at its top, so the demo's sticky header covers nothing.
	eval[bool](t, ctx, `(scrollTo(0, 0), document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => r(true)))))`)
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.Screenshot(chromedp.CSS("switchboard-chat")))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// toolCard is the selector of the chat's card for a call of tool.
func toolCard(tool string) string {
	return `switchboard-chat li.sbc-tool[data-sbc-tool="` + tool + `"]`
}

func TestChatInChromium(t *testing.T) {
	e, llm := newChatEnv(t)
	// A tool that reports progress and finishes when the test says so.
	gate := make(chan struct{})
	var gateOnce sync.Once
	release := func() { gateOnce.Do(func() { close(gate) }) }
	defer release()
	if err := e.d.RegisterFunc(context.Background(), switchboard.Tool{
		Name: "reports.build", Description: "Build the weekly status report.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"week":{"type":"string"}}}`),
	}, func(ctx context.Context, _ json.RawMessage) (any, error) {
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 1, Total: 3, Message: "Collecting figures (1 of 3)"})
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"pages": 4, "week": "2026-W48"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	do(t, ctx, chromedp.EmulateViewport(1280, 1000))
	id := e.connected(t, ctx, demoTools...)
	poll(t, ctx, chat+`.dataset.sbcReady === "true"`)

	t.Run("an empty chat says what it can do", func(t *testing.T) {
		poll(t, ctx, `document.querySelectorAll("switchboard-chat .sbc-empty .sbc-group").length > 0`)
		groups := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-group")].map(n => n.textContent).join(",")`)
		for _, want := range []string{"Tasks", "Reports"} {
			if !strings.Contains(groups, want) {
				t.Errorf("capability groups %q lack %s", groups, want)
			}
		}
		prompts := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-suggestion")].map(n => n.textContent).join("|")`)
		if !strings.Contains(prompts, "Build the weekly status report") {
			t.Fatalf("suggested prompts %q lack the app's read tool", prompts)
		}
		// What the user has open (the digest) leads the answer: the tab
		// reports its page, and a chat that starts afresh reads it.
		eval[bool](t, ctx, `window.switchboard.request("/api/v1/sessions/" + window.switchboard.sessionId + "/context", { method: "PUT",
			body: { contexts: [{ id: "page", kind: "page", label: "Projects", attention: "focused", panels: [] }] } }).then(() => true)`)
		eval[bool](t, ctx, `(() => { const old = `+chat+`; const next = document.createElement("switchboard-chat");
			old.replaceWith(next); next.connection = window.switchboard; return true })()`)
		poll(t, ctx, `document.querySelector("switchboard-chat .sbc-empty-where")?.textContent === "I can see what you have open: Projects."`)
		if first := eval[string](t, ctx, `document.querySelector("switchboard-chat .sbc-suggestion").textContent`); first != "What can I do on Projects?" {
			t.Fatalf("first suggestion %q", first)
		}
		// A suggestion sends itself.
		llm.Push(modeltest.Turn{Text: "On Projects I can list, update and open projects."})
		click(t, ctx, `switchboard-chat .sbc-suggestion`)
		poll(t, ctx, `!`+chat+`.busy && [...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop()?.textContent === "On Projects I can list, update and open projects."`)
		if eval[bool](t, ctx, `!!document.querySelector("switchboard-chat .sbc-empty")`) {
			t.Fatal("the empty state stayed after the first message")
		}
	})

	t.Run("the empty state, as the docs show it", func(t *testing.T) {
		// The picture is of a fresh chat on the page the tab reported.
		eval[bool](t, ctx, `(() => { const old = `+chat+`; const next = document.createElement("switchboard-chat");
			next.setAttribute("thread", "chat_fresh"); old.replaceWith(next); next.connection = window.switchboard; return true })()`)
		poll(t, ctx, `document.querySelectorAll("switchboard-chat .sbc-empty .sbc-group").length > 0`)
		chatShot(t, ctx, "empty")
	})

	t.Run("an answer is rendered as Markdown, and only as Markdown", func(t *testing.T) {
		llm.Push(modeltest.Turn{Text: "## Launch plan\n\nThe **hero video** ships first, then the *press kit*. Run `tasks.list` to check.\n\n" +
			"1. Cut the trailer\n2. Book the studio\n   - Friday works\n\n```\nlaunch --dry-run\n```\n\n" +
			"Details on [the wiki](https://example.com/launch). Not a link: [click](javascript:alert(1)); not markup: <img src=x onerror=alert(1)>."})
		say(t, ctx, "What's the launch plan?")
		poll(t, ctx, `!`+chat+`.busy && !!document.querySelector("switchboard-chat .sbc-assistant pre")`)
		const a = `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop()`
		got := eval[string](t, ctx, `(() => { const m = `+a+`; return [
			m.querySelector("h2")?.textContent, m.querySelector("strong")?.textContent, m.querySelector("em")?.textContent,
			m.querySelector("p code")?.textContent, m.querySelectorAll("ol > li").length, m.querySelector("ol ul li")?.textContent,
			m.querySelector("pre code")?.textContent, [...m.querySelectorAll("a")].map(l => l.href + " " + l.rel).join(";"),
			m.querySelectorAll("img,script,[onerror]").length, m.textContent.includes("<img src=x onerror=alert(1)>"),
			m.textContent.includes("[click](javascript:alert(1))")].join("|") })()`)
		want := "Launch plan|hero video|press kit|tasks.list|2|Friday works|launch --dry-run|https://example.com/launch noopener noreferrer nofollow|0|true|true"
		if got != want {
			t.Fatalf("rendered\n got %s\nwant %s", got, want)
		}
		chatShot(t, ctx, "markdown")
	})

	t.Run("renderMarkdown makes only allowed elements and web links", func(t *testing.T) {
		// Each case: the Markdown, then what the fragment must hold (its
		// links, its element names); and for every case: only allowed
		// elements, no attributes but a link's href/target/rel and a code
		// block's data-lang and class, and each link http(s) with rel=noopener.
		got := eval[string](t, ctx, `import("/sdk/chat.js").then(({ renderMarkdown }) => {
			const cases = [
				["[a](javascript:alert(1)) [b](data:text/html,x) [c](//evil.example/x) [d](vbscript:x) [e](/relative)", ""],
				["[site](HTTPS://Example.com/a?b=1) and https://example.org/x).", "https://example.com/a?b=1 https://example.org/x"],
				["<b>x</b> <script>alert(1)</script> <a href=x>y</a> &amp; &lt;", ""],
				["**bold _and em_** ~~gone~~ `+"`"+`<i>code</i>`+"`"+`", ""],
				["`+"```"+`js\nlet a = '<script>'\n(still streaming", ""],
				["> quote **x**\n> - item [l](https://example.com)\n\n---\n# h1\n###### h6", "https://example.com/"],
				["- a\n  - b\n    - c\n- d\n\n3. three\n4. four", ""],
				// not a link (the quote ends it): the bare URL alone is linked
				["[x](https://example.com/\" onmouseover=\"alert(1))", "https://example.com/"],
			];
			const allowed = new Set(["P","BR","STRONG","EM","DEL","CODE","PRE","A","UL","OL","LI","H1","H2","H3","H4","H5","H6","BLOCKQUOTE","HR"]);
			const out = [];
			for (const [src, links] of cases) {
				const box = document.createElement("div");
				box.append(renderMarkdown(src));
				for (const n of box.querySelectorAll("*")) {
					if (!allowed.has(n.tagName)) out.push("element " + n.tagName + " from " + src);
					for (const a of n.attributes) {
						const ok = (n.tagName === "A" && ["href","target","rel"].includes(a.name)) || (n.tagName === "CODE" && a.name === "data-lang") || (n.tagName === "PRE" && a.name === "class") || (n.tagName === "OL" && a.name === "start");
						if (!ok) out.push("attribute " + a.name + " on " + n.tagName + " from " + src);
					}
					if (n.tagName === "A" && (!/^https?:$/.test(new URL(n.href).protocol) || !n.rel.includes("noopener"))) out.push("link " + n.href);
				}
				const hrefs = [...box.querySelectorAll("a")].map((a) => a.href).join(" ");
				if (hrefs !== links) out.push("links of " + src + ": " + hrefs);
			}
			const nested = document.createElement("div");
			nested.append(renderMarkdown("- a\n  - b\n    - c\n- d\n\n3. three\n4. four"));
			out.push(nested.querySelectorAll("ul ul ul li").length + "|" + nested.querySelector("ol")?.start + "|" + nested.querySelector("ol li")?.textContent);
			const mixed = document.createElement("div");
			mixed.append(renderMarkdown("**bold _and em_** ~~gone~~"));
			out.push(mixed.querySelector("strong em")?.textContent + "|" + mixed.querySelector("del")?.textContent);
			return out.join("\n");
		})`)
		if got != "1|3|three\nand em|gone" {
			t.Fatalf("renderMarkdown:\n%s", got)
		}
	})

	t.Run("a tool call shows its progress, then the host's renderer shows its result", func(t *testing.T) {
		eval[bool](t, ctx, chat+`.toolRenderers = { "reports.build": (part) => {
			const d = document.createElement("div"); d.className = "host-report";
			d.textContent = part.status === "succeeded" ? "Report for " + part.result.week + ": " + part.result.pages + " pages" : "Preparing the " + part.args.week + " report";
			return d } }, true`)
		llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "r1", Name: "reports_build", Args: `{"week":"2026-W48"}`}}},
			modeltest.Turn{Text: "Your report is ready."},
		)
		say(t, ctx, "Build this week's report")
		card := toolCard("reports.build")
		poll(t, ctx, `document.querySelector('`+card+` .sbc-tool-status')?.textContent === "Collecting figures (1 of 3)"`)
		if got := eval[string](t, ctx, `(() => { const c = document.querySelector('`+card+`'); const p = c.querySelector("progress");
			return c.dataset.sbcStatus + "|" + p?.value + "/" + p?.max + "|" + c.querySelector(".host-report")?.textContent })()`); got != "running|1/3|Preparing the 2026-W48 report" {
			t.Fatalf("running card: %s", got)
		}
		chatShot(t, ctx, "tool-running")
		release()
		poll(t, ctx, `document.querySelector('`+card+`').dataset.sbcStatus === "succeeded" && !`+chat+`.busy`)
		if got := eval[string](t, ctx, `document.querySelector('`+card+` .host-report').textContent`); got != "Report for 2026-W48: 4 pages" {
			t.Fatalf("the host renderer shows %q", got)
		}
	})

	t.Run("a run shows its tool calls, asks for approval and drives the tab", func(t *testing.T) {
		llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_list", Args: `{"projectId":"apollo"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c2", Name: "data_projects_update", Args: `{"key":"apollo","values":{"owner":"Kim Park"}}`}}},
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c3", Name: "nav_goto", Args: `{"page":"media"}`}}},
			modeltest.Turn{Text: "All done: Kim owns Apollo now."},
		)
		say(t, ctx, "Give Apollo to Kim, then show me the media")
		poll(t, ctx, `!!document.querySelector('`+toolCard("tasks.list")+`[data-sbc-status="succeeded"] .sbc-out')`)
		if got := eval[string](t, ctx, `document.querySelector('`+toolCard("tasks.list")+` .sbc-result').textContent`); !strings.Contains(got, `"title": "Hero video"`) {
			t.Fatalf("the tasks.list result shows %q", got)
		}
		// The mutation waits for the user: one card, on the call it is about.
		card := toolCard("data.projects.update") + ` .sbc-approval-card`
		poll(t, ctx, `!!document.querySelector('`+card+`')`)
		if got := eval[string](t, ctx, `(() => { const c = document.querySelector('`+toolCard("data.projects.update")+`');
			return c.dataset.sbcStatus + "|" + c.querySelector(".sbc-args").open + "|" + c.querySelector(".sbc-args").textContent + "|" +
				c.querySelector(".sbc-approval-title").textContent + "|" + document.querySelectorAll("switchboard-chat .sbc-approval-title").length })()`); !strings.HasPrefix(got, "waiting|true|") ||
			!strings.Contains(got, `{"owner":"Kim Park"}`) || !strings.Contains(got, "|Assistant wants to ") || !strings.HasSuffix(got, "|1") {
			t.Fatalf("the waiting call shows %q", got)
		}
		if !eval[bool](t, ctx, chat+`.busy`) {
			t.Fatal("the run is not busy while it waits")
		}
		chatShot(t, ctx, "approval")
		click(t, ctx, card+` button.sbc-approve`)
		poll(t, ctx, `document.querySelector('`+card+`').dataset.sbcResolved === "approved"`)
		poll(t, ctx, `!!document.querySelector('`+toolCard("data.projects.update")+`[data-sbc-status="succeeded"]')`)
		if got := eval[string](t, ctx, `document.querySelector('`+card+` .sbc-approval-status').textContent`); got != "Approved." {
			t.Fatalf("the outcome reads %q", got)
		}
		// The browser tool ran in this tab.
		poll(t, ctx, `!!document.querySelector('`+toolCard("nav.goto")+`[data-sbc-status="succeeded"][data-sbc-tab="true"]')`)
		poll(t, ctx, `location.pathname === "/demo/media" && !`+chat+`.busy`)
		if got := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop().textContent`); got != "All done: Kim owns Apollo now." {
			t.Fatalf("assistant said %q", got)
		}
		eval[bool](t, ctx, `(() => { const c = document.querySelector('`+toolCard("data.projects.update")+`');
			c.querySelector(".sbc-out").open = true; c.scrollIntoView({block: "end"}); return true })()`)
		chatShot(t, ctx, "approved")
		res := panelCall[map[string]any](t, e, "data.projects.query", map[string]any{"query": map[string]any{"where": map[string]any{"id": "apollo"}}})
		if owner := res["records"].([]any)[0].(map[string]any)["owner"]; owner != "Kim Park" {
			t.Fatalf("owner %v", owner)
		}
		// The chat stayed mounted across the page change, bound to this tab.
		if got := eval[string](t, ctx, `document.body.dataset.session`); got != id {
			t.Fatalf("session changed to %s", got)
		}
	})

	t.Run("a denied call is shown denied and nothing changes", func(t *testing.T) {
		llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "d1", Name: "data_projects_update", Args: `{"key":"apollo","values":{"owner":"Sam Lee"}}`}}},
			modeltest.Turn{Text: "Understood: Apollo stays with Kim."},
		)
		say(t, ctx, "Give Apollo back to Sam")
		// The run mints its own tool call ids: find the card of the new call.
		waiting := toolCard("data.projects.update") + `[data-sbc-status="waiting"]`
		poll(t, ctx, `!!document.querySelector('`+waiting+` .sbc-approval-card button.sbc-deny')`)
		card := `switchboard-chat li.sbc-tool[data-sbc-call="` + eval[string](t, ctx, `document.querySelector('`+waiting+`').dataset.sbcCall`) + `"]`
		click(t, ctx, card+` button.sbc-deny`)
		poll(t, ctx, `document.querySelector('`+card+`').dataset.sbcStatus === "denied" && !`+chat+`.busy`)
		if got := eval[string](t, ctx, `(() => { const c = document.querySelector('`+card+`');
			return c.querySelector(".sbc-approval-card").dataset.sbcResolved + "|" + c.querySelector(".sbc-tool-status").textContent + "|" +
				c.querySelector(".sbc-approval-status").textContent + "|" + c.querySelectorAll("button:not(:disabled)").length })()`); got != "denied|Denied|Denied.|0" {
			t.Fatalf("the denied call shows %q", got)
		}
		if got := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop().textContent`); got != "Understood: Apollo stays with Kim." {
			t.Fatalf("assistant said %q", got)
		}
		res := panelCall[map[string]any](t, e, "data.projects.query", map[string]any{"query": map[string]any{"where": map[string]any{"id": "apollo"}}})
		if owner := res["records"].([]any)[0].(map[string]any)["owner"]; owner != "Kim Park" {
			t.Fatalf("a denied call changed the owner to %v", owner)
		}
		chatShot(t, ctx, "denied")
	})

	t.Run("a chat that comes back shows its history, each call with its outcome", func(t *testing.T) {
		eval[bool](t, ctx, `(() => { const old = `+chat+`; const next = document.createElement("switchboard-chat");
			next.setAttribute("thread", old.thread); old.replaceWith(next); next.connection = window.switchboard; return true })()`)
		poll(t, ctx, chat+`.dataset.sbcReady === "true"`)
		got := eval[string](t, ctx, `[...document.querySelectorAll('`+toolCard("data.projects.update")+`')].map(c => c.dataset.sbcStatus + ":" + !!c.querySelector(".sbc-out")).join(",") + "|" +
			[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop().textContent`)
		if got != "succeeded:true,denied:false|Understood: Apollo stays with Kim." {
			t.Fatalf("history shows %q", got)
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
		before := eval[int](t, ctx, `document.querySelectorAll("switchboard-chat .sbc-approval-card").length`)
		say(t, ctx, "Hand Borealis to Alex with a 9000 budget")
		const owner = `[data-sb-panel="project.settings"] [data-sb-path="owner"]`
		poll(t, ctx, `document.querySelector('`+owner+`')?.value === "Alex Doe"`)
		// The save waits for the user; nothing is stored yet.
		poll(t, ctx, `!!document.querySelector('switchboard-chat .sbc-approval-card:not([data-sbc-resolved])')`)
		query := func() map[string]any {
			res := panelCall[map[string]any](t, e, "data.projects.query", map[string]any{"query": map[string]any{"where": map[string]any{"id": "borealis"}}})
			return res["records"].([]any)[0].(map[string]any)
		}
		if rec := query(); rec["owner"] != "Sam Lee" {
			t.Fatalf("saved before the approval: %v", rec)
		}
		// One act, one question: panel.run_action forwards its approval to
		// the tool it calls, so the user is asked once, for that tool.
		click(t, ctx, `switchboard-chat .sbc-approval-card:not([data-sbc-resolved]) button.sbc-approve`)
		poll(t, ctx, `!!document.querySelector('switchboard-chat li.sbc-tool[data-sbc-tool="panel.run_action"][data-sbc-status="succeeded"]')`)
		poll(t, ctx, `!`+chat+`.busy`)
		if asked := eval[string](t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-approval-card")].slice(`+strconv.Itoa(before)+`).map(c => c.closest("li").dataset.sbcTool).join(", ")`); asked != "data.projects.update" {
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
		// (dataset.sbcText is the text as written; the rendered paragraph trims it)
		poll(t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop()?.dataset.sbcText === "first "`)
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

// TestChatWithoutModelInChromium: on a daemon with no model the chat
// answers with a setup card whose config snippet keeps its line breaks,
// not one red line with the YAML run together.
func TestChatWithoutModelInChromium(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	do(t, ctx, chromedp.EmulateViewport(1280, 1000))
	e.connected(t, ctx, demoTools...)
	poll(t, ctx, chat+`.dataset.sbcReady === "true"`)
	say(t, ctx, "hello")
	poll(t, ctx, `!!document.querySelector("switchboard-chat .sbc-setup pre")`)
	yaml := eval[string](t, ctx, `document.querySelector("switchboard-chat .sbc-setup pre").textContent`)
	if !strings.Contains(yaml, "models:\n  default:\n") {
		t.Fatalf("the setup card's snippet %q lost its line breaks", yaml)
	}
	// Shown as written: each line of the snippet is its own line on screen.
	if lines := eval[float64](t, ctx, `(p => p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight || 14))(document.querySelector("switchboard-chat .sbc-setup pre"))`); lines < 4 {
		t.Errorf("the snippet renders as %.1f lines", lines)
	}
}
