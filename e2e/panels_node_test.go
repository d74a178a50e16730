package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestNodeBackendPanelInChromium: the app backend is Node
// (examples/panels-node/server.mjs, no Go in it). It declares its panel
// and its data adapter over HTTP and serves the page; an agent opens the
// panel in the user's tab and fills it; the user saves in Chromium; the
// backend's update runs exactly once (the backend counts, and every
// request it accepted carried a valid assertion); the backend's own change
// and its invalidate call refresh the panel on the page.
func TestNodeBackendPanelInChromium(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping the Node backend: node is not installed")
	}
	ctx := context.Background()
	// Both addresses are fixed before anything starts: the daemon must
	// allow the app's origin and name itself (iss) as the backend checks.
	dln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	daemonURL, appURL := "http://"+dln.Addr().String(), "http://"+aln.Addr().String()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken, AllowOrigins: []string{appURL},
		Assertion: daemon.AssertionOptions{Issuer: daemonURL}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: dln, Config: &http.Server{Handler: d.Handler()}}
	srv.Start()
	e := &env{t: t, d: d, srv: srv, admin: client.New(srv.URL, adminToken, nil)}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		d.Close()
		srv.Close()
		st.Close()
	})
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser end-to-end tests: %s not found", chromium)
	}
	e.browser = startChromium(t, e)

	// The backend, on the app listener (LISTEN_FD: the child's fd 3).
	lf, err := aln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	aln.Close()
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir = filepath.Join("..", "examples", "panels-node")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+daemonURL, "SWITCHBOARD_TOKEN="+adminToken, "LISTEN_FD=3")
	cmd.ExtraFiles = []*os.File{lf}
	logs := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server.mjs:\n%s", logs.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		var ready struct{ URL string }
		if json.Unmarshal([]byte(l), &ready) != nil || ready.URL != appURL {
			t.Fatalf("server.mjs printed %q, want {\"url\": %q}", l, appURL)
		}
	case <-time.After(stepTimeout):
		t.Fatalf("server.mjs did not start: %s", logs.String())
	}
	stats := func() (s struct{ Query, Update, Refused int }) {
		t.Helper()
		r, err := http.Get(appURL + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	// The user's page, from the Node app.
	tab, cancel := e.tab(t, appURL+"/")
	defer cancel()
	poll(t, tab, `document.body.dataset.status === "open"`)
	session := eval[string](t, tab, `document.body.dataset.session`)

	// An agent acting for the user opens the panel in the tab and fills it.
	tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: "assistant", User: "user:dana"})
	if err != nil {
		t.Fatal(err)
	}
	agent := client.New(srv.URL, tok.Token, nil)
	callAgent := func(tool string, input any) json.RawMessage {
		t.Helper()
		b, _ := json.Marshal(input)
		cctx, ccancel := context.WithTimeout(ctx, stepTimeout)
		defer ccancel()
		resp, err := agent.CallTool(cctx, tool, b, client.CallOptions{})
		if err != nil {
			t.Fatalf("%s as the agent: %v", tool, err)
		}
		return resp.Result
	}
	var opened struct{ InstanceID string }
	_ = json.Unmarshal(callAgent(panel.ToolOpen, map[string]any{"panel": "project.settings", "sessionId": session,
		"params": map[string]any{"projectId": "apollo"}}), &opened)
	if opened.InstanceID == "" {
		t.Fatal("panel.open answered no instance")
	}
	const field = `[data-sb-panel="project.settings"] [data-sb-path="%s"]`
	f := func(path string) string { return strings.Replace(field, "%s", path, 1) }
	poll(t, tab, `document.querySelector('`+f("name")+`')?.value === "Apollo launch site"`)
	var filled panel.FillResult
	_ = json.Unmarshal(callAgent(panel.ToolFill, map[string]any{"instanceId": opened.InstanceID,
		"values": map[string]any{"owner": "Kim Park"}}), &filled)
	if strings.Join(filled.Applied, ",") != "owner" {
		t.Fatalf("fill: %+v", filled)
	}
	poll(t, tab, `document.querySelector('`+f("owner")+`').value === "Kim Park"`)
	if s := stats(); s.Update != 0 {
		t.Fatalf("a fill saved: the backend's update ran %d times", s.Update)
	}

	// The user saves: the backend's update runs once.
	click(t, tab, `[data-sb-panel="project.settings"] [data-sb-action="save"]`)
	poll(t, tab, `document.querySelector('[data-sb-panel="project.settings"] [data-sb-action-status="save"]')?.textContent === "Done."`)
	if s := stats(); s.Update != 1 || s.Refused != 0 || s.Query == 0 {
		t.Fatalf("after one save the backend counts %+v, want one update, no refused assertion", s)
	}
	if !strings.Contains(logs.String(), "user:dana saved apollo") {
		t.Fatalf("the update's assertion did not name the user: %s", logs.String())
	}

	// The app changes the record itself and tells the daemon: the panel on
	// the page refreshes.
	r, err := http.Post(appURL+"/projects/apollo", "application/json", strings.NewReader(`{"name": "Apollo II"}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("the app's own edit: %d", r.StatusCode)
	}
	poll(t, tab, `document.querySelector('`+f("name")+`').value === "Apollo II" && document.querySelector('`+f("owner")+`').value === "Kim Park"`)
	if s := stats(); s.Update != 1 {
		t.Fatalf("the backend's update ran %d times, want exactly 1", s.Update)
	}
}
