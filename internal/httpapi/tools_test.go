package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

const token = "test-admin-token"

type fixture struct {
	srv   *httptest.Server
	store switchboard.Store
}

func newFixture(t *testing.T, mutate func(*httpapi.Options)) *fixture {
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
	opts := httpapi.Options{Registry: reg, AdminToken: token, MaxBodyBytes: 64 << 10}
	if mutate != nil {
		mutate(&opts)
	}
	h, err := httpapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, store: st}
}

// do sends a request and returns status and decoded body.
func (f *fixture) do(t *testing.T, method, path, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: body is not JSON: %s", method, path, b)
		}
	}
	return resp.StatusCode, out
}

func codeOf(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

const createTool = `{"name":"tasks.create","description":"Create a task in a project.","class":"mutate",
 "inputSchema":{"type":"object","properties":{"projectId":{"type":"string"},"title":{"type":"string"}},"required":["projectId","title"]},
 "binding":{"http":{"method":"POST","url":"http://127.0.0.1:8080/api/projects/{projectId}/tasks","headers":{"X-Api-Key":{"env":"TASKS_API_KEY"},"X-Literal":"s3cret"}}}}`

func TestToolRoutes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	status, body := f.do(t, "POST", "/api/v1/tools", createTool, nil)
	if status != 200 {
		t.Fatalf("register: %d %v", status, body)
	}
	status, body = f.do(t, "POST", "/api/v1/tools", `{"tools":[{"name":"tasks.list","description":"List tasks of a project.","class":"read"}]}`, nil)
	if status != 200 {
		t.Fatalf("register manifest: %d %v", status, body)
	}
	status, body = f.do(t, "GET", "/api/v1/tools", "", nil)
	tools, _ := body["tools"].([]any)
	if status != 200 || len(tools) != 2 || body["protocolVersion"] != switchboard.ProtocolVersion {
		t.Fatalf("list: %d %v", status, body)
	}
	status, body = f.do(t, "GET", "/api/v1/tools/tasks.create", "", nil)
	if status != 200 || body["name"] != "tasks.create" {
		t.Fatalf("get: %d %v", status, body)
	}
	hdrs := body["binding"].(map[string]any)["http"].(map[string]any)["headers"].(map[string]any)
	if hdrs["X-Literal"] != "[redacted]" || hdrs["X-Api-Key"].(map[string]any)["env"] != "TASKS_API_KEY" {
		t.Errorf("headers not redacted as expected: %v", hdrs)
	}
	status, body = f.do(t, "POST", "/api/v1/tools/search", `{"query":"create task","limit":1}`, nil)
	items, _ := body["items"].([]any)
	if status != 200 || len(items) != 1 || items[0].(map[string]any)["name"] != "tasks.create" {
		t.Fatalf("search: %d %v", status, body)
	}
	if _, ok := items[0].(map[string]any)["inputSchema"]; ok {
		t.Error("search leaks schemas; deferred disclosure hands names and summaries only")
	}
	if status, _ = f.do(t, "DELETE", "/api/v1/tools/tasks.create", "", nil); status != 204 {
		t.Fatalf("delete: %d", status)
	}
	status, body = f.do(t, "GET", "/api/v1/tools/tasks.create", "", nil)
	if status != 404 || codeOf(body) != "TOOL_NOT_FOUND" {
		t.Errorf("get deleted: %d %v", status, body)
	}
	status, body = f.do(t, "GET", "/api/v1/tools?surface=desk", "", nil)
	if status != 400 || codeOf(body) != "INVALID_INPUT" {
		t.Errorf("bad surface: %d %v", status, body)
	}
}

