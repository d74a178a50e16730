package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// `tools call --async` prints the call's status when it prints, not the
// status it had when recorded: a call that has finished prints its result
// (or its error), one still running says so.
func TestAsyncPrintsTheCallsRealStatus(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	obj := json.RawMessage(`{"type":"object"}`)
	for name, fn := range map[string]func(context.Context, json.RawMessage) (any, error){
		"fast.ok": func(context.Context, json.RawMessage) (any, error) { return map[string]string{"answer": "done"}, nil },
		"fast.fail": func(context.Context, json.RawMessage) (any, error) {
			return nil, switchboard.Errorf(switchboard.CodeUpstreamError, "backend said no")
		},
		"slow.wait": func(context.Context, json.RawMessage) (any, error) { <-release; return map[string]string{}, nil },
	} {
		tool := switchboard.Tool{Name: name, Description: "A test tool " + name + ".", Class: switchboard.ClassRead, InputSchema: obj}
		if err := d.RegisterFunc(ctx, tool, fn); err != nil {
			t.Fatal(err)
		}
	}
	// The race the CLI fixes, made certain: the re-read of a fast tool's
	// record is held until that call has finished.
	h := d.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/api/v1/invocations/"); ok && r.Method == http.MethodGet {
			for {
				inv, err := d.Broker.Get(r.Context(), id)
				if err != nil || !strings.HasPrefix(inv.Tool, "fast.") || inv.Status.Terminal() {
					break
				}
				time.Sleep(time.Millisecond) // the call finishes on its own goroutine
				if r.Context().Err() != nil {
					break
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(release); srv.Close(); d.Close() })
	admin := []string{"--addr", srv.URL, "--token", testToken}

	code, out, errs := run(t, append(admin, "tools", "call", "fast.ok", "--async")...)
	if code != 0 || !strings.Contains(out, `"answer": "done"`) || strings.Contains(out+errs, "dispatched") {
		t.Fatalf("fast.ok --async: %d %q %q; want its result", code, out, errs)
	}
	code, out, errs = run(t, append(admin, "tools", "call", "fast.fail", "--async")...)
	if code != 1 || !strings.Contains(errs, "UPSTREAM_ERROR: backend said no") || !strings.Contains(errs, "(failed)") || strings.Contains(out+errs, "dispatched") {
		t.Fatalf("fast.fail --async: %d %q %q; want its error", code, out, errs)
	}
	code, out, errs = run(t, append(admin, "tools", "call", "slow.wait", "--async")...)
	if code != 0 || !strings.Contains(out, `"status": "dispatched"`) || !strings.Contains(errs, "switchboard invocation ") {
		t.Fatalf("slow.wait --async: %d %q %q; want dispatched and how to follow it", code, out, errs)
	}
}

// approvals list --quiet prints bare ids, oldest first, and approve takes
// several: the README's `approvals approve $(approvals list --quiet | tail
// -n 1)` takes the newest only.
func TestApproveWhatListQuietPrints(t *testing.T) {
	url, _, _ := startGoverned(t)
	admin := []string{"--addr", url, "--token", testToken}
	code, out, errs := run(t, append(admin, "approvals", "approve")...)
	if code != 2 || !strings.Contains(errs, "one or more approval IDs") {
		t.Fatalf("approve with nothing: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(admin, "token", "create", "--agent", "planner")...)
	if code != 0 {
		t.Fatal(out)
	}
	agent := []string{"--addr", url, "--token", strings.TrimSpace(out)}
	for _, title := range []string{"one", "two"} {
		code, out, errs = run(t, append(agent, "tools", "call", "tasks.create", "--async", "--input", `{"title":"`+title+`"}`)...)
		if code != 0 || !strings.Contains(out, `"status": "awaiting_approval"`) {
			t.Fatalf("agent call: %d %q %q", code, out, errs)
		}
	}
	code, out, errs = run(t, append(admin, "approvals", "list", "--quiet")...)
	ids := strings.Fields(out)
	if code != 0 || len(ids) != 2 || !strings.HasPrefix(ids[0], "apr_") || errs != "" {
		t.Fatalf("list --quiet: %d %q %q; want two bare ids", code, out, errs)
	}
	code, out, errs = run(t, append(admin, append([]string{"approvals", "approve"}, ids...)...)...)
	if code != 0 || strings.Count(out, " approved: tasks.create by agent:planner") != 2 {
		t.Fatalf("approve both: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(admin, "approvals", "list", "--status", "approved", "--quiet")...)
	if code != 0 || len(strings.Fields(out)) != 2 {
		t.Fatalf("approved list: %d %q", code, out)
	}
}
