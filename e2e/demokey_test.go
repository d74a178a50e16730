package e2e

import (
	"strings"
	"testing"
)

// The demo page takes its key from the URL serve printed, keeps it in the
// tab's sessionStorage and drops it from the address bar (issue 14 item 6);
// opened without it, it opens no session and says why.
func TestDemoKeyInChromium(t *testing.T) {
	e := newEnv(t)

	ctx, cancel := e.tab(t, e.srv.URL+"/demo/projects")
	defer cancel()
	e.connected(t, ctx, demoTools...)
	if got := eval[string](t, ctx, `location.pathname + location.search`); got != "/demo/projects" {
		t.Fatalf("the address bar still shows %q after the page took its key", got)
	}
	if got := eval[string](t, ctx, `sessionStorage.getItem("switchboard.demoKey")`); got != demoKey {
		t.Fatalf("sessionStorage holds %q, want the demo key", got)
	}

	// "key=" in the URL keeps tab from adding the right one.
	for _, url := range []string{e.srv.URL + "/demo/?key=wrong", e.srv.URL + "/demo/?nokey=key="} {
		bad, closeBad := e.tab(t, url)
		poll(t, bad, `document.body.dataset.status === "closed"`)
		why := eval[string](t, bad, `document.querySelector("[data-why]")?.textContent ?? ""`)
		if !strings.Contains(why, "UNAUTHORIZED") || !strings.Contains(why, "demo key") {
			t.Errorf("%s: the page says %q, want the UNAUTHORIZED demo-key message", url, why)
		}
		closeBad()
	}
}
