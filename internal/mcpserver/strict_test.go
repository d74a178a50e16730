package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// rawSession opens an MCP session with raw HTTP messages and returns the
// headers that continue it.
func rawSession(t *testing.T, url string) []string {
	t.Helper()
	auth := "Bearer " + adminToken
	resp := post(t, t.Context(), url, initializeBody, "Authorization", auth)
	drain(resp)
	hdr := []string{"Authorization", auth, "Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version", "2025-11-25"}
	drain(post(t, t.Context(), url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...))
	for i := 0; ; i++ {
		resp = post(t, t.Context(), url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `"result"`) {
			return hdr
		}
		if i == 100 {
			t.Fatalf("session never became ready: %s", b)
		}
	}
}

// rpcReply reads the one JSON-RPC message of a response, plain JSON or SSE.
func rpcReply(t *testing.T, resp *http.Response) (int, map[string]any) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s := string(b)
	for _, line := range strings.Split(s, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(d) != "" {
			s = d
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: not a JSON-RPC message: %s", resp.Status, b)
	}
	return resp.StatusCode, m
}

// Issue 14 item 8 over MCP: a tools/call message and
// its arguments are parsed strictly, as on HTTP. A duplicate "name" is a
// JSON-RPC error naming /params/name (before the fix the last one won);
// an ambiguous argument is the tool error SCHEMA_VIOLATION with the
// pointer inside the input (before, duplicates were merged last-wins and
// the rest forwarded verbatim). The tool never runs.
func TestCallMessageStrict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	var runs atomic.Int32
	e.goTool(tool("tasks.delete", "mutate"), func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		return map[string]any{"ok": true}, nil
	})
	e.goTool(tool("tasks.evil", "mutate"), func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		return map[string]any{"ok": true}, nil
	})
	url := e.srv.URL + "/mcp"
	hdr := rawSession(t, url)
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":` + params + `}`
	}

	for msg, ptr := range map[string]string{
		call(`{"name":"tasks-delete","name":"tasks-evil","arguments":{}}`):                              "/params/name",
		call(`{"name":"tasks-delete","NAME":"tasks-evil","arguments":{}}`):                              "/params/NAME",
		call(`{"name":"tasks-delete","arguments":{},"arguments":{"x":1}}`):                              "/params/arguments",
		`{"jsonrpc":"2.0","id":9,"id":10,"method":"tools/call","params":{}}`:                            "/id",
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"tasks-\xff\"}}": "/params/name",
	} {
		status, m := rpcReply(t, post(t, t.Context(), url, msg, hdr...))
		errObj, _ := m["error"].(map[string]any)
		data, _ := errObj["data"].(map[string]any)
		if status != http.StatusBadRequest || data["code"] != "INVALID_INPUT" || data["pointer"] != ptr {
			t.Errorf("%q: %d %v; want 400 INVALID_INPUT at %s", msg, status, m, ptr)
		}
	}

	for args, ptr := range map[string]string{
		`{"id":"t1","id":"*"}`:             "/id",
		`{"f":{"Owner":"me","owner":"*"}}`: "/f/owner",
		`{"id\u0000":"*"}`:                 "/id\x00",
		`{"n":1e400}`:                      "/n",
		`{"n":9007199254740993}`:           "/n",
		`{"s":"\ud800"}`:                   "/s",
		"{\"s\":\"\xff\"}":                 "/s",
	} {
		status, m := rpcReply(t, post(t, t.Context(), url, call(`{"name":"tasks-delete","arguments":`+args+`}`), hdr...))
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		te, _ := sc["error"].(map[string]any)
		d, _ := te["details"].(map[string]any)
		if status != http.StatusOK || res["isError"] != true || te["code"] != "SCHEMA_VIOLATION" || d["pointer"] != ptr {
			t.Errorf("arguments %q: %d %v; want a SCHEMA_VIOLATION tool error at %s", args, status, m, ptr)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("a tool ran %d times on refused messages", n)
	}
	status, m := rpcReply(t, post(t, t.Context(), url, call(`{"name":"tasks-delete","arguments":{"n":9007199254740991}}`), hdr...))
	if res, _ := m["result"].(map[string]any); status != http.StatusOK || res["isError"] == true || runs.Load() != 1 {
		t.Fatalf("a strict call: %d %v", status, m)
	}
}
