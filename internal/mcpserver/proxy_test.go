package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// stdio connects an SDK client to ServeStdio over pipes, relaying to e.
func (e *env) stdio(copts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(ctx, serverR, serverW, StdioOptions{URL: e.srv.URL + "/mcp", Token: adminToken})
		serverW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, copts)
	cs, err := c.Connect(e.ctx, &mcp.IOTransport{Reader: clientR, Writer: clientW}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("ServeStdio: %v", err)
		}
	})
	return cs
}

func TestStdioRelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.goTool(tool("jobs.run", "job"), func(ctx context.Context, _ json.RawMessage) (any, error) {
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 1, Total: 2, Message: "half way"})
		return "done", nil
	})
	block := make(chan struct{})
	e.goTool(tool("jobs.block", "job"), func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(block)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e.tab(goTo("tab"), navTool())
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	changed := make(chan struct{}, 10)
	cs := e.stdio(&mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if init := cs.InitializeResult(); init.Instructions != instructions || init.Capabilities.Tools == nil || !init.Capabilities.Tools.ListChanged {
		t.Fatalf("initialize over stdio: %+v", init)
	}

	listed, _ := listAll(t, cs)
	if got := byName(listed); got["jobs-run"] == nil || got["nav-goto"] == nil {
		t.Fatalf("stdio listing %v", keys(got))
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "jobs-run", Meta: mcp.Meta{"progressToken": 9}})
	if err != nil || res.IsError || text(t, res) != "done" {
		t.Fatalf("%v %+v", err, res)
	}
	if p := <-progress; p.Message != "half way" || p.Progress != 1 {
		t.Fatalf("relayed progress %+v", p)
	}
	var out struct{ Page string }
	structured(t, call(t, cs, "nav-goto", map[string]any{"page": "inbox"}), &out)
	if out.Page != "inbox" {
		t.Fatalf("browser call over stdio: %+v", out)
	}

	// The daemon's protocol errors keep their code.
	var rpc *jsonrpc.Error
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "no-such_tool"}); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool over stdio: %v", err)
	}

	// list_changed crosses the relay.
	for len(changed) > 0 {
		<-changed
	}
	e.register(tool("late.arrival", "read"))
	for i := 0; ; i++ {
		<-changed
		if listed, _ := listAll(t, cs); byName(listed)["late-arrival"] != nil {
			break
		}
		if i == 10 {
			t.Fatal("late-arrival never listed")
		}
	}

	// Cancelling on stdio cancels in the daemon.
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "jobs-block"})
		errc <- err
	}()
	<-block
	cancel()
	<-errc
	if d := e.ledgered("jobs.block"); d.Status != switchboard.StatusCancelled {
		t.Fatalf("cancel over stdio: %+v", d)
	}
}

func TestStdioWithoutDaemon(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // nothing listens there now
	r, w := io.Pipe()
	defer w.Close()
	err = ServeStdio(t.Context(), r, io.Discard, StdioOptions{URL: url, Token: "x"})
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("%v, want UNAVAILABLE", err)
	}
}

// The relay survives a daemon restart: the next request opens a new
// session with the new daemon.
func TestStdioReconnects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.register(tool("tasks.list", "read"))
	var target atomic.Pointer[http.Handler]
	h := e.srv.Config.Handler
	target.Store(&h)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*target.Load()).ServeHTTP(w, r) }))
	t.Cleanup(front.Close)
	relay := *e
	relay.srv = front
	cs := relay.stdio(nil)
	if listed, _ := listAll(t, cs); len(listed) != 1 {
		t.Fatalf("before: %d tools", len(listed))
	}
	// "Restart": a new MCP server over the same catalog, which knows none of
	// the old sessions.
	restarted := newEnvSharing(t, e, Options{})
	h2 := restarted.mcp.Handler()
	target.Store(&h2)
	if listed, _ := listAll(t, cs); len(listed) != 1 || listed[0].Name != "tasks-list" {
		t.Fatalf("after restart: %v", listed)
	}
	if res := call(t, cs, "tasks-list", nil); !res.IsError || !strings.HasPrefix(text(t, res), "TOOL_UNAVAILABLE") {
		t.Fatalf("call after restart: %s", text(t, res)) // no binding: the daemon's answer, relayed
	}
}
