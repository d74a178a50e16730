package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// signIn signs in to the console in tab with the admin token.
func signIn(t *testing.T, tab context.Context) {
	t.Helper()
	do(t, tab, chromedp.WaitVisible("html[data-console=ready] #signin-token"),
		chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"))
}

// narrowFits checks the page shows no sideways scroll at 390 px.
func narrowFits(t *testing.T, tab context.Context, what string) {
	t.Helper()
	do(t, tab, chromedp.EmulateViewport(390, 844))
	if w := eval[int](t, tab, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("%s is %d px wide at 390 px", what, w)
	}
}

// TestConsoleModelNotConfiguredInChromium: a daemon without a model says
// so in the console's header on any view, and the Assistant view shows
// the lines to copy (the models: section, the restart with the key, a
// local server), each with its newlines.
func TestConsoleModelNotConfiguredInChromium(t *testing.T) {
	e := newEnv(t)
	tab, cancel := e.tab(t, e.srv.URL+"/#catalog")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1440, 900))
	signIn(t, tab)
	poll(t, tab, `document.getElementById('model-status').textContent === 'no model' && !document.getElementById('model-status').hidden`)

	click(t, tab, `#model-status`)
	poll(t, tab, `!document.getElementById('assistant').hidden && !!document.querySelector('#assistant-body .card.setup pre')`)
	pres := eval[[]string](t, tab, `[...document.querySelectorAll('#assistant-body .card.setup pre')].map(p => p.textContent)`)
	if len(pres) != 3 || !strings.HasPrefix(pres[0], "models:\n  default:\n    provider: openai") ||
		!strings.Contains(pres[0], "\n    apiKeyEnv: OPENAI_API_KEY") ||
		!strings.Contains(pres[1], "export OPENAI_API_KEY=") || !strings.Contains(pres[1], "\nswitchboard serve --config switchboard.yaml") ||
		!strings.Contains(pres[2], "baseURL: http://127.0.0.1:11434/v1") {
		t.Fatalf("the setup card shows %q", pres)
	}
	if h := text(t, tab, `#assistant-body .card.setup h2`); h != "No model is configured" {
		t.Errorf("the card's heading reads %q", h)
	}
	// The lines are shown as lines, not run together.
	if !eval[bool](t, tab, `(() => { const p = document.querySelector('#assistant-body .card.setup pre');
		return p.clientHeight > 5 * parseFloat(getComputedStyle(p).fontSize) })()`) {
		t.Error("the models: section is not shown on its own lines")
	}
	consoleShot(t, tab, "assistant-no-model")
	narrowFits(t, tab, "the no-model card")
	consoleShot(t, tab, "narrow-assistant-no-model")
}

// TestConsoleModelConfiguredInChromium: with a model configured (a scripted
// OpenAI-compatible server on this machine, as a local llama.cpp or Ollama
// would be) the header names it and the Assistant view lists it with its
// endpoint; the key column says no key is sent.
func TestConsoleModelConfiguredInChromium(t *testing.T) {
	d, llm := scriptedDaemon(t, daemon.Options{})
	e := &env{t: t, d: d}
	e.srv = httptestServer(t, d)
	e.admin = client.New(e.srv.URL, adminToken, nil)
	e.browser = startChromium(t, e)

	tab, cancel := e.tab(t, e.srv.URL+"/#catalog")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1440, 900))
	signIn(t, tab)
	poll(t, tab, `document.getElementById('model-status').textContent === 'model: scripted-1'`)
	if title := eval[string](t, tab, `document.getElementById('model-status').title`); !strings.Contains(title, "openai scripted-1 at "+llm.BaseURL()) {
		t.Errorf("the model pill's title reads %q", title)
	}
	click(t, tab, `#nav a[data-view=assistant]`)
	row := `document.querySelector('#model-list tr[data-alias="default"]')`
	poll(t, tab, `!!`+row)
	cells := eval[[]string](t, tab, `[...`+row+`.cells].map(c => c.textContent)`)
	if len(cells) != 6 || cells[0] != "default" || cells[1] != "openai" || cells[2] != "scripted-1" || cells[3] != llm.BaseURL() || cells[4] != "none sent" {
		t.Fatalf("the model row reads %q", cells)
	}
	if got := text(t, tab, `#model-count`); !strings.Contains(got, "1 model is configured") {
		t.Errorf("the view says %q", got)
	}
	if eval[bool](t, tab, `!!document.querySelector('#assistant-body .card.setup')`) {
		t.Error("a configured daemon shows the setup card")
	}
	consoleShot(t, tab, "assistant")
	narrowFits(t, tab, "the models view")
	consoleShot(t, tab, "narrow-assistant")
}
