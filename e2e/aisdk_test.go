package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// aisdkDist is where examples/aisdk-usechat/build.sh puts the stock AI SDK
// page (useChat from @ai-sdk/react, bundled with esbuild): the example a
// newcomer runs is the page this test drives.
var aisdkDist = filepath.Join("..", "examples", "aisdk-usechat", "dist")

// aisdkApp is a stock AI SDK page served the way a team serves its own
// app: from its own origin, by a backend that opens the tab's switchboard
// session with the admin token and hands the page only the session token.
// The daemon allows that origin (--allow-origin), so the page reaches
// /api/v1/agent/chat cross-origin with CORS, as a real app would.
type aisdkApp struct {
	*env
	app   *httptest.Server
	llm   *modeltest.OpenAI
	voids atomic.Int32 // calls of invoices.void that reached the backend
}

func newAISDKApp(t *testing.T) *aisdkApp {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser end-to-end tests: %s not found", chromium)
	}
	if _, err := os.Stat(filepath.Join(aisdkDist, "app.js")); err != nil {
		t.Skipf("skipping the stock AI SDK page test: the page is not built (%v); build it with examples/aisdk-usechat/build.sh (needs node and npm)", err)
	}
	a := &aisdkApp{}
	// The app's origin exists before the daemon so the daemon can allow it.
	mux := http.NewServeMux()
	a.app = httptest.NewServer(mux)
	t.Cleanup(a.app.Close)

	ctx := context.Background()
	d, llm := scriptedDaemon(t, daemon.Options{AllowOrigins: []string{a.app.URL}})
	a.llm = llm
	// A mutation: the assistant may call it only after the user approves.
	if err := d.RegisterFunc(ctx, switchboard.Tool{
		Name: "invoices.void", Description: "Void an unpaid invoice.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"invoice":{"type":"string"}},"required":["invoice"]}`),
	}, func(_ context.Context, in json.RawMessage) (any, error) {
		a.voids.Add(1)
		var args struct{ Invoice string }
		_ = json.Unmarshal(in, &args)
		return map[string]any{"invoice": args.Invoice, "status": "void"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	a.env = &env{t: t, d: d}
	a.srv = httptestServer(t, d)
	a.admin = client.New(a.srv.URL, adminToken, nil)

	// The app's backend: its page, and the session it opens for the tab.
	mux.Handle("GET /", http.FileServer(http.Dir(aisdkDist)))
	mux.HandleFunc("POST /app/switchboard-session", func(w http.ResponseWriter, r *http.Request) {
		cred, err := a.admin.OpenSession(r.Context(), client.SessionRequest{Principal: "user:dana"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"api": a.srv.URL, "sessionToken": cred.SessionToken})
	})

	a.browser = startChromium(t, a.env)
	return a
}

// useChatPage is the stock page's root; its data-status is useChat's status.
const useChatPage = `document.querySelector("main.chat")`

// send types text into the page's input and submits it.
func send(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`form input`), text), chromedp.Click(chromedp.CSS(`form button[type=submit]`)))
}

// waitPage polls js in the stock page and fails at once, with useChat's
// own error text, when the page shows an error instead.
func waitPage(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	poll(t, ctx, `(`+js+`) || !!document.querySelector("p.error")`)
	if msg := eval[string](t, ctx, `document.querySelector("p.error")?.textContent ?? ""`); msg != "" {
		t.Fatalf("useChat reports an error: %s", msg)
	}
}

// lastAssistant is the text of the page's last assistant message.
const lastAssistant = `[...document.querySelectorAll("li.message.assistant")].pop()?.querySelectorAll("p.text")`

