package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestEmbeddedApp runs the app in-process and calls its tools through the
// mounted switchboard HTTP API with the typed client.
func TestEmbeddedApp(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h, closeApp, err := newApp(ctx, store, "example-token", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeApp)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cl := client.New(srv.URL+"/switchboard", "example-token", nil)

	m, err := cl.ListTools(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The app's three tools, beside the daemon's own core tools
	// (activity.get, workspace.describe_context, agents.list, ...).
	var host []string
	for _, tl := range m.Tools {
		if tl.Origin != nil && tl.Origin.Source != switchboard.SourceCore {
			host = append(host, tl.Name)
		}
	}
	if len(host) != 3 {
		t.Fatalf("the app's tools: %v", host)
	}
	resp, err := cl.CallTool(ctx, "tasks.create", json.RawMessage(`{"title":"Write the docs"}`), client.CallOptions{})
	if err != nil || resp.Status != switchboard.StatusSucceeded {
		t.Fatalf("create: %+v %v", resp, err)
	}
	var task Task
	if err := json.Unmarshal(resp.Result, &task); err != nil || task.ID != "t1" {
		t.Fatalf("created %s", resp.Result)
	}
	if _, err := cl.CallTool(ctx, "tasks.complete", json.RawMessage(`{"id":"t1"}`), client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err = cl.CallTool(ctx, "tasks.list", json.RawMessage(`{"done":true}`), client.CallOptions{})
	if err != nil || !strings.Contains(string(resp.Result), `"done":true`) {
		t.Fatalf("list: %s %v", resp.Result, err)
	}

	// The app's own route sees what the tools did: one state, two doors.
	r, err := http.Get(srv.URL + "/tasks")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(b), "Write the docs") {
		t.Fatalf("GET /tasks: %s", b)
	}

	// Errors keep their codes; bad input is refused with a pointer.
	resp, err = cl.CallTool(ctx, "tasks.complete", json.RawMessage(`{"id":"t9"}`), client.CallOptions{})
	if switchboard.CodeOf(err) != switchboard.CodeNotFound || resp.InvocationID == "" {
		t.Fatalf("complete unknown: %+v %v", resp, err)
	}
	_, err = cl.CallTool(ctx, "tasks.create", json.RawMessage(`{"title":""}`), client.CallOptions{})
	if e := switchboard.AsError(err); e.Code != switchboard.CodeSchemaViolation || !strings.Contains(e.Message, "/title") {
		t.Fatalf("empty title: %v", err)
	}
	inv, err := cl.GetInvocation(ctx, resp.InvocationID)
	if err != nil || inv.Status != switchboard.StatusFailed || inv.Caller != "user:admin" {
		t.Fatalf("invocation record: %+v %v", inv, err)
	}
}
