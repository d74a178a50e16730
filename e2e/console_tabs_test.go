package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleTabsInChromium: the Tabs view lists a real demo tab as
// connected with its live browser tools and the contexts it reports
// (label, kind, attention, panels by title), follows a change in the tab
// without a reload, and End (a second press confirms) closes the session:
// the card goes and the daemon no longer lists it as connected.
func TestConsoleTabsInChromium(t *testing.T) {
	e := newEnv(t)
	demo, cancelDemo := e.tab(t, e.srv.URL+"/demo/projects")
	defer cancelDemo()
	sid := e.connected(t, demo, demoTools...)
	waitDaemon(t, "the projects page context", func() bool {
		c, err := e.d.Workspace.Context(context.Background(), "route:/demo/projects", sid)
		return err == nil && c.Label == "Projects · Acme Studio"
	})

	tab, cancel := e.tab(t, e.srv.URL+"/#tabs")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1280, 900), chromedp.WaitVisible("html[data-console=ready] #signin-token"),
		chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"))
	card := `document.querySelector('#tab-list article[data-session="` + sid + `"]')`
	poll(t, tab, card+`?.dataset.state === 'connected' && `+card+`.querySelector('h3 .badge.good')?.textContent === 'connected'`)
	// Its live tools by name under their surface, and its pending calls.
	poll(t, tab, `[...`+card+`.querySelectorAll('.tab-tools code')].map(c => c.textContent).join(',') === 'nav.goto,page.describe,ui.focus,ui.scroll_to,ui.select'`)
	if got := text(t, tab, `#tab-list article[data-session="`+sid+`"] .tab-tools .tag`); got != "browser" {
		t.Errorf("tools surface shows %q, want browser", got)
	}
	if got := text(t, tab, `#tab-list article[data-session="`+sid+`"] > p.muted`); !strings.Contains(got, "0 pending calls") || !strings.Contains(got, "last seen") {
		t.Errorf("tab meta reads %q", got)
	}
	// Its contexts in words: the page, by label, kind and attention.
	page := card + `.querySelector('li[data-context="route:/demo/projects"]')`
	poll(t, tab, page+`?.querySelector('.ctx-label')?.textContent === 'Projects · Acme Studio' && `+page+`.querySelector('.tag').textContent === 'page' && ['focused','visible','background'].includes(`+page+`.querySelector('.badge').textContent)`)
	poll(t, tab, `!!`+card+`.querySelector('li[data-context="project:apollo"]')`)

	// The view refreshes on its own: a panel the page opens shows by title.
	click(t, demo, `[data-open-settings="apollo"]`)
	poll(t, demo, `!!document.querySelector('[data-sb-panel="project.settings"] input')`)
	poll(t, tab, `!!`+page+`?.querySelector('.panel-title[title="project.settings"]')?.textContent`)
	consoleShot(t, tab, "tabs")
	// 360 px: the card wraps (the session id, the tool names, the routes).
	do(t, tab, chromedp.EmulateViewport(360, 780))
	if w := eval[int](t, tab, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("the tabs view is %d px wide at 360 px", w)
	}
	do(t, tab, chromedp.EmulateViewport(1280, 900))

	// End, confirmed by a second press: the card goes, the daemon agrees.
	end := `#tab-list article[data-session="` + sid + `"] button.danger`
	do(t, tab, chromedp.Click(end))
	poll(t, tab, card+`.querySelector('button.danger').textContent === 'End: sure?'`)
	do(t, tab, chromedp.Click(end))
	poll(t, tab, `!`+card+` && document.getElementById('tab-result').textContent.includes('`+sid+`')`)
	items, err := e.admin.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range items {
		if s.ID == sid && s.Connected {
			t.Fatalf("GET /sessions still lists the ended tab as connected: %+v", s)
		}
	}
	if s, err := e.admin.Session(context.Background(), sid); err != nil || s.State != "closed" {
		t.Errorf("the ended tab reads %q (%v), want closed", s.State, err)
	}
}

// TestConsoleTabsNoneOpenInChromium: with no tab open the view says so
// once (the count line), not a second time in the empty list under it.
func TestConsoleTabsNoneOpenInChromium(t *testing.T) {
	e := newEnv(t)
	tab, cancel := e.tab(t, e.srv.URL+"/#tabs")
	defer cancel()
	do(t, tab, chromedp.WaitVisible("html[data-console=ready] #signin-token"),
		chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"))
	poll(t, tab, `document.getElementById('tab-count').textContent === 'No tabs are open.'`)
	if n := eval[int](t, tab, `document.getElementById('tabs').innerText.split('No tabs are open.').length - 1`); n != 1 {
		t.Errorf("the Tabs view says %d times that no tab is open; want once", n)
	}
}