// shot saves the page as docs/chat/NAME.png when SWITCHBOARD_CHAT_SHOTS
// names a directory (see chatShot).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_CHAT_SHOTS")
	if dir == "" {
		return
	}
	eval[bool](t, ctx, `document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => r(true))))`)
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.Screenshot(chromedp.CSS("main.chat")))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAISDKUseChatInChromium(t *testing.T) {
	a := newAISDKApp(t)
	ctx, cancel := a.tab(t, a.app.URL+"/?chat=chat_invoices")
	defer cancel()
	do(t, ctx, chromedp.EmulateViewport(900, 900))
	waitPage(t, ctx, useChatPage+`?.dataset.status === "ready"`)
	const texts = `[...(` + lastAssistant + ` ?? [])].map(p => p.textContent).join(" ")`

	t.Run("useChat shows the stock approval, and an approved call runs once", func(t *testing.T) {
		a.llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "v1", Name: "invoices_void", Args: `{"invoice":"INV-1042"}`}}},
			modeltest.Turn{Text: "Invoice INV-1042 is void."},
		)
		send(t, ctx, "Void invoice INV-1042")
		const part = `section.tool[data-tool="invoices.void"]`
		waitPage(t, ctx, `!!document.querySelector('`+part+`[data-state="approval-requested"] button.approve') && `+useChatPage+`.dataset.status === "ready"`)
		if n := a.voids.Load(); n != 0 {
			t.Fatalf("the tool ran %d times before the approval", n)
		}
		if got := eval[string](t, ctx, `document.querySelector('`+part+` pre.tool-input').textContent`); !strings.Contains(got, `"invoice": "INV-1042"`) {
			t.Fatalf("the part's input shows %q", got)
		}
		shot(t, ctx, "aisdk-approval")
		click(t, ctx, part+` button.approve`)
		waitPage(t, ctx, `document.querySelector('`+part+`').dataset.state === "output-available" && `+useChatPage+`.dataset.status === "ready"`)
		if got := eval[string](t, ctx, texts); got != "Invoice INV-1042 is void." {
			t.Fatalf("the answer reads %q", got)
		}
		if got := eval[string](t, ctx, `document.querySelector('`+part+` pre.tool-output').textContent`); !strings.Contains(got, `"status": "void"`) {
			t.Fatalf("the part's output shows %q", got)
		}
		if n := a.voids.Load(); n != 1 {
			t.Fatalf("the approved tool ran %d times, want once", n)
		}
		shot(t, ctx, "aisdk-approved")
	})

	t.Run("a denied call ends output-denied and never runs", func(t *testing.T) {
		a.llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "v2", Name: "invoices_void", Args: `{"invoice":"INV-1043"}`}}},
			modeltest.Turn{Text: "Understood: INV-1043 stays open."},
		)
		send(t, ctx, "Void invoice INV-1043 too")
		// The run mints its own tool call ids: find the part of the new call.
		const waiting = `section.tool[data-tool="invoices.void"][data-state="approval-requested"]`
		waitPage(t, ctx, `!!document.querySelector('`+waiting+` button.deny') && `+useChatPage+`.dataset.status === "ready"`)
		part := `section.tool[data-call="` + eval[string](t, ctx, `document.querySelector('`+waiting+`').dataset.call`) + `"]`
		click(t, ctx, part+` button.deny`)
		waitPage(t, ctx, `document.querySelector('`+part+`').dataset.state === "output-denied" && `+useChatPage+`.dataset.status === "ready"`)
		if got := eval[string](t, ctx, texts); got != "Understood: INV-1043 stays open." {
			t.Fatalf("the answer reads %q", got)
		}
		if got := eval[string](t, ctx, `document.querySelector('`+part+` .tool-denied').textContent`); got != "Denied: Not now." {
			t.Fatalf("the denied part shows %q", got)
		}
		if n := a.voids.Load(); n != 1 {
			t.Fatalf("the tool ran %d times in all, want once (a denied call must not run)", n)
		}
		shot(t, ctx, "aisdk-denied")
	})

	t.Run("a reload mid-answer reattaches with resume: true", func(t *testing.T) {
		hold := make(chan struct{})
		var once sync.Once
		release := func() { once.Do(func() { close(hold) }) }
		defer release()
		a.llm.Push(modeltest.Turn{Text: "first second", ChunkSize: 6, Hold: hold})
		// The same tab (its session token is in sessionStorage) on a page
		// that asks useChat to resume.
		do(t, ctx, chromedp.Navigate(a.app.URL+"/?chat=chat_resume&resume"))
		waitPage(t, ctx, useChatPage+`?.dataset.status === "ready"`)
		send(t, ctx, "Say two words")
		waitPage(t, ctx, texts+` === "first "`)
		// The reload drops the client's stream; the run goes on, and the new
		// page's useChat GETs {api}/chat_resume/stream on mount.
		do(t, ctx, chromedp.Reload())
		waitPage(t, ctx, useChatPage+`?.dataset.status === "streaming" && `+texts+` === "first "`)
		release()
		waitPage(t, ctx, useChatPage+`.dataset.status === "ready" && `+texts+` === "first second"`)
		if n := eval[int](t, ctx, `document.querySelectorAll("li.message.assistant").length`); n != 1 {
			t.Fatalf("%d assistant messages after the resume, want the one answer", n)
		}
	})
}
