package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestConsoleTasksInChromium: the Tasks view hands the assistant a task
// from its form, lists every user's tasks for the operator (whom each is
// for, its status), and resumes one that failed — here because no model
// is configured, which its details say.
func TestConsoleTasksInChromium(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	e := &env{t: t, d: d}
	e.srv = httptestServer(t, d)
	e.admin = client.New(e.srv.URL, adminToken, nil)
	e.browser = startChromium(t, e)

	// alice's agent hands over a task too: the operator sees it, for alice.
	tok, err := e.admin.CreateToken(ctx, client.TokenRequest{Agent: "planner", User: "user:alice"})
	if err != nil {
		t.Fatal(err)
	}
	var created map[string]any
	if err := client.New(e.srv.URL, tok.Token, nil).Do(ctx, "POST", "/api/v1/tasks", map[string]any{"goal": "Draft alice's weekly summary."}, &created); err != nil {
		t.Fatal(err)
	}

	tab, cancel := e.tab(t, e.srv.URL+"/#tasks")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1440, 900))
	signIn(t, tab)
	poll(t, tab, `!!document.querySelector('#task-list tr')`)
	do(t, tab, chromedp.SendKeys("#task-goal", "Prepare the board pack."), chromedp.Click(`#task-form button[type=submit]`))
	poll(t, tab, `document.querySelectorAll('#task-list tr').length === 2`)
	rows := eval[[][]string](t, tab, `[...document.querySelectorAll('#task-list tr')].map(r => [...r.cells].slice(0, 2).map(c => c.firstChild.textContent))`)
	if rows[0][0] != "Prepare the board pack." || rows[0][1] != "user:admin" || rows[1][0] != "Draft alice's weekly summary." || rows[1][1] != "user:alice" {
		t.Fatalf("task rows read %q", rows)
	}
	// No model: the run fails; the row offers Resume, and resuming runs
	// the task again (its run count goes up).
	id := eval[string](t, tab, `document.querySelector('#task-list tr').dataset.task`)
	// The view reads its open tasks again until they end: the failure
	// shows without a reload.
	poll(t, tab, `!!document.querySelector('#task-list tr[data-task="`+id+`"] button[aria-label^="Resume"]')`)
	if got := eval[string](t, tab, `document.querySelector('#task-list tr[data-task="`+id+`"] details').textContent`); !strings.Contains(got, "MODEL_ERROR") {
		t.Fatalf("the failed task's details: %q", got)
	}
	click(t, tab, `#task-list tr[data-task="`+id+`"] button[aria-label^="Resume"]`)
	var task map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := e.admin.Do(ctx, "GET", "/api/v1/tasks/"+id, nil, &task); err != nil {
			t.Fatal(err)
		}
		if runs, _ := task["runs"].([]any); len(runs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed task never ran again: %v", task)
		}
	}
	consoleShot(t, tab, "tasks")
	narrowFits(t, tab, "the tasks table")
}
