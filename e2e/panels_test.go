package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
)

// composedSpec is the assistant's own panel: the demo's projects from the
// SQL adapter, a text that looks like markup, and a link.
const composedSpec = `{"v": 1, "root": "body",
 "sources": {"all": {"kind": "adapter", "adapter": "projects", "query": {"orderBy": "id"}}},
 "nodes": {
  "body":  {"type": "panel-body", "props": {"title": "Project owners"}, "children": ["intro", "table", "docs"]},
  "intro": {"type": "text", "props": {"text": "<b>not bold</b> & plain"}},
  "table": {"type": "table", "props": {"source": "all", "columns": [{"key": "name", "label": "Project"}, {"key": "owner", "label": "Owner"}, {"key": "budget", "label": "Budget", "kind": "number"}]}},
  "docs":  {"type": "link", "props": {"href": "https://example.com/docs", "label": "Docs", "external": true}}
 }}`

// panelCall calls a panel tool as the admin and decodes its result.
func panelCall[T any](t *testing.T, e *env, tool string, input any) T {
	t.Helper()
	b, _ := json.Marshal(input)
	resp, err := e.call(tool, "", string(b))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var v T
	if err := json.Unmarshal(resp.Result, &v); err != nil {
		t.Fatalf("%s: %s: %v", tool, resp.Result, err)
	}
	return v
}

// waitDaemon polls the daemon until ok (the tab reports edits
// asynchronously, as waitTools polls advertisements).
func waitDaemon(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// click clicks an element as a user would, after bringing it to the middle
// of the view (the demo's sticky header covers the top edge, where a plain
// scroll-into-view would leave it).
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	eval[bool](t, ctx, `(() => { document.querySelector('`+sel+`').scrollIntoView({block: "center"}); return true })()`)
	do(t, ctx, chromedp.Click(chromedp.CSS(sel)))
}

