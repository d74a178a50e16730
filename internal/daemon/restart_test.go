package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/postgres"
	"github.com/switchboardhq/switchboard/sqlite"
)

const restartToken = "restart-test-token"

// TestRestartChild is the daemon process that TestBrowserCallSurvivesCrash
// starts and kills; it does nothing in a normal test run.
func TestRestartChild(t *testing.T) {
	dir := os.Getenv("SWITCHBOARD_TEST_RESTART_CHILD")
	if dir == "" {
		t.Skip("helper process for TestBrowserCallSurvivesCrash")
	}
	ctx := context.Background()
	var (
		st  switchboard.Store
		err error
	)
	if dsn := os.Getenv("SWITCHBOARD_TEST_RESTART_PG"); dsn != "" {
		st, err = postgres.Open(ctx, dsn, &postgres.Options{Schema: os.Getenv("SWITCHBOARD_TEST_RESTART_SCHEMA"), MaxConns: 8})
	} else {
		st, err = sqlite.Open(ctx, filepath.Join(dir, "sb.db"), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	opts := daemon.Options{Store: st, AdminToken: restartToken}
	if base := os.Getenv("SWITCHBOARD_TEST_RESTART_MODEL"); base != "" { // a scripted model (tasks_restart_test.go)
		opts.Models = map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: base}}
	}
	d, err := daemon.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.RecoverTasks(ctx); err != nil { // as serve does once its tools are in
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("listening", ln.Addr().String())
	_ = http.Serve(ln, d.Handler()) // until SIGKILL
}

// startChild runs a daemon over dir in a child process and returns its
// address and the process.
func startChild(t *testing.T, dir string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartChild$", "-test.v")
	cmd.Env = append(append(os.Environ(), "SWITCHBOARD_TEST_RESTART_CHILD="+dir), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			go func() {
				for sc.Scan() { // drain, so the child never blocks on stdout
				}
			}()
			return addr, cmd
		}
	}
	t.Fatalf("child daemon did not start: %v", sc.Err())
	return "", nil
}

// RELIABILITY row 13 and durability: a daemon killed while a browser call is
// dispatched leaves a record that the next start resolves to a definite
// failure ("outcome unknown"), never pending and never re-run; finished
// calls keep their results.
func TestBrowserCallSurvivesCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	addr, child := startChild(t, dir)
	ctx := context.Background()
	admin := client.New(addr, restartToken, nil)
	cred, err := admin.CreateSession(ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	tab := admin.Tab(cred)
	tool := func(name string) switchboard.Tool {
		return switchboard.Tool{Name: name, Description: "Test tool " + name + ".", Class: switchboard.ClassUI, ViewStateOnly: true}
	}
	if _, err := tab.Advertise(ctx, []switchboard.Tool{tool("test.ok"), tool("test.hang")}); err != nil {
		t.Fatal(err)
	}
	hung := make(chan string, 1)
	sctx, stopTab := context.WithCancel(ctx)
	defer stopTab()
	go func() {
		_ = tab.Serve(sctx, func(ctx context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error) {
			if req.Tool == "test.hang" {
				hung <- req.InvocationID
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(`{"done":true}`), nil
		})
	}()
	var done switchboard.CallResponse
	for { // the tab attaches asynchronously
		done, err = admin.CallTool(ctx, "test.ok", nil, client.CallOptions{SessionID: cred.SessionID})
		if switchboard.CodeOf(err) != switchboard.CodeSessionGone {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil || done.Status != switchboard.StatusSucceeded {
		t.Fatalf("first call: %+v %v", done, err)
	}
	go func() { _, _ = admin.CallTool(ctx, "test.hang", nil, client.CallOptions{SessionID: cred.SessionID}) }()
	inFlight := <-hung // dispatched and delivered: the record says dispatched
	if inv, err := admin.GetInvocation(ctx, inFlight); err != nil || inv.Status != switchboard.StatusDispatched {
		t.Fatalf("before the crash: %+v %v", inv, err)
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL: no shutdown path runs
		t.Fatal(err)
	}
	_ = child.Wait()
	stopTab()

	addr, _ = startChild(t, dir)
	admin = client.New(addr, restartToken, nil)
	inv, err := admin.GetInvocation(ctx, inFlight)
	if err != nil || inv.Status != switchboard.StatusFailed || inv.Error == nil || inv.Error.Code != switchboard.CodeOutcomeUnknown ||
		!strings.Contains(inv.Error.Message, "outcome unknown") {
		t.Fatalf("the call in flight at the crash: %+v %v", inv, err)
	}
	// Issue 14 item 3: the swept call has its tool.call entry.
	if e := toolCallEntry(t, admin, inFlight); e == nil || !strings.Contains(string(e.Details), `"code":"OUTCOME_UNKNOWN"`) {
		t.Fatalf("the swept call's ledger entry: %+v", e)
	}
	kept, err := admin.GetInvocation(ctx, done.InvocationID)
	if err != nil || kept.Status != switchboard.StatusSucceeded || string(kept.Result) != `{"done":true}` {
		t.Fatalf("the finished call after restart: %+v %v", kept, err)
	}
	// The session outlives the daemon: the tab's token still works and the
	// tab can come back.
	if _, err := admin.Tab(cred).Advertise(ctx, []switchboard.Tool{tool("test.ok")}); err != nil {
		t.Fatalf("the tab after restart: %v", err)
	}
}

// Daemon.Close ends every tab stream and wakes every waiting browser call,
// so http.Server.Shutdown (which waits for handlers) completes.
func TestCloseEndsStreamsForGracefulShutdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: restartToken})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: d.Handler()}
	srv.RegisterOnShutdown(func() { _ = d.Close() })
	go func() { _ = srv.Serve(ln) }()
	admin := client.New(ln.Addr().String(), restartToken, nil)
	cred, err := admin.CreateSession(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	tab := admin.Tab(cred)
	hang := switchboard.Tool{Name: "test.hang", Description: "Never answers.", Class: switchboard.ClassUI, ViewStateOnly: true}
	if _, err := tab.Advertise(ctx, []switchboard.Tool{hang}); err != nil {
		t.Fatal(err)
	}
	s, err := tab.Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	call := make(chan error, 1)
	go func() {
		_, err := admin.CallTool(ctx, "test.hang", nil, client.CallOptions{SessionID: cred.SessionID})
		call <- err
	}()
	for { // wait until the request reached the tab
		ev, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == "browser.action.request" {
			break
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatalf("graceful shutdown did not complete: %v", err)
	}
	if _, err := s.Next(); err == nil {
		t.Fatal("the tab's stream should have ended")
	}
	if err := <-call; switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("the waiting call: %v", err)
	}
}
