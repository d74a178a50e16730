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

// Issue 14 item 8 over HTTP: a call body and its tool
// input are parsed strictly. Each ambiguous body is refused with the
// pointer of the offending member, and the tool never runs: before the
// fix, {"input": benign, "INPUT": evil} ran the evil input.
func TestCallBodyStrict(t *testing.T) {
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
		{Name: "tasks.delete", Description: "Delete tasks.", Class: switchboard.ClassMutate,
			InputSchema: json.RawMessage(`{"type":"object"}`), Binding: &switchboard.Binding{Go: true}},
	}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	var got atomic.Value
	b.Handle("tasks.delete", func(_ context.Context, in json.RawMessage) (any, error) {
		runs.Add(1)
		got.Store(string(in))
		return map[string]any{"ok": true}, nil
	})
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: token, Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f := &fixture{srv: srv, store: st}
	const path = "/api/v1/tools/tasks.delete/call"

	for _, tc := range []struct {
		body    string
		status  int
		code    string
		pointer string
	}{
		{`{"input":{"id":"t1"},"INPUT":{"id":"*"}}`, 400, "INVALID_INPUT", "/INPUT"},
		{`{"INPUT":{"id":"*"}}`, 400, "INVALID_INPUT", "/INPUT"},
		{`{"input":{},"SESSIONID":"s1"}`, 400, "INVALID_INPUT", "/SESSIONID"},
		{`{"input":{"id":"t1"},"input":{"id":"*"}}`, 400, "INVALID_INPUT", "/input"},
		{`{"input":{},"runId":"r","runId":"s"}`, 400, "INVALID_INPUT", "/runId"},
		{"{\"input\":{},\"runId\":\"\xff\"}", 400, "INVALID_INPUT", "/runId"},
		{`{"input":{"id":"t1","id":"*"}}`, 422, "SCHEMA_VIOLATION", "/id"},
		{`{"input":{"filter":{"Owner":"me","owner":"*"}}}`, 422, "SCHEMA_VIOLATION", "/filter/owner"},
		{`{"input":{"ids":[{"k":1,"k":2}]}}`, 422, "SCHEMA_VIOLATION", "/ids/0/k"},
		{`{"input":{"id\u0000":"*"}}`, 422, "SCHEMA_VIOLATION", "/id\x00"},
		{`{"input":{"n":1e400}}`, 422, "SCHEMA_VIOLATION", "/n"},
		{`{"input":{"n":9007199254740993}}`, 422, "SCHEMA_VIOLATION", "/n"},
		{`{"input":{"s":"\ud800"}}`, 422, "SCHEMA_VIOLATION", "/s"},
		{"{\"input\":{\"s\":\"\xff\xfe\"}}", 422, "SCHEMA_VIOLATION", "/s"},
	} {
		status, body := f.do(t, "POST", path, tc.body, nil)
		e, _ := body["error"].(map[string]any)
		d, _ := e["details"].(map[string]any)
		if status != tc.status || e["code"] != tc.code || d["pointer"] != tc.pointer {
			t.Errorf("%q: %d %v; want %d %s at %q", tc.body, status, body, tc.status, tc.code, tc.pointer)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times on refused bodies", n)
	}

	// Strict is not picky: the largest exact integer and a surrogate pair
	// pass, verbatim.
	in := `{"n":9007199254740991,"s":"\ud83d\ude00"}`
	if status, body := f.do(t, "POST", path, `{"input":`+in+`}`, nil); status != http.StatusOK {
		t.Fatalf("%d %v", status, body)
	}
	if got.Load() != in {
		t.Fatalf("the tool got %v, want %s", got.Load(), in)
	}
}
