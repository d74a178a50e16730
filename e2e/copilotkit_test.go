package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// copilotKitDir holds the stock CopilotKit front end: the page (src/, built
// into dist/) and the CopilotKit runtime (runtime.mjs). Built by
// examples/copilotkit/build.sh: the example a newcomer runs is the app this
// test drives.
var copilotKitDir = filepath.Join("..", "examples", "copilotkit")

// copilotKitApp is a stock CopilotKit app in front of switchboard: the page
// (<CopilotKit> + <CopilotChat> + useInterrupt) served from its own origin,
// CopilotKit's Node runtime with an AG-UI HttpAgent pointed at the daemon's
// /api/v1/agui, and an app backend that counts the calls reaching it.
type copilotKitApp struct {
	*env
	llm     *modeltest.OpenAI
	pageURL string       // the page, with ?runtime= the CopilotKit runtime
	closes  atomic.Int32 // calls of tasks.close that reached the backend
	closed  atomic.Value // the taskId of the last one
}

func newCopilotKitApp(t *testing.T) *copilotKitApp {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser end-to-end tests: %s not found", chromium)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping the stock CopilotKit test: node is not installed")
	}
	for _, f := range []string{filepath.Join("dist", "main.js"), filepath.Join("node_modules", "@copilotkit", "runtime", "package.json")} {
		if _, err := os.Stat(filepath.Join(copilotKitDir, f)); err != nil {
			t.Skipf("skipping the stock CopilotKit test: it is not built (%v); build it with examples/copilotkit/build.sh (needs node and npm)", err)
		}
	}
	a := &copilotKitApp{}
	ctx := context.Background()

	// The app's backend: tasks.close lands here, once per executed call.
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			TaskID string `json:"taskId"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		a.closes.Add(1)
		a.closed.Store(in.TaskID)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"taskId": in.TaskID, "status": "closed"})
	}))
	t.Cleanup(backend.Close)

	d, llm := scriptedDaemon(t, daemon.Options{})
	a.llm = llm
	a.env = &env{t: t, d: d}
	a.srv = httptestServer(t, d)
	a.admin = client.New(a.srv.URL, adminToken, nil)
	// A mutation, bound over HTTP to the app's backend as a sidecar
	// registers it: the assistant may call it only after a person approves.
	if _, err := a.admin.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.close", Description: "Close a task.", Summary: "Close a task",
		Class: switchboard.ClassMutate, Approval: switchboard.ApprovalHITL,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"taskId":{"type":"string"}},"required":["taskId"]}`),
		Binding:     &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend.URL + "/tasks/close"}},
	}}); err != nil {
		t.Fatal(err)
	}

	runtimeURL := startCopilotRuntime(t, a.srv.URL, adminToken)
	page := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(copilotKitDir, "dist"))))
	t.Cleanup(page.Close)
	a.pageURL = page.URL + "/?runtime=" + url.QueryEscape(runtimeURL)
	a.browser = startChromium(t, a.env)
	return a
}

// startCopilotRuntime runs runtime.mjs (CopilotKit's runtime, one HttpAgent
// at daemon's /api/v1/agui) and returns its URL. It stops with the test.
func startCopilotRuntime(t *testing.T, daemonURL, token string) string {
	t.Helper()
	cmd := exec.Command("node", "runtime.mjs")
	cmd.Dir = copilotKitDir
	cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+daemonURL, "SWITCHBOARD_TOKEN="+token,
		"PORT=0", "HOST=127.0.0.1", "COPILOTKIT_TELEMETRY_DISABLED=true")
	logs := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	stdin, err := cmd.StdinPipe() // held open: the runtime exits when it closes
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // after the stdout reader below is done with the pipe
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("CopilotKit runtime log:\n%s", logs.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	// Loading CopilotKit's runtime reads thousands of files: generous.
	select {
	case line := <-lines:
		var ready struct{ URL string }
		if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.URL == "" {
			t.Fatalf("the CopilotKit runtime printed %q, want {\"url\": ...}", line)
		}
		return ready.URL
	case <-exited:
		t.Fatalf("the CopilotKit runtime exited: %s", logs.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("the CopilotKit runtime did not start within 3 minutes: %s", logs.String())
	}
	return ""
}

// lockedWriter lets the child's stderr be written while a failing test
// reads it.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// ckSend types text into CopilotChat's composer and sends it.
func ckSend(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`textarea`), text), enter)
}

