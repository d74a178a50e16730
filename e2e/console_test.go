package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestConsoleInChromium signs in to the operator console with the admin
// token, searches the catalog and describes the best hit; a wrong token is
// refused and lands back on the sign-in form. Tool descriptions carrying
// markup must appear as text, never as elements. A daemon without its own
// authorization server offers no user sign-in and says why.
func TestConsoleInChromium(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.admin.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{
		{Name: "billing.invoice.send", Description: "Email an invoice to the customer it belongs to.", Class: switchboard.ClassMutate,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"invoiceId":{"type":"string"}}}`)},
		{Name: "media.upload_image", Description: `Upload an image <img src=x onerror="window.pwned=1"> to the library.`, Class: switchboard.ClassMutate},
		{Name: "projects.settings.patch", Description: `Change settings with a JSON Patch such as [{"op":"replace","path":"/notifications/email/digest","value":"weekly"}].`, Class: switchboard.ClassMutate},
	})
	if err != nil {
		t.Fatal(err)
	}
	tab, cancel := e.tab(t, e.srv.URL+"/")
	defer cancel()

	do(t, tab, chromedp.WaitVisible("html[data-console=ready] #signin-token"))
	// This daemon runs no authorization server: no user sign-in, and why.
	poll(t, tab, `document.getElementById('user-signin-note').textContent.includes('no authorization server') && document.getElementById('signin-user').hidden`)
	do(t, tab, chromedp.SendKeys("#signin-token", "wrong"), chromedp.Click("#login-form button"))
	poll(t, tab, `document.getElementById('login-error').textContent.includes('UNAUTHORIZED')`)

	do(t, tab, chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"), chromedp.WaitVisible("#tools tr"))
	if names := eval[string](t, tab, `[...document.querySelectorAll('#tools tr td:first-child')].map(td => td.textContent).join(' ')`); !strings.Contains(names, "billing.invoice.send") || !strings.Contains(names, "media.upload_image") {
		t.Fatalf("catalog lists %q", names)
	}
	// At every width each name keeps to one line: the long summaries wrap
	// (one with a long JSON token too), not billing.invoice.send in the
	// middle of a word, and the table fits its box without scrolling
	// sideways: a phone, a tablet upright and on its side, a laptop.
	for _, w := range []int64{390, 768, 1024, 1280} {
		do(t, tab, chromedp.EmulateViewport(w, 900))
		poll(t, tab, fmt.Sprintf(`innerWidth === %d`, w))
		if broken := eval[string](t, tab, `[...document.querySelectorAll('#tools button.link')].filter(b => {
			const r = document.createRange(); r.selectNodeContents(b); return r.getClientRects().length > 1;
		}).map(b => b.textContent).join(' ')`); broken != "" {
			t.Errorf("tool names wrap over lines at %d px: %s", w, broken)
		}
		if over := eval[string](t, tab, `(s => s.scrollWidth > s.clientWidth ? s.scrollWidth + " px in a box of " + s.clientWidth : "")(document.querySelector("#catalog .scroll"))`); over != "" {
			t.Errorf("at %d px the catalog table is wider than its box: %s", w, over)
		}
	}
	// Where the tool pane is under the table, picking the last tool
	// brings the pane into view.
	do(t, tab, chromedp.EmulateViewport(1024, 900))
	poll(t, tab, `innerWidth === 1024`)
	eval[bool](t, tab, `([...document.querySelectorAll('#tools button.link')].pop().click(), true)`)
	poll(t, tab, `(h => !!h && h.getBoundingClientRect().top >= 0 && h.getBoundingClientRect().bottom <= innerHeight)(document.querySelector('#describe h2'))`)
	do(t, tab, chromedp.EmulateViewport(1280, 900))
	do(t, tab, chromedp.SendKeys("#query", "bill the customer"))
	poll(t, tab, `document.getElementById('catalog-count').textContent.includes('bill the customer')`)
	if first := eval[string](t, tab, `document.querySelector('#tools tr td').textContent`); first != "billing.invoice.send" {
		t.Fatalf("best hit %q", first)
	}
	do(t, tab, chromedp.Click("#tools tr button.link"))
	// The pane shows another tool until this one's descriptor has come.
	poll(t, tab, `document.querySelector('#describe h2')?.textContent === 'billing.invoice.send' && !!document.querySelector('#describe form.tryit')`)
	if s := eval[string](t, tab, `document.querySelector('#describe pre').textContent`); !strings.Contains(s, "invoiceId") {
		t.Errorf("describe shows %q", s)
	}

	// Markup in a description is text.
	eval[bool](t, tab, `(document.getElementById('query').value = '', true)`)
	do(t, tab, chromedp.SendKeys("#query", "upload image"))
	poll(t, tab, `document.getElementById('catalog-count').textContent.includes('upload image')`)
	if pwned := eval[bool](t, tab, `!!window.pwned || !!document.querySelector('#tools img')`); pwned {
		t.Error("a tool description was rendered as markup")
	}
}

// TestConsoleApprovalsAfterWrongToken signs in with a wrong token, then the
// right one: the approvals stream must start again, so an approval asked
// for after that sign-in appears without a reload.
func TestConsoleApprovalsAfterWrongToken(t *testing.T) {
	e := newEnv(t)
	opsTools(t, e)
	tok, err := e.admin.CreateToken(context.Background(), client.TokenRequest{Agent: "bot", Allow: []string{"tasks.*"}})
	if err != nil {
		t.Fatal(err)
	}
	tab, cancel := e.tab(t, e.srv.URL+"/#approvals")
	defer cancel()

	do(t, tab, chromedp.WaitVisible("html[data-console=ready] #signin-token"), chromedp.SendKeys("#signin-token", "wrong"), chromedp.Click("#login-form button"))
	poll(t, tab, `document.getElementById('login-error').textContent.includes('UNAUTHORIZED')`)
	do(t, tab, chromedp.SendKeys("#signin-token", adminToken), chromedp.Click("#login-form button"))
	poll(t, tab, `document.getElementById('approvals-live').textContent === 'live'`)
	agentCall(t, e, tok.Token, "Asked after the right token")
	poll(t, tab, `[...document.querySelectorAll('#approval-list article')].some(a => a.textContent.includes('Asked after the right token'))`)
}