func TestPanelsInChromium(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	e.connected(t, ctx, demoTools...)
	poll(t, ctx, `!!window.switchboardPanels`)
	eval[bool](t, ctx, `window.switchboardPanels.ready.then(() => true)`)

	var composed string
	t.Run("a composed panel renders, with its provenance badge", func(t *testing.T) {
		v := panelCall[struct{ InstanceID string }](t, e, panel.ToolCompose, map[string]any{"spec": json.RawMessage(composedSpec)})
		composed = v.InstanceID
		sel := `[data-sb-instance="` + composed + `"]`
		poll(t, ctx, `document.querySelectorAll('`+sel+` tbody tr').length === 6`)
		if got := eval[string](t, ctx, `document.querySelector('`+sel+`').dataset.sbOrigin + " " + document.querySelector('`+sel+` [data-sb-badge]').textContent`); got != "agent Composed by admin" { // composed through the admin's API: the chrome names who
			t.Fatalf("badge: %q", got)
		}
		// Text is text: the markup-looking string is shown literally.
		if got := eval[string](t, ctx, `(() => { const p = document.querySelector('`+sel+` [data-sb-node="intro"]'); return p.children.length + "|" + p.textContent })()`); got != "0|<b>not bold</b> & plain" {
			t.Fatalf("text node: %q", got)
		}
		if got := eval[string](t, ctx, `(() => { const a = document.querySelector('`+sel+` a.sb-link'); return a.href + " " + a.target + " " + a.rel })()`); got != "https://example.com/docs _blank noopener noreferrer nofollow" {
			t.Fatalf("link: %q", got)
		}
	})

	var form string
	const field = `[data-sb-panel="project.settings"] [data-sb-path="%s"]`
	f := func(path string) string { return strings.Replace(field, "%s", path, 1) }
	t.Run("fill sets values but never a field the user is editing", func(t *testing.T) {
		click(t, ctx, `[data-open-settings="apollo"]`)
		poll(t, ctx, `document.querySelector('`+f("name")+`')?.value === "Apollo launch site"`)
		form = eval[string](t, ctx, `document.querySelector('[data-sb-panel="project.settings"]').dataset.sbInstance`)
		// The user types into the name field.
		do(t, ctx, chromedp.SendKeys(chromedp.CSS(f("name")), " (v2)"))
		waitDaemon(t, "the edit to reach the daemon", func() bool {
			list := panelCall[panel.ListResult](t, e, panel.ToolList, map[string]any{})
			for _, in := range list.Instances {
				if in.InstanceID == form && len(in.Dirty["project"]) == 1 {
					return true
				}
			}
			return false
		})
		res := panelCall[panel.FillResult](t, e, panel.ToolFill, map[string]any{"instanceId": form, "values": map[string]any{
			"name": "Apollo by the agent", "owner": "Kim Park", "budget": 15000, "status": "paused",
		}})
		if strings.Join(res.Applied, ",") != "budget,owner,status" || len(res.Skipped) != 1 || res.Skipped[0].Path != "name" || len(res.Errors) != 0 {
			t.Fatalf("fill: %+v", res)
		}
		poll(t, ctx, `document.querySelector('`+f("owner")+`').value === "Kim Park" && document.querySelector('`+f("budget")+`').value === "15000"`)
		if got := eval[string](t, ctx, `document.querySelector('`+f("name")+`').value`); got != "Apollo launch site (v2)" {
			t.Fatalf("the user's field was overwritten: %q", got)
		}
		if got := eval[string](t, ctx, `document.querySelector('`+f("status")+`').selectedOptions[0].textContent`); got != "Paused" {
			t.Fatalf("status shows %q", got)
		}
		if !eval[bool](t, ctx, `document.querySelector('[data-sb-panel="project.settings"] [data-sb-field="owner"]').classList.contains("sb-field-filled")`) {
			t.Fatal("a filled field is not marked")
		}
		// Nothing was saved: the composed table still shows the old owner.
		if got := eval[string](t, ctx, `document.querySelector('[data-sb-instance="`+composed+`"] tbody tr td:nth-child(2)').textContent`); got != "Alex Doe" {
			t.Fatalf("fill saved something: apollo's owner shows %q", got)
		}
	})

	t.Run("saving goes through the broker and refreshes the other panel", func(t *testing.T) {
		click(t, ctx, `[data-sb-panel="project.settings"] [data-sb-action="save"]`)
		poll(t, ctx, `document.querySelector('[data-sb-panel="project.settings"] [data-sb-action-status="save"]')?.textContent === "Done."`)
		poll(t, ctx, `document.querySelector('[data-sb-instance="`+composed+`"] tbody tr td:nth-child(2)').textContent === "Kim Park"`)
		res := panelCall[map[string]any](t, e, "data.projects.query", map[string]any{"query": map[string]any{"where": map[string]any{"id": "apollo"}}})
		rec := res["records"].([]any)[0].(map[string]any)
		if rec["name"] != "Apollo launch site (v2)" || rec["owner"] != "Kim Park" || rec["budget"] != float64(15000) || rec["status"] != "paused" {
			t.Fatalf("stored %v", rec)
		}
		// The save cleared the unsaved marks.
		poll(t, ctx, `!document.querySelector('[data-sb-panel="project.settings"] .sb-field-filled, [data-sb-panel="project.settings"] .sb-field-edited')`)
	})

	t.Run("a hostile spec never renders", func(t *testing.T) {
		before := eval[int](t, ctx, `document.querySelectorAll('[data-sb-instance]').length`)
		hostile := `{"v": 1, "root": "b", "nodes": {"b": {"type": "panel-body", "children": ["l", "i"]},
			"l": {"type": "link", "props": {"href": "java\tscript:alert(1)", "label": "click"}},
			"i": {"type": "image", "props": {"src": "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "alt": "x"}}}}`
		_, err := e.call(panel.ToolCompose, "", `{"spec": `+hostile+`}`)
		if ce := switchboard.AsError(err); ce == nil || ce.Code != switchboard.CodeSpecUnsafe {
			t.Fatalf("compose of a hostile spec: %v", err)
		}
		if got := eval[int](t, ctx, `document.querySelectorAll('[data-sb-instance]').length`); got != before {
			t.Fatalf("%d panels, had %d", got, before)
		}
		// The renderer checks URLs again: a spec that got past the server
		// (here handed to it directly) still renders no script URL.
		got := eval[string](t, ctx, `import("/sdk/panels.js").then(({ renderPanel }) => {
			const box = document.createElement("div");
			renderPanel({ v: 1, origin: "agent", root: "b", nodes: {
				b: { type: "panel-body", children: ["l", "l2", "i", "t", "x"] },
				l: { type: "link", props: { href: "javascript:alert(1)", label: "click" } },
				l2: { type: "link", props: { href: " \u0001JaVaScRiPt:alert(1)", label: "click" } },
				i: { type: "image", props: { src: "data:image/svg+xml;base64,PHN2Zy8+", alt: "x" } },
				t: { type: "table", props: { columns: [{ key: "u", label: "U", kind: "link" }], rows: [{ u: "javascript:alert(1)" }] } },
				x: { type: "text", props: { text: "<img src=x onerror=alert(1)>" } },
			} }, box);
			return [box.querySelectorAll("a").length, box.querySelectorAll("img").length,
				box.querySelectorAll("[data-sb-unsafe]").length, box.querySelector('[data-sb-node="x"]').textContent].join("|");
		})`)
		if got != "0|0|4|<img src=x onerror=alert(1)>" {
			t.Fatalf("client-side check: %q", got)
		}
	})

	t.Run("closing from the page", func(t *testing.T) {
		click(t, ctx, `[data-sb-instance="`+composed+`"] .sb-close`)
		waitDaemon(t, "the close to reach the daemon", func() bool {
			list := panelCall[panel.ListResult](t, e, panel.ToolList, map[string]any{})
			for _, in := range list.Instances {
				if in.InstanceID == composed {
					return false
				}
			}
			return true
		})
		// And from the agent.
		panelCall[map[string]any](t, e, panel.ToolClose, map[string]any{"instanceId": form})
		poll(t, ctx, `document.querySelectorAll('[data-sb-instance]').length === 0`)
	})
}
