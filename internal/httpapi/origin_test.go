package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// RELIABILITY row 2, without an Origin: Fetch Metadata marks the request
// cross-site, so it is refused before the call runs; same-origin requests,
// requests with no browser headers (CLI, curl) and allowed origins work.
func TestCrossSiteWithoutOrigin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{Store: st, Registry: reg})
	t.Cleanup(b.Close)
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{
		{Name: "tasks.delete", Description: "Delete a task.", Class: switchboard.ClassMutate, Binding: &switchboard.Binding{Go: true}},
	}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	b.Handle("tasks.delete", func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		return map[string]any{"deleted": true}, nil
	})
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: token, Broker: b, AllowOrigins: []string{"http://App.test:3000"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f := &fixture{srv: srv, store: st}
	const path, body = "/api/v1/tools/tasks.delete/call", `{"input":{}}`

	for _, site := range []string{"cross-site", "same-site"} {
		status, resp := f.do(t, "POST", path, body, map[string]string{"Sec-Fetch-Site": site})
		if status != http.StatusForbidden || codeOf(resp) != "ORIGIN_REJECTED" {
			t.Errorf("Sec-Fetch-Site %s, no Origin: %d %v", site, status, resp)
		}
		e, _ := resp["error"].(map[string]any)
		if msg, _ := e["message"].(string); len(msg) < 10 {
			t.Errorf("message %q does not help a person act", msg)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("refused calls ran %d times", n)
	}
	// A safe method is not state-changing and stays readable.
	if status, resp := f.do(t, "GET", "/api/v1/tools", "", map[string]string{"Sec-Fetch-Site": "cross-site"}); status != http.StatusOK {
		t.Errorf("cross-site GET: %d %v", status, resp)
	}
	for i, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "same-origin"},
		nil, // CLI, curl, MCP clients: no browser headers at all
		{"Sec-Fetch-Site": "cross-site", "Origin": "http://app.test:3000"}, // an --allow-origin app
	} {
		status, resp := f.do(t, "POST", path, body, hdr)
		if status != http.StatusOK || resp["status"] != "succeeded" {
			t.Errorf("%v: %d %v", hdr, status, resp)
		}
		if n := runs.Load(); n != int32(i+1) {
			t.Errorf("%v: ran %d times, want %d", hdr, n, i+1)
		}
	}
}