func TestBadInputGetsItsCode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *httpapi.Options) { o.AllowOrigins = []string{"http://app.test:3000"} })
	big := `{"name":"a.b","description":"` + strings.Repeat("x", 40<<20) + `","class":"read"}`
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code                     string
	}{
		{"malformed json", "POST", "/api/v1/tools", `{"name":`, nil, 400, "INVALID_INPUT"},
		{"trailing data", "POST", "/api/v1/tools", `{"name":"a.b","description":"x","class":"read"} {}`, nil, 400, "INVALID_INPUT"},
		{"unknown field", "POST", "/api/v1/tools", `{"name":"a.b","descripton":"x","class":"read"}`, nil, 400, "INVALID_INPUT"},
		{"wrong type", "POST", "/api/v1/tools", `{"name":7}`, nil, 400, "INVALID_INPUT"},
		{"schema does not compile", "POST", "/api/v1/tools", `{"name":"a.b","description":"x","class":"read","inputSchema":{"type":"object","properties":{"n":{"type":"nmber"}}}}`, nil, 422, "SCHEMA_VIOLATION"},
		{"name outside grammar", "POST", "/api/v1/tools", `{"name":"Create Task","description":"x","class":"read"}`, nil, 400, "INVALID_INPUT"},
		{"duplicate names", "POST", "/api/v1/tools", `[{"name":"a.b","description":"x","class":"read"},{"name":"a.b","description":"y","class":"read"}]`, nil, 409, "CONFLICT"},
		{"browser mutate", "POST", "/api/v1/tools", `{"name":"ui.delete","description":"x","class":"mutate","surface":"browser","viewStateOnly":true}`, nil, 422, "EXEMPTION_VIOLATION"},
		{"oversize body", "POST", "/api/v1/tools", big, nil, 413, "PAYLOAD_TOO_LARGE"},
		{"oversize search", "POST", "/api/v1/tools/search", `{"query":"` + strings.Repeat("q", 70<<10) + `"}`, nil, 413, "PAYLOAD_TOO_LARGE"},
		{"missing token", "GET", "/api/v1/tools", "", map[string]string{"Authorization": ""}, 401, "UNAUTHORIZED"},
		{"wrong token", "GET", "/api/v1/tools", "", map[string]string{"Authorization": "Bearer nope"}, 401, "UNAUTHORIZED"},
		{"foreign origin", "POST", "/api/v1/tools/search", `{"query":"x"}`, map[string]string{"Origin": "https://evil.test", "Sec-Fetch-Site": "cross-site"}, 403, "ORIGIN_REJECTED"},
		{"text/plain cross-site", "POST", "/api/v1/tools", `{}`, map[string]string{"Origin": "https://evil.test", "Content-Type": "text/plain"}, 403, "ORIGIN_REJECTED"},
		{"text/plain same-site", "POST", "/api/v1/tools/search", `{"query":"x"}`, map[string]string{"Content-Type": "text/plain"}, 400, "INVALID_INPUT"},
		{"unknown route", "GET", "/api/v1/nothing", "", nil, 404, "NOT_FOUND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.do(t, tc.method, tc.path, tc.body, tc.hdr)
			if status != tc.status || codeOf(body) != tc.code {
				t.Errorf("got %d %s, want %d %s (%v)", status, codeOf(body), tc.status, tc.code, body)
			}
			if msg, _ := body["error"].(map[string]any)["message"].(string); len(msg) < 10 {
				t.Errorf("message %q does not help a person act", msg)
			}
		})
	}
	if all, _ := f.store.ToolList(context.Background()); len(all) != 0 {
		t.Errorf("bad input left %d tools behind", len(all))
	}
	// An allowed origin works and gets CORS headers; preflights are answered.
	req, _ := http.NewRequest("OPTIONS", f.srv.URL+"/api/v1/tools", nil)
	req.Header.Set("Origin", "http://app.test:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "http://app.test:3000" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	// The headers a browser client may send: a call's Idempotency-Key, an event
	// stream's Last-Event-ID on resume.
	allowed := strings.Split(resp.Header.Get("Access-Control-Allow-Headers"), ", ")
	for _, h := range []string{"Idempotency-Key", "Last-Event-ID", "Content-Type", "Mcp-Session-Id"} {
		if !slices.Contains(allowed, h) {
			t.Errorf("preflight does not allow %s: %q", h, allowed)
		}
	}
	req.Header.Set("Origin", "http://other.test")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign preflight: %d", resp.StatusCode)
	}
}

func TestHostCheckAndHealth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *httpapi.Options) { o.AllowHosts = []string{"127.0.0.1", "localhost"} })
	status, body := f.do(t, "GET", "/healthz", "", map[string]string{"Authorization": ""})
	if status != 200 || body["status"] != "ok" {
		t.Errorf("healthz: %d %v", status, body)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/tools", nil)
	req.Host = "evil.test"
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("DNS rebinding Host accepted: %d", resp.StatusCode)
	}
}
