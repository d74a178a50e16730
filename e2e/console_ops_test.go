package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// consoleShot captures the page (or the element sel) as a PNG. With
// SWITCHBOARD_CONSOLE_SHOTS=1 it writes docs/console/NAME.png, the
// screenshots docs/console.md shows; otherwise it only checks one can be
// taken.
func consoleShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	take := chromedp.FullScreenshot(100)
	if strings.HasPrefix(name, "narrow") { // the first screenful, as a phone shows it
		take = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(sctx, take)
	if err != nil || len(png) == 0 {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if os.Getenv("SWITCHBOARD_CONSOLE_SHOTS") == "" {
		return
	}
	dir := filepath.Join("..", "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// text is the trimmed textContent of the first element matching sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	b, _ := json.Marshal(sel)
	return eval[string](t, ctx, `(document.querySelector(`+string(b)+`)?.textContent ?? '').trim()`)
}

// opsTools registers the tools the operator test drives: a hitl create
// with a schema worth a form and a declared inverse, and that inverse.
func opsTools(t *testing.T, e *env) *atomic.Int32 {
	t.Helper()
	ctx := context.Background()
	var created atomic.Int32
	create := switchboard.Tool{Name: "tasks.create", Description: "Create a task in the inbox.", Class: switchboard.ClassMutate,
		Approval: switchboard.ApprovalHITL, Inverse: &switchboard.Inverse{Tool: "tasks.delete", Input: map[string]string{"id": "/result/id"}},
		InputSchema: json.RawMessage(`{"type":"object","required":["title"],"properties":{
			"title":{"type":"string","minLength":3,"description":"What to do."},
			"priority":{"enum":["low","high"]},
			"estimate":{"type":"integer","minimum":1},
			"urgent":{"type":"boolean"},
			"due":{"type":"string","format":"date"}}}`)}
	err := e.d.RegisterFunc(ctx, create, func(_ context.Context, in json.RawMessage) (any, error) {
		var v struct{ Title string }
		_ = json.Unmarshal(in, &v)
		n := created.Add(1)
		return map[string]any{"id": "t" + string(rune('0'+n)), "title": v.Title}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	del := switchboard.Tool{Name: "tasks.delete", Description: "Delete a task.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}`)}
	if err := e.d.RegisterFunc(ctx, del, func(context.Context, json.RawMessage) (any, error) { return map[string]bool{"deleted": true}, nil }); err != nil {
		t.Fatal(err)
	}
	return &created
}

// agentCall starts an agent's call that waits for approval.
func agentCall(t *testing.T, e *env, tok, title string) string {
	t.Helper()
	c := client.New(e.srv.URL, tok, nil)
	resp, err := c.CallToolWith(context.Background(), "tasks.create", json.RawMessage(`{"title":"`+title+`"}`), client.CallOptions{}, client.CallExtra{Async: true})
	if err != nil || resp.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("agent call: %+v %v", resp, err)
	}
	return resp.InvocationID
}

// TestConsoleOperatorInChromium runs the system from the console the way an
// operator would: the catalog with an open tab's live tools and approval
// column, the try-it form (the schema's messages in the browser, the
// daemon's SCHEMA_VIOLATION on its field, a result), an agent token made
// in the console, the approvals inbox updating live with the outcome of
// each decision, the activity ledger (outcome, details, filters, reverse,
// verify), agents, tabs, sign-out, the favicon, keyboard use and a 360 px
// layout — with screenshots for docs/console.md.
func TestConsoleOperatorInChromium(t *testing.T) {
	e := newEnv(t)
	opsTools(t, e)
	demo, cancelDemo := e.tab(t, e.srv.URL+"/demo/")
	defer cancelDemo()
	sid := e.connected(t, demo, demoTools...)

	tab, cancel := e.tab(t, e.srv.URL+"/")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1280, 900), chromedp.WaitVisible("html[data-console=ready] #signin-token"),
		chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"), chromedp.WaitVisible("#tools tr"))

	// Catalog: live tab tools marked with their session; the approval column.
	poll(t, tab, `[...document.querySelectorAll('#tools tr')].some(r => r.cells[0].textContent.startsWith('nav.goto') && r.querySelector('.badge.live')?.dataset.session === '`+sid+`')`)
	poll(t, tab, `[...document.querySelectorAll('#tools tr')].some(r => r.cells[0].textContent === 'tasks.create' && r.cells[3].textContent === 'hitl')`)
	do(t, tab, chromedp.SendKeys("#query", "create a task"))
	poll(t, tab, `document.getElementById('catalog-count').textContent.includes('create a task') && document.querySelector('#tools tr td:nth-child(4)')?.textContent === 'hitl'`)

	// Try it: the schema's own checks first, in the browser.
	do(t, tab, chromedp.Click(`#tools tr button.link`), chromedp.WaitVisible(`#describe form.tryit`))
	if got := text(t, tab, "#describe h2"); got != "tasks.create" {
		t.Fatalf("describe shows %q", got)
	}
	if typ := eval[string](t, tab, `document.querySelector('[data-field=due] input').type`); typ != "date" {
		t.Errorf("a format: date field is a %q input, want date", typ)
	}
	do(t, tab, chromedp.Click(`#describe form.tryit button[type=submit]`))
	poll(t, tab, `document.querySelector('[data-field=title] .field-error').textContent === 'title is required'`)
	if focused := eval[string](t, tab, `document.activeElement.name`); focused != "title" {
		t.Errorf("focus after a bad submit is on %q, want the title field", focused)
	}
	do(t, tab, chromedp.SendKeys(`[data-field=title] input`, "ab"), chromedp.SendKeys(`[data-field=estimate] input`, "0"),
		chromedp.Click(`#describe form.tryit button[type=submit]`))
	poll(t, tab, `document.querySelector('[data-field=title] .field-error').textContent === 'title must be at least 3 characters'`)
	if got := text(t, tab, "[data-field=estimate] .field-error"); got != "estimate must be at least 1" {
		t.Errorf("estimate message %q", got)
	}
	// Sent unchecked, the daemon's SCHEMA_VIOLATION lands on the field its pointer names.
	do(t, tab, chromedp.Click(`#describe form.tryit input[type=checkbox]:not([name])`), chromedp.Click(`#describe form.tryit button[type=submit]`))
	poll(t, tab, `document.querySelector('#describe .result').textContent.includes('SCHEMA_VIOLATION')`)
	poll(t, tab, `/\(\/(title|estimate)\)/.test(document.querySelector('[data-field=title] .field-error').textContent + document.querySelector('[data-field=estimate] .field-error').textContent)`)
	consoleShot(t, tab, "catalog-tryit-error")
	do(t, tab, chromedp.Click(`#describe form.tryit input[type=checkbox]:not([name])`))
	eval[bool](t, tab, `(document.querySelector('[data-field=estimate] input').value = '', document.querySelector('[data-field=title] input').value = '', true)`)
	do(t, tab, chromedp.SendKeys(`[data-field=title] input`, "Write the report"), chromedp.SetValue(`[data-field=priority] select`, `"high"`),
		chromedp.Click(`#describe form.tryit button[type=submit]`))
	poll(t, tab, `document.querySelector('#describe .result').textContent.includes('succeeded') && document.querySelector('#describe .result pre')?.textContent.includes('Write the report')`)
	eval[bool](t, tab, `(document.getElementById('query').value = '', document.getElementById('query').dispatchEvent(new Event('input')), true)`)
	poll(t, tab, `document.getElementById('catalog-count').textContent.includes('live in open tabs')`)
	consoleShot(t, tab, "catalog")

	// Agent tokens: create one in the console; it is listed; its secret works.
	do(t, tab, chromedp.Navigate(e.srv.URL+"/#tokens"), chromedp.WaitVisible("#t-agent"),
		chromedp.SendKeys("#t-agent", "bot"), chromedp.SendKeys("#t-allow", "tasks.*"), chromedp.Click("#token-form button"))
	poll(t, tab, `!!document.getElementById('new-token') && [...document.querySelectorAll('#token-list tr')].some(r => r.cells[0].textContent === 'bot')`)
	tok := text(t, tab, "#new-token")
	if !strings.HasPrefix(tok, "sbt_") {
		t.Fatalf("token secret %q", tok)
	}
	consoleShot(t, tab, "tokens")

	// Approvals: cards arrive live; each decision shows its outcome.
	do(t, tab, chromedp.Navigate(e.srv.URL+"/#approvals"))
	poll(t, tab, `document.getElementById('approvals-live').textContent === 'live'`)
	inv1 := agentCall(t, e, tok, "Pay the invoice")
	poll(t, tab, `document.querySelectorAll('#approval-list article').length === 1 && document.getElementById('approval-count').textContent === '1'`)
	agentCall(t, e, tok, "Drop the table")
	poll(t, tab, `document.querySelectorAll('#approval-list article').length === 2`)
	consoleShot(t, tab, "approvals")
	// Clicked in the page, in one step: the list re-renders as approvals
	// stream in, and a node looked up first may be gone by the click.
	eval[bool](t, tab, `(b => (b.click(), true))(document.querySelector('#approval-list article:first-child button.primary'))`)
	const approved = `[...document.querySelectorAll('#approval-list article')].find(a => a.querySelector('.result').textContent.includes('approved'))`
	poll(t, tab, approved+`?.querySelector('.result').textContent.includes('succeeded')`)
	if s := eval[string](t, tab, approved+`.querySelector('.result pre').textContent`); !strings.Contains(s, "Pay the invoice") {
		t.Errorf("approved card shows result %q", s)
	}
	eval[bool](t, tab, `(b => (b.click(), true))(document.querySelector('#approval-list article:has(button.danger) button.danger'))`)
	poll(t, tab, `[...document.querySelectorAll('#approval-list article .result')].some(r => r.textContent.includes('denied'))`)
	consoleShot(t, tab, "approvals-decided")
	if inv, err := e.admin.GetInvocation(context.Background(), inv1); err != nil || inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("the approved call: %+v %v", inv, err)
	}

	// Activity: outcome, full date, details, filters, reverse and verify.
	do(t, tab, chromedp.Navigate(e.srv.URL+"/#activity"))
	poll(t, tab, `document.querySelectorAll('#entries tr').length > 3`)
	poll(t, tab, `[...document.querySelectorAll('#entries tr')].some(r => r.cells[3].textContent === 'tool.call' && r.cells[5].textContent.includes('succeeded'))`)
	if y := eval[bool](t, tab, `/\d{4}/.test(document.querySelector('#entries tr time').textContent)`); !y {
		t.Errorf("dates lack the year: %q", text(t, tab, "#entries tr time"))
	}
	do(t, tab, chromedp.SendKeys("#f-verb", "tool.call"), chromedp.SendKeys("#f-target", "tasks.create"), chromedp.Click("#activity-filter button[type=submit]"))
	poll(t, tab, `document.getElementById('activity-count').textContent.includes('filtered') && [...document.querySelectorAll('#entries tr')].every(r => r.cells[4].textContent === 'tasks.create')`)
	do(t, tab, chromedp.Click(`#entries tr details summary`))
	poll(t, tab, `document.querySelector('#entries tr details[open] pre').textContent.includes('invocationId')`)
	do(t, tab, chromedp.Click(`#entries tr button[aria-label^=Reverse]`))
	poll(t, tab, `[...document.querySelectorAll('#entries tr .result')].some(r => /succeeded|failed|denied|cancelled|[A-Z_]{6,}:/.test(r.textContent))`)
	if got := eval[string](t, tab, `[...document.querySelectorAll('#entries tr .result')].map(r => r.textContent).join('|')`); !strings.Contains(got, "succeeded") {
		t.Fatalf("reverse shows %q", got)
	}
	do(t, tab, chromedp.Click("#verify"))
	poll(t, tab, `document.getElementById('verify-result').textContent.includes('chain intact')`)
	// Durations read as a person says them, and at 1440 px the table,
	// Reverse column included, fits without scrolling sideways.
	if got := eval[string](t, tab, `[...document.querySelectorAll('#entries td')].map(td => td.textContent).filter(s => /\d\.\d ms/.test(s)).join('|')`); got != "" {
		t.Errorf("durations in raw milliseconds: %q", got)
	}
	do(t, tab, chromedp.EmulateViewport(1440, 900))
	if over := eval[bool](t, tab, `(s => s.scrollWidth > s.clientWidth)(document.querySelector('#activity .scroll'))`); over {
		t.Errorf("the activity table is wider than its box at 1440 px: the Reverse column is clipped")
	}
	consoleShot(t, tab, "activity")
	do(t, tab, chromedp.EmulateViewport(1280, 900))

	// Agents (the bot's external session can be interrupted) and open tabs.
	do(t, tab, chromedp.Navigate(e.srv.URL+"/#agents"))
	poll(t, tab, `[...document.querySelectorAll('#agent-list tr')].some(r => r.textContent.includes('bot'))`)
	const bot = `[...document.querySelectorAll('#agent-list tr')].find(r => r.textContent.includes('bot') && r.querySelector('button'))`
	eval[bool](t, tab, `(`+bot+`.querySelector('button').click(), true)`)
	poll(t, tab, `[...document.querySelectorAll('#agent-list tr .result')].some(r => r.textContent.includes('cancelled'))`)
	do(t, tab, chromedp.Navigate(e.srv.URL+"/#tabs"))
	poll(t, tab, `document.getElementById('tab-list').textContent.includes('`+sid+`') || document.getElementById('tab-list').textContent.includes('not available')`)

	// Revoke the bot's token (a second press confirms): its next call is refused.
	do(t, tab, chromedp.Navigate(e.srv.URL+"/#tokens"), chromedp.WaitVisible(`#token-list button.danger`),
		chromedp.Click(`#token-list button.danger`))
	poll(t, tab, `document.querySelector('#token-list button.danger')?.textContent === 'Revoke: sure?'`)
	do(t, tab, chromedp.Click(`#token-list button.danger`))
	poll(t, tab, `document.querySelector('#token-list tr').textContent.includes('revoked')`)
	if _, err := client.New(e.srv.URL, tok, nil).ListTools(context.Background(), client.ListOptions{}); switchboard.CodeOf(err) != switchboard.CodeUnauthorized {
		t.Errorf("a revoked token still works: %v", err)
	}

	// Keyboard: the views are links in tab order; Enter on one switches.
	eval[bool](t, tab, `(document.activeElement.blur(), true)`)
	do(t, tab, chromedp.Focus(`#nav a[data-view=approvals]`), chromedp.KeyEvent("\r"))
	poll(t, tab, `location.hash === '#approvals' && !document.getElementById('approvals').hidden`)
	if n := eval[int](t, tab, `[...document.querySelectorAll('#main button, #nav a')].filter(b => b.tabIndex < 0).length`); n != 0 {
		t.Errorf("%d controls are out of the tab order", n)
	}

	// Favicon served by the daemon under the same policy.
	resp, err := http.Get(e.srv.URL + "/favicon.svg")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("favicon: %v %v", resp, err)
	}
	resp.Body.Close()

	// 360 px: nothing wider than the screen; the wide tables scroll in their box.
	do(t, tab, chromedp.EmulateViewport(360, 780), chromedp.Navigate(e.srv.URL+"/#catalog"), chromedp.WaitVisible("#tools tr"))
	if w := eval[int](t, tab, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("the catalog is %d px wide at 360 px", w)
	}
	consoleShot(t, tab, "narrow-catalog")
	do(t, tab, chromedp.Navigate(e.srv.URL+"/#activity"), chromedp.WaitVisible("#entries tr"))
	if w := eval[int](t, tab, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("the activity view is %d px wide at 360 px", w)
	}
	consoleShot(t, tab, "narrow-activity")

	// Sign out forgets the token.
	do(t, tab, chromedp.Click("#signout"), chromedp.WaitVisible("#signin-token"))
	if kept := eval[bool](t, tab, `sessionStorage.getItem('switchboard.console.token') !== null`); kept {
		t.Error("sign-out kept the token")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.console {
		if strings.Contains(m, "Content Security Policy") {
			t.Errorf("the CSP refused something: %s", m)
		}
	}
}
