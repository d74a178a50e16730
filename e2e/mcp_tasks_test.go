package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/filelock"
	"github.com/switchboardhq/switchboard/sqlite"
)

// requireMCPSDK installs the official TypeScript MCP SDK into
// e2e/testdata/mcp-oauth-client (npm ci from its lockfile) unless it is
// there, or skips t when node or npm is missing. Test binaries running at
// once share node_modules: one installs while the others wait on the lock.
func requireMCPSDK(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed")
	}
	unlock, err := filelock.Lock(filepath.Join(mcpOAuthClient, ".npm-install.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(mcpOAuthClient, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("skipping: npm is not installed to install the MCP SDK")
	}
	cmd := exec.Command("bash", "build.sh")
	cmd.Dir = mcpOAuthClient
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install the MCP SDK (build.sh): %v\n%s", err, out)
	}
}

// TestMCPTasksOfficialClient: the official TypeScript MCP SDK client
// (1.32.2, its experimental tasks) sees the tasks capability and that the
// job tool runs as a task, calls it and gets a task (it decides so from
// the listing alone), follows its status to completed and gets the job's
// result; its tasks/list shows the task; it cancels a second task while
// it works: the tool's work sees the cancellation and never finishes its
// effect, the task reads cancelled, and the ledger records the job
// cancelled.
func TestMCPTasksOfficialClient(t *testing.T) {
	requireMCPSDK(t)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	release := make(chan struct{})
	stopped := make(chan error, 1)
	effects := make(chan int, 2)
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "reports.build", Description: "Build a report.", Class: switchboard.ClassJob,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"pages":{"type":"integer"}},"required":["pages"]}`)},
		func(ctx context.Context, in json.RawMessage) (any, error) {
			var args struct{ Pages int }
			_ = json.Unmarshal(in, &args)
			if args.Pages != 7 {
				<-ctx.Done() // only a cancel ends this one
				stopped <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			effects <- args.Pages
			return map[string]int{"pages": args.Pages}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)

	cmd := exec.Command("node", "tasks.mjs", srv.URL+"/mcp", adminToken)
	cmd.Dir = mcpOAuthClient
	cmd.Stderr = &testLog{t: t, prefix: "tasks.mjs: "}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	n := &nodeClient{lines: make(chan map[string]json.RawMessage, 16)}
	go n.read(out)

	var ready struct {
		Capability struct {
			List, Cancel *struct{}
			Requests     struct{ Tools struct{ Call *struct{} } }
		}
		Tools []struct {
			Name      string
			Execution struct{ TaskSupport string }
		}
	}
	decode(t, n.next(t, "ready"), &ready)
	if c := ready.Capability; c.List == nil || c.Cancel == nil || c.Requests.Tools.Call == nil ||
		len(ready.Tools) != 1 || ready.Tools[0].Name != "reports-build" || ready.Tools[0].Execution.TaskSupport != "optional" {
		t.Fatalf("the client sees %+v", ready)
	}
	var working string
	decode(t, n.next(t, "working"), &working)
	close(release)
	var done struct {
		TaskID   string
		Statuses []string
		Result   struct {
			Content           []struct{ Text string }
			StructuredContent struct{ Pages int }
			IsError           bool
		}
	}
	decode(t, n.next(t, "completed"), &done)
	if done.TaskID != working || done.Result.IsError || done.Result.Content[0].Text != `{"pages":7}` ||
		done.Statuses[len(done.Statuses)-1] != "completed" {
		t.Fatalf("the first task ended %+v", done)
	}
	admin := client.New(srv.URL, adminToken, nil)
	if inv, err := admin.GetInvocation(ctx, done.TaskID); err != nil || inv.Tool != "reports.build" {
		t.Fatalf("task %s is not an invocation of reports.build: %+v %v", done.TaskID, inv, err)
	}
	var listed []string
	decode(t, n.next(t, "listed"), &listed)
	if len(listed) != 1 || listed[0] != done.TaskID {
		t.Fatalf("tasks/list: %v", listed)
	}

	var second string
	decode(t, n.next(t, "cancelling"), &second)
	var cancelled struct {
		Task        struct{ Status string }
		StreamError string
		After       struct{ Status, StatusMessage string }
	}
	decode(t, n.next(t, "cancelled"), &cancelled)
	if cancelled.Task.Status != "cancelled" || cancelled.After.Status != "cancelled" || !strings.Contains(cancelled.StreamError, "cancelled") {
		t.Fatalf("the second task: %+v", cancelled)
	}
	select {
	case cause := <-stopped:
		if switchboard.CodeOf(cause) != switchboard.CodeCancelled {
			t.Fatalf("the cancelled job's work ended with %v", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled job's work never saw the cancel")
	}
	if len(effects) != 1 {
		t.Fatalf("%d effects, want only the first task's", len(effects))
	}
	page, err := admin.Activity(ctx, client.ActivityQuery{Verb: activity.VerbJobFinish})
	if err != nil {
		t.Fatal(err)
	}
	ended := map[string]string{}
	for _, e := range page.Items {
		var dt struct{ InvocationID, Status string }
		decode(t, e.Details, &dt)
		ended[dt.InvocationID] = dt.Status
	}
	if ended[done.TaskID] != "succeeded" || ended[second] != "cancelled" {
		t.Fatalf("the ledger's job ends: %v", ended)
	}
}

func decode(t *testing.T, b json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}