// ckText is the page's visible text (CopilotChat's messages among it).
const ckText = `document.body.innerText`

// ckShot saves the page as docs/frontends/NAME.png when
// SWITCHBOARD_FRONTEND_SHOTS is set; otherwise it only checks one can be
// taken.
func ckShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	eval[bool](t, ctx, `document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => r(true))))`)
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil || len(png) == 0 {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if os.Getenv("SWITCHBOARD_FRONTEND_SHOTS") == "" {
		return
	}
	dir := filepath.Join("..", "docs", "frontends")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCopilotKitInChromium drives a stock CopilotKit app pointed at
// switchboard: a turn calls a tool that needs approval, CopilotKit's
// useInterrupt shows the approval, a click approves (or denies) it, the
// tool runs once (or not at all) and the answer shows. No code of ours is
// in the protocol path: the page's CopilotKit talks to CopilotKit's
// runtime, whose AG-UI HttpAgent talks to /api/v1/agui.
func TestCopilotKitInChromium(t *testing.T) {
	a := newCopilotKitApp(t)
	ctx, cancel := a.tab(t, a.pageURL)
	defer cancel()
	do(t, ctx, chromedp.EmulateViewport(900, 760))
	poll(t, ctx, `!!document.querySelector("textarea")`)

	t.Run("CopilotKit reads switchboard's human-in-the-loop capabilities", func(t *testing.T) {
		poll(t, ctx, `document.getElementById("capabilities")?.dataset.hitl !== "null"`)
		var hitl map[string]bool
		if err := json.Unmarshal([]byte(eval[string](t, ctx, `document.getElementById("capabilities").dataset.hitl`)), &hitl); err != nil {
			t.Fatal(err)
		}
		if !hitl["supported"] || !hitl["approvals"] || !hitl["interrupts"] || !hitl["approveWithEdits"] {
			t.Fatalf("useCapabilities().humanInTheLoop = %v", hitl)
		}
	})

	t.Run("an approved call runs once and the answer shows", func(t *testing.T) {
		a.llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_a1", Name: "tasks_close", Args: `{"taskId":"T-17"}`}}},
			modeltest.Turn{Text: "Done: task T-17 is closed."},
		)
		ckSend(t, ctx, "Close task T-17")
		// CopilotKit's useInterrupt renders the interrupt the run ended with.
		poll(t, ctx, `!!document.querySelector(".approval-card button.approve")`)
		card := eval[string](t, ctx, `(() => { const c = document.querySelector(".approval-card");
			return c.querySelector(".approval-message").textContent + "|" + c.querySelector(".approval-args").textContent })()`)
		if !strings.Contains(card, "tasks.close") || !strings.Contains(card, `"taskId": "T-17"`) {
			t.Fatalf("the approval card shows %q", card)
		}
		if n := a.closes.Load(); n != 0 {
			t.Fatalf("the backend was called %d times before the approval", n)
		}
		pending, err := a.admin.Approvals(context.Background(), client.ApprovalQuery{})
		if err != nil || len(pending) != 1 || pending[0].Tool != "tasks.close" {
			t.Fatalf("pending approvals %+v (%v), want the one for tasks.close", pending, err)
		}
		if id := eval[string](t, ctx, `document.querySelector(".approval-card").dataset.interrupt`); id != pending[0].ID {
			t.Fatalf("the interrupt is %s, the approval %s: they are one record", id, pending[0].ID)
		}
		ckShot(t, ctx, "copilotkit-interrupt")

		click(t, ctx, ".approval-card button.approve")
		poll(t, ctx, ckText+`.includes("Done: task T-17 is closed.") && !document.querySelector(".approval-card")`)
		if n, id := a.closes.Load(), a.closed.Load(); n != 1 || id != "T-17" {
			t.Fatalf("the backend saw %d calls (last %v), want exactly one for T-17", n, id)
		}
		got, err := a.admin.Approval(context.Background(), pending[0].ID)
		if err != nil || got.Status != switchboard.ApprovalApproved || got.Channel != "agui" {
			t.Fatalf("approval after the click: %+v (%v), want approved via agui", got, err)
		}
		// The model saw the real result, after the call it made.
		if last := lastToolResult(a.llm.Requests()[len(a.llm.Requests())-1]); !strings.Contains(last, `"status":"closed"`) {
			t.Fatalf("the model got the tool result %q", last)
		}
		ckShot(t, ctx, "copilotkit-approved")
	})

	t.Run("a denied call never reaches the backend and the answer shows", func(t *testing.T) {
		a.llm.Push(
			modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_d1", Name: "tasks_close", Args: `{"taskId":"T-18"}`}}},
			modeltest.Turn{Text: "Understood: T-18 stays open."},
		)
		ckSend(t, ctx, "Close task T-18")
		poll(t, ctx, `document.querySelector(".approval-card .approval-args")?.textContent.includes("T-18")`)
		click(t, ctx, ".approval-card button.deny")
		poll(t, ctx, ckText+`.includes("Understood: T-18 stays open.") && !document.querySelector(".approval-card")`)
		if n := a.closes.Load(); n != 1 {
			t.Fatalf("the backend saw %d calls, want still the one approved before", n)
		}
		if last := lastToolResult(a.llm.Requests()[len(a.llm.Requests())-1]); !strings.Contains(last, "USER_DENIED") {
			t.Fatalf("the model got the tool result %q, want the denial", last)
		}
		ckShot(t, ctx, "copilotkit-denied")
	})

	t.Run("a cancelled run never reaches the backend", func(t *testing.T) {
		// Known gap, left for a decision: switchboard ends a run cancelled at
		// its interrupt with outcome {type: "cancelled"} (@ag-ui/core 1.0.0
		// has it), but CopilotKit 1.74/1.75 bundles @ag-ui/core 0.0.59, whose
		// schema knows only "success" | "interrupt" and refuses the event,
		// so cancel() leaves the page with an error (the approval itself is
		// denied and nothing runs). Enable once the server speaks to such
		// clients in their terms or CopilotKit moves to @ag-ui/core 1.x.
		t.Skip(`CopilotKit 1.74/1.75's @ag-ui/core 0.0.59 refuses RUN_FINISHED {outcome: {type: "cancelled"}} (see docs/frontends-copilotkit.md)`)
		a.llm.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_c1", Name: "tasks_close", Args: `{"taskId":"T-19"}`}}})
		ckSend(t, ctx, "Close task T-19")
		poll(t, ctx, `document.querySelector(".approval-card .approval-args")?.textContent.includes("T-19")`)
		pending, err := a.admin.Approvals(context.Background(), client.ApprovalQuery{})
		if err != nil || len(pending) != 1 {
			t.Fatalf("pending approvals %+v (%v)", pending, err)
		}
		click(t, ctx, ".approval-card button.cancel")
		poll(t, ctx, `!document.querySelector(".approval-card")`)
		waitDaemon(t, "the approval to be settled", func() bool {
			got, err := a.admin.Approval(context.Background(), pending[0].ID)
			return err == nil && got.Status == switchboard.ApprovalDenied
		})
		if n := a.closes.Load(); n != 1 {
			t.Fatalf("the backend saw %d calls, want still the one approved before", n)
		}
		// The chat goes on: the next turn is answered.
		a.llm.Push(modeltest.Turn{Text: "Still here."})
		ckSend(t, ctx, "Are you there?")
		poll(t, ctx, ckText+`.includes("Still here.")`)
	})
}
