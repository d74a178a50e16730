package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// callFixture serves the API with a broker over SQLite and two Go tools.
func callFixture(t *testing.T) *fixture {
	t.Helper()
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
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","minLength":1}},"required":["title"]}`)
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{
		{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: schema, Binding: &switchboard.Binding{Go: true}},
		{Name: "tasks.fail", Description: "Always fails.", Class: switchboard.ClassRead, Binding: &switchboard.Binding{Go: true}},
	}); err != nil {
		t.Fatal(err)
	}
	b.Handle("tasks.create", func(_ context.Context, in json.RawMessage) (any, error) {
		var v struct{ Title string }
		_ = json.Unmarshal(in, &v)
		return map[string]any{"id": "t1", "title": v.Title}, nil
	})
	b.Handle("tasks.fail", func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("disk full") })
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: token, Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, store: st}
}

func TestCallRoute(t *testing.T) {
	f := callFixture(t)
	status, body := f.do(t, "POST", "/api/v1/tools/tasks.create/call", `{"input":{"title":"Ship"},"runId":"r1"}`, nil)
	if status != http.StatusOK || body["status"] != "succeeded" || body["result"].(map[string]any)["title"] != "Ship" {
		t.Fatalf("%d %v", status, body)
	}
	id, _ := body["invocationId"].(string)
	status, inv := f.do(t, "GET", "/api/v1/invocations/"+id, "", nil)
	if status != http.StatusOK || inv["caller"] != "user:admin" || inv["runId"] != "r1" || inv["status"] != "succeeded" {
		t.Fatalf("invocation: %d %v", status, inv)
	}

	// Failed after it was recorded: the error's status, and a body that is
	// both the call response and an error envelope.
	status, body = f.do(t, "POST", "/api/v1/tools/tasks.fail/call", `{}`, nil)
	errObj, _ := body["error"].(map[string]any)
	if status != http.StatusBadGateway || body["invocationId"] == "" || body["status"] != "failed" || errObj["code"] != "UPSTREAM_ERROR" {
		t.Fatalf("failed call: %d %v", status, body)
	}

	// Refused before anything was recorded: the plain envelope.
	for _, tc := range []struct {
		path, body string
		status     int
		code       string
	}{
		{"/api/v1/tools/tasks.nope/call", `{"input":{}}`, http.StatusNotFound, "TOOL_NOT_FOUND"},
		{"/api/v1/tools/tasks.create/call", `{"input":{"title":""}}`, http.StatusUnprocessableEntity, "SCHEMA_VIOLATION"},
		{"/api/v1/tools/tasks.create/call", `{"input":{"title":"x"},"bogus":1}`, http.StatusBadRequest, "INVALID_INPUT"},
		{"/api/v1/tools/tasks.create/call", `{"input":`, http.StatusBadRequest, "INVALID_INPUT"},
	} {
		status, body := f.do(t, "POST", tc.path, tc.body, nil)
		e, _ := body["error"].(map[string]any)
		if status != tc.status || e["code"] != tc.code || body["invocationId"] != nil {
			t.Errorf("%s %s: %d %v; want %d %s", tc.path, tc.body, status, body, tc.status, tc.code)
		}
		if tc.code == "SCHEMA_VIOLATION" && e["details"].(map[string]any)["pointer"] != "/title" {
			t.Errorf("violation does not point at /title: %v", e)
		}
	}
	if status, body := f.do(t, "GET", "/api/v1/invocations/nope", "", nil); status != http.StatusNotFound {
		t.Errorf("unknown invocation: %d %v", status, body)
	}
	if status, _ := f.do(t, "POST", "/api/v1/tools/tasks.create/call", `{"input":{"title":"x"}}`, map[string]string{"Authorization": "Bearer wrong"}); status != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", status)
	}
}
