package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestConsoleCallsInChromium: the Calls view lists invocations, a running
// job with its progress bar (then finished after Refresh), and the
// assistant's run, whose Timeline shows its AG-UI events in order.
func TestConsoleCallsInChromium(t *testing.T) {
	e, llm := newChatEnv(t)
	ctx := context.Background()
	release, reported := make(chan struct{}), make(chan struct{})
	err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "deck.export", Description: "Export a deck as PDF.", Class: switchboard.ClassJob,
		InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ json.RawMessage) (any, error) {
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 3, Total: 5, Message: "slide 3 of 5"})
		close(reported)
		<-release
		return map[string]string{"url": "/decks/1.pdf"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.CallToolWith(ctx, "deck.export", json.RawMessage(`{}`), client.CallOptions{}, client.CallExtra{Async: true}); err != nil {
		t.Fatal(err)
	}
	<-reported

	llm.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_list", Args: `{"projectId":"p1"}`}}},
		modeltest.Turn{Text: "Two tasks are open."})
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/runs", strings.NewReader(`{"threadId":"ops-1","input":"what is open?"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("start a run: %v %v", resp, err)
	}
	var run switchboard.RunInfo
	_ = json.NewDecoder(resp.Body).Decode(&run)
	resp.Body.Close()

	tab, cancel := e.tab(t, e.srv.URL+"/#calls")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1280, 900), chromedp.WaitVisible("html[data-console=ready] #signin-token"),
		chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"))
	poll(t, tab, `[...document.querySelectorAll('#job-list tr')].some(r => r.cells[2].textContent === 'running' && r.querySelector('progress').value === 0.6 && r.textContent.includes('slide 3 of 5'))`)
	poll(t, tab, `[...document.querySelectorAll('#inv-list tr')].some(r => r.cells[1].textContent === 'deck.export') && [...document.querySelectorAll('#inv-list tr')].some(r => r.cells[1].textContent === 'tasks.list' && r.cells[3].textContent.includes('succeeded'))`)
	// The view re-reads while anything runs: the run shows once it is done.
	poll(t, tab, `[...document.querySelectorAll('#run-list tr')].some(r => r.dataset.run === '`+run.RunID+`' && r.cells[2].textContent === 'succeeded')`)
	do(t, tab, chromedp.Click(`#run-list tr[data-run="`+run.RunID+`"] button`))
	poll(t, tab, `[...document.querySelectorAll('#run-timeline li')].some(li => li.textContent.startsWith('RUN_FINISHED'))`)
	types := eval[string](t, tab, `[...document.querySelectorAll('#run-timeline li > .badge')].map(b => b.textContent).join(' ')`)
	for _, want := range []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "RUN_FINISHED"} {
		if !strings.Contains(types, want) {
			t.Errorf("timeline %q lacks %s", types, want)
		}
	}
	if !strings.HasPrefix(types, "RUN_STARTED") {
		t.Errorf("timeline starts %q", types)
	}
	if s := text(t, tab, "#run-timeline"); !strings.Contains(s, "Two tasks are open.") || !strings.Contains(s, `tasks.list {"projectId":"p1"}`) {
		t.Errorf("timeline text %q", s)
	}
	consoleShot(t, tab, "calls")

	close(release)
	poll(t, tab, `[...document.querySelectorAll('#job-list tr')].some(r => r.cells[2].textContent === 'succeeded' && r.querySelector('progress').value === 1)`)
}
