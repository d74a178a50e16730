package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
)

// The demo reports its contexts through the SDK (internal/web/sdk/context.js): the
// page, the project cards in and out of the viewport, the panels it shows
// and where the user's focus is; the digest shows them, with site-html
// provenance.
func TestSDKReportsContextsInChromium(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/projects")
	defer cancel()
	id := e.connected(t, ctx, demoTools...)
	find := func(ctxID string) (switchboard.WorkspaceContext, bool) {
		c, err := e.d.Workspace.Context(context.Background(), ctxID, id)
		return c, err == nil
	}

	t.Run("the page and its cards, by viewport", func(t *testing.T) {
		waitDaemon(t, "the projects page context", func() bool {
			c, ok := find("route:/demo/projects")
			return ok && c.Kind == "page" && c.Route == "/demo/projects" && c.Label == "Projects · Acme Studio"
		})
		// The first card is on screen; the last one, below the fold, is not.
		eval[bool](t, ctx, `(() => { scrollTo(0, 0); return true })()`)
		waitDaemon(t, "apollo visible and fjord in the background", func() bool {
			a, ok1 := find("project:apollo")
			f, ok2 := find("project:fjord")
			return ok1 && ok2 && a.Attention == switchboard.AttentionVisible && f.Attention == switchboard.AttentionBackground && a.Label == "Apollo launch site"
		})
		c, _ := find("project:apollo")
		if c.Provenance == nil || c.Provenance.DerivedFrom != "site-html" || c.SessionID != id {
			t.Fatalf("reported context lacks provenance or tab: %+v", c)
		}
	})

	t.Run("a panel the page opens, and the user's edit in it", func(t *testing.T) {
		click(t, ctx, `[data-open-settings="apollo"]`)
		poll(t, ctx, `!!document.querySelector('[data-sb-panel="project.settings"] input')`)
		var instance string
		waitDaemon(t, "the settings panel in the page context", func() bool {
			c, ok := find("route:/demo/projects")
			for _, p := range c.Panels {
				if ok && p.Type == "project.settings" && p.Title != "" && p.Origin == "host" {
					instance = p.ID
					return true
				}
			}
			return false
		})
		do(t, ctx, chromedp.SendKeys(chromedp.CSS(`[data-sb-panel="project.settings"] input[data-sb-path="name"]`), " (v2)"))
		waitDaemon(t, "the edited panel dirty and its context focused", func() bool {
			c, ok := find("route:/demo/projects")
			if !ok || c.Attention != switchboard.AttentionFocused || c.Selection == nil || c.Selection.PanelID != instance {
				return false
			}
			for _, p := range c.Panels {
				if p.ID == instance {
					return p.Dirty
				}
			}
			return false
		})
	})

	t.Run("navigation and focus move the contexts", func(t *testing.T) {
		if _, err := e.call("nav.goto", id, `{"page":"media"}`); err != nil {
			t.Fatal(err)
		}
		if _, err := e.call("ui.focus", id, `{"target":"media-3"}`); err != nil {
			t.Fatal(err)
		}
		waitDaemon(t, "the media grid focused", func() bool {
			c, ok := find("media-grid")
			_, old := find("project:apollo")
			return ok && c.Attention == switchboard.AttentionFocused && c.Label == "Media library grid" && !old
		})
		d, err := e.d.Workspace.Digest(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Contexts) == 0 || d.Contexts[0].Attention != switchboard.AttentionFocused || d.Tokens == 0 {
			t.Fatalf("digest: %+v", d)
		}
	})
}
