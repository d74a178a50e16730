package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/session"
)

// A tab killed without pagehide (its renderer crashes, so the SDK never
// says goodbye) is not called as if it were live: it stops being offered at
// once, so a call that names no tab goes to the one still open instead of
// being "live in 2 tabs"; a call in flight on it fails with SESSION_GONE
// when the reconnect window (1 s here) passes, long before the keep window
// and the call timeout (30 s each); and the open tabs show it disconnected.
func TestKilledTabIsNotCalledAsIfLive(t *testing.T) {
	const keep = 30 * time.Second // 2 × the default 15 s heartbeat
	e := newEnvWith(t, session.Options{Reconnect: time.Second})
	actx, cancelA := e.tab(t, e.srv.URL+"/demo/")
	defer cancelA()
	a := e.connected(t, actx, demoTools...)
	bctx, cancelB := e.tab(t, e.srv.URL+"/demo/settings")
	defer cancelB()
	b := e.connected(t, bctx, demoTools...)
	if _, err := e.call("nav.goto", "", `{"page":"media"}`); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("two connected tabs and no sessionId: %v; want INVALID_INPUT naming both", err)
	}

	eval[chromedp.Void](t, actx, `window.started = 0; window.switchboard.registerTool({ name: "test.hang", description: "Never answers.", handler: () => { window.started++; return new Promise(() => {}); } })`)
	e.waitTools(t, a, "nav.goto", "page.describe", "test.hang", "ui.focus", "ui.scroll_to", "ui.select")
	hang := make(chan error, 1)
	go func() {
		_, err := e.call("test.hang", a, `{}`)
		hang <- err
	}()
	poll(t, actx, `window.started === 1`)

	start := time.Now()
	go func() { // the renderer dies mid-command: no answer is expected
		cctx, cancel := context.WithTimeout(actx, 5*time.Second)
		defer cancel()
		_ = chromedp.Do(cctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.Crash, cdp.Empty{})
			return err
		}))
	}()
	err := <-hang
	elapsed := time.Since(start)
	if switchboard.CodeOf(err) != switchboard.CodeSessionGone {
		t.Fatalf("the call in flight on the killed tab: %v; want SESSION_GONE", err)
	}
	t.Logf("SESSION_GONE %s after the tab was killed (reconnect window 1s, keep window %s)", elapsed, keep)
	if elapsed >= keep/2 {
		t.Fatalf("SESSION_GONE took %s: the call waited for the keep window, not the reconnect window", elapsed)
	}

	// The killed tab is neither offered nor counted: the call goes to b.
	resp, err := e.call("nav.goto", "", `{"page":"media"}`)
	if err != nil || resp.Status != switchboard.StatusSucceeded {
		t.Fatalf("a call naming no tab with one tab open: %+v %v", resp, err)
	}
	if inv, err := e.admin.GetInvocation(context.Background(), resp.InvocationID); err != nil || inv.SessionID != b {
		t.Fatalf("the call went to %s (%v), want the open tab %s", inv.SessionID, err, b)
	}
	if _, err := e.call("nav.goto", a, `{"page":"media"}`); switchboard.CodeOf(err) != switchboard.CodeSessionGone {
		t.Fatalf("a call naming the killed tab: %v; want SESSION_GONE at once", err)
	}
	items, err := e.admin.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]switchboard.TabState{}
	for _, s := range items {
		states[s.ID] = s.State
	}
	if states[a] != switchboard.TabDisconnected || states[b] != switchboard.TabConnected {
		t.Fatalf("open tabs: %v; want %s disconnected (kept for a reload) and %s connected", states, a, b)
	}
}
