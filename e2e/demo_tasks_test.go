package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestDemoTasksInChromium: the demo's Tasks list shows the tasks of the
// tab's user (not another user's), read with the tab's own session token:
// one handed to another agent waits, then shows done without a reload
// when that agent completes it, and opening it shows its result; Cancel
// stops an open one. The tab cannot create a task (FORBIDDEN). At 390 px
// nothing is wider than the screen.
func TestDemoTasksInChromium(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tab, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	e.connected(t, tab, demoTools...)
	do(t, tab, chromedp.EmulateViewport(1280, 900))
	poll(t, tab, `!document.getElementById("tasks").hidden && !document.getElementById("tasks-empty").hidden`)

	// The demo's tab is opened for user "demo".
	mint := func(agent, user string) *client.Client {
		tok, err := e.admin.CreateToken(ctx, client.TokenRequest{Agent: agent, User: user})
		if err != nil {
			t.Fatal(err)
		}
		return client.New(e.srv.URL, tok.Token, nil)
	}
	planner, keeper, bobs := mint("planner", "user:demo"), mint("bookkeeper", "user:demo"), mint("planner", "user:bob")
	create := func(c *client.Client, goal string) switchboard.Task {
		tk, err := c.CreateTask(ctx, client.TaskRequest{Goal: goal, Assignee: "agent:bookkeeper"})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	if _, err := bobs.CreateTask(ctx, client.TaskRequest{Goal: "Bob's private errand"}); err != nil {
		t.Fatal(err)
	}
	invoices := create(planner, "Reconcile the Q3 invoices against the bank statements for the Apollo and Borealis projects")
	press := create(planner, "Draft the press kit")
	row := func(id string) string { return `#task-list li[data-task="` + id + `"]` }
	poll(t, tab, `document.querySelector('`+row(invoices.ID)+`')?.dataset.status === "submitted" && !!document.querySelector('`+row(press.ID)+`')`)
	if n := eval[int](t, tab, `document.querySelectorAll("#task-list li.task").length`); n != 2 {
		t.Fatalf("the tab lists %d tasks, want its user's two (not bob's)", n)
	}
	if got := text(t, tab, row(invoices.ID)+` .task-meta`); !strings.HasPrefix(got, "bookkeeper · 0 calls") {
		t.Errorf("the task's line reads %q", got)
	}

	// The agent completes it: the tab shows it done, and opening it shows
	// the result.
	if _, err := keeper.CompleteTask(ctx, invoices.ID, "The invoices reconcile; two corrections filed."); err != nil {
		t.Fatal(err)
	}
	poll(t, tab, `document.querySelector('`+row(invoices.ID)+`')?.dataset.status === "completed"`)
	click(t, tab, row(invoices.ID)+` summary`)
	poll(t, tab, `document.querySelector('`+row(invoices.ID)+` .task-result')?.textContent === "The invoices reconcile; two corrections filed."`)
	// Opening it read the task afresh (getTask): its details are that
	// record's, rendered as elements.
	poll(t, tab, `!!document.querySelector('`+row(invoices.ID)+` .task-body[data-read]')`)
	if got := text(t, tab, row(invoices.ID)+` .task-body`); got != "The invoices reconcile; two corrections filed." {
		t.Errorf("the opened task's details read %q", got)
	}

	// Cancel from the tab.
	click(t, tab, row(press.ID)+` button[aria-label^="Cancel"]`)
	poll(t, tab, `document.querySelector('`+row(press.ID)+`')?.dataset.status === "cancelled"`)
	if got, err := planner.Task(ctx, press.ID); err != nil || got.Status != switchboard.TaskCancelled {
		t.Fatalf("after the tab's cancel the task is %+v, %v", got.Status, err)
	}
	// A tab reads and stops its user's work; it does not start any.
	if code := eval[string](t, tab, `window.switchboard.request("/api/v1/tasks", {method: "POST", body: {goal: "x"}}).then(() => "created", (e) => e.code)`); code != "FORBIDDEN" {
		t.Errorf("a tab creating a task: %s, want FORBIDDEN", code)
	}

	do(t, tab, chromedp.EmulateViewport(390, 844))
	poll(t, tab, `innerWidth === 390`)
	if w := eval[float64](t, tab, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("at 390 px the page is %.0f px wide", w)
	}
	// The section's top just under the sticky header, as a person
	// scrolling to it sees it.
	eval[bool](t, tab, `(scrollTo(0, document.getElementById("tasks").getBoundingClientRect().top + scrollY - document.querySelector("header").offsetHeight - 8), true)`)
	if !eval[bool](t, tab, `[...document.querySelectorAll("#tasks, #tasks li, #tasks summary, #tasks .task-result")].every(el => { const b = el.getBoundingClientRect(); return b.left >= 0 && b.right <= innerWidth })`) {
		t.Errorf("the Tasks list is cut off at 390 px: %v", eval[any](t, tab, `document.getElementById("tasks").getBoundingClientRect().toJSON()`))
	}
	tabShot(t, tab, "tab-tasks")
}

// tabShot captures the first screenful; with SWITCHBOARD_CONSOLE_SHOTS set
// it is written to docs/NAME.png, beside the console's.
func tabShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil || len(png) == 0 {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if os.Getenv("SWITCHBOARD_CONSOLE_SHOTS") == "" {
		return
	}
	if err := os.WriteFile(filepath.Join("..", "docs", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
