package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// demoShot captures the first screenful; with SWITCHBOARD_DEMO_SHOTS=DIR it
// is written to DIR/NAME.png for a person to look at.
func demoShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil || len(png) == 0 {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if dir := os.Getenv("SWITCHBOARD_DEMO_SHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDemoLayoutInChromium: the demo loads with nothing in the console
// (it declares its own icon, so no /favicon.ico 404), fits a 390 px phone
// (no sideways scrolling; the assistant and its Send button on screen when
// scrolled to) as well as a 1440 px laptop, and a tab without a session
// says so without the "attached as session …" box.
func TestDemoLayoutInChromium(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	e.connected(t, ctx, demoTools...)
	// The browser asks for /favicon.ico (not served: a 404 in the console)
	// when the page declares no icon of its own.
	if !eval[bool](t, ctx, `(l => !!l && new Promise(ok => { const i = new Image(); i.onload = () => ok(i.naturalWidth > 0);
		i.onerror = () => ok(false); i.src = l.href; }))(document.querySelector('link[rel~="icon"]'))`) {
		t.Error("the demo declares no icon that loads")
	}
	if errs := e.consoleErrors(); len(errs) > 0 {
		t.Errorf("the demo's first load logged errors:\n%s", strings.Join(errs, "\n"))
	}

	do(t, ctx, chromedp.EmulateViewport(1440, 900))
	poll(t, ctx, `document.documentElement.scrollWidth <= innerWidth`)
	demoShot(t, ctx, "demo-1440")

	do(t, ctx, chromedp.EmulateViewport(390, 844))
	poll(t, ctx, `innerWidth === 390`)
	if w := eval[float64](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("at 390 px the page is %.0f px wide", w)
	}
	demoShot(t, ctx, "demo-390")
	// Scrolled into view, the chat and its Send button lie within the screen.
	const inside = `(b => b.width > 0 && b.left >= 0 && b.right <= innerWidth)`
	eval[bool](t, ctx, `(document.querySelector("switchboard-chat").scrollIntoView(), true)`)
	for _, sel := range []string{"switchboard-chat", "switchboard-chat .sbc-send", "switchboard-chat textarea"} {
		if !eval[bool](t, ctx, inside+`(document.querySelector("`+sel+`").getBoundingClientRect())`) {
			t.Errorf("%s is cut off at 390 px: %v", sel, eval[any](t, ctx, `document.querySelector("`+sel+`").getBoundingClientRect().toJSON()`))
		}
	}
	demoShot(t, ctx, "demo-390-chat")

	// A new tab on Projects is not told the first tab's page (Media) as
	// what it has open.
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Click(`header a[href="/demo/media"]`))
	poll(t, ctx, `document.body.dataset.page === "media"`)
	second, cancelSecond := e.tab(t, e.srv.URL+"/demo/projects")
	defer cancelSecond()
	e.connected(t, second, demoTools...)
	poll(t, second, `!!document.querySelector("switchboard-chat .sbc-empty-title")`)
	if where := eval[string](t, second, `[...document.querySelectorAll("switchboard-chat .sbc-empty-where")].map(p => p.textContent).filter(s => s.startsWith("I can see")).join("|")`); where != "" && where != "I can see what you have open: Projects." {
		t.Errorf("the new tab is told %q", where)
	}

	// A tab with a wrong key has no session: no "attached as session" box.
	nk, cancelNK := e.tab(t, e.srv.URL+"/demo/?key=wrong")
	defer cancelNK()
	poll(t, nk, `document.body.dataset.status === "closed" && !!document.querySelector("#page h1")`)
	if shown := eval[bool](t, nk, `!document.getElementById("drive").hidden`); shown {
		t.Error(`a tab without a session still shows "attached as session …"`)
	}
	// Its commands name this daemon, not the default port's.
	if cmd := eval[string](t, nk, `document.querySelector("#page pre").textContent`); !strings.Contains(cmd, e.srv.URL+"/api/v1/sessions") || strings.Contains(cmd, ":7766") {
		t.Errorf("the no-session commands name another daemon: %q", cmd)
	}
}

// TestDemoActionsHintInChromium: the demo's Actions box is not an empty
// card before the first call: it says what will show there, and the hint
// goes once a call has run in the tab.
func TestDemoActionsHintInChromium(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	id := e.connected(t, ctx, demoTools...)
	const hint = `document.getElementById("activity-empty")`
	if !eval[bool](t, ctx, hint+`?.checkVisibility() === true && `+hint+`.textContent.includes("listed here")`) {
		t.Fatal("the empty Actions box shows no hint")
	}
	if res, err := e.call("nav.goto", id, `{"page":"media"}`); err != nil || res.Status != "succeeded" {
		t.Fatalf("nav.goto: %+v %v", res, err)
	}
	poll(t, ctx, `document.querySelectorAll("#activity li").length === 1 && !`+hint+`.checkVisibility()`)
}
