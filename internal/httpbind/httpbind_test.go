package httpbind_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/httpbind"
)

// seen is what the backend received.
type seen struct {
	method, path, rawQuery, body string
	header                       http.Header
}

// backend answers every request with status, content type and body, and
// reports what it received.
func backend(t *testing.T, status int, ct, body string) (*httptest.Server, <-chan seen) {
	t.Helper()
	ch := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(b), r.Header.Clone()}
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func call(t *testing.T, c *httpbind.Client, b *switchboard.HTTPBinding, input string) (string, error) {
	t.Helper()
	out, err := c.Call(context.Background(), b, []byte(input))
	return string(out), err
}

func TestRequestMapping(t *testing.T) {
	env := map[string]string{"TASKS_KEY": "k-123"}
	c := httpbind.New(&httpbind.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	t.Cleanup(c.Close)
	for _, tc := range []struct {
		name, method, url, input       string
		path, query, body, contentType string
	}{
		{"post fills path and sends the rest as JSON", "POST", "/api/projects/{projectId}/tasks",
			`{"projectId":"p 1/2","title":"Ship","n":1.50}`, "/api/projects/p%201%2F2/tasks", "", `{"n":1.50,"title":"Ship"}`, "application/json"},
		{"get sends the rest as query, arrays repeated", "GET", "/api/tasks/{id}",
			`{"id":7,"tags":["a","b c"],"done":false,"skip":null,"filter":{"x":1}}`, "/api/tasks/7", `done=false&filter=%7B%22x%22%3A1%7D&tags=a&tags=b+c`, "", ""},
		{"delete uses the query too", "DELETE", "/api/tasks/{id}", `{"id":"t1","force":true}`, "/api/tasks/t1", "force=true", "", ""},
		{"post with query pairs in the template", "POST", "/pet/{petId}?name={name}&status={status}&fixed=1",
			`{"petId":3,"status":"sold","extra":"x"}`, "/pet/3", "status=sold&fixed=1", `{"extra":"x"}`, "application/json"},
		{"empty input posts an empty object", "PUT", "/reset", ``, "/reset", "", `{}`, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := backend(t, 200, "application/json", `{"ok":true}`)
			b := &switchboard.HTTPBinding{Method: tc.method, URL: srv.URL + tc.url, Headers: map[string]switchboard.HeaderValue{
				"X-Api-Key": {Env: "TASKS_KEY"}, "X-Client": {Value: "switchboard-test"},
			}}
			out, err := call(t, c, b, tc.input)
			if err != nil || out != `{"ok":true}` {
				t.Fatalf("call: %q %v", out, err)
			}
			s := <-got
			if s.method != tc.method || s.path != tc.path || s.rawQuery != tc.query || s.body != tc.body {
				t.Fatalf("backend saw %s %s ?%s body %q; want %s %s ?%s body %q", s.method, s.path, s.rawQuery, s.body, tc.method, tc.path, tc.query, tc.body)
			}
			if s.header.Get("Content-Type") != tc.contentType {
				t.Fatalf("content type %q", s.header.Get("Content-Type"))
			}
			if s.header.Get("X-Api-Key") != "k-123" || s.header.Get("X-Client") != "switchboard-test" {
				t.Fatalf("headers not sent: %v", s.header)
			}
			if s.header.Get("Authorization") != "" || s.header.Get("Cookie") != "" {
				t.Fatalf("credentials the binding does not declare reached the backend: %v", s.header)
			}
		})
	}
}

func TestRequestMappingErrors(t *testing.T) {
	c := httpbind.New(&httpbind.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	t.Cleanup(c.Close)
	srv, _ := backend(t, 200, "application/json", `{}`)
	for _, tc := range []struct {
		name  string
		b     switchboard.HTTPBinding
		input string
		code  switchboard.Code
		want  string
	}{
		{"missing path field", switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/t/{id}"}, `{}`, switchboard.CodeInvalidInput, `"id"`},
		{"dot-dot in path", switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/p/{id}/tasks"}, `{"id":".."}`, switchboard.CodeInvalidInput, "path segment"},
		{"dot in path", switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/p/{id}/tasks"}, `{"id":"."}`, switchboard.CodeInvalidInput, "path segment"},
		{"object in path", switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/t/{id}"}, `{"id":{"a":1}}`, switchboard.CodeInvalidInput, "string, number or boolean"},
		{"host placeholder", switchboard.HTTPBinding{Method: "GET", URL: "http://{host}/x"}, `{"host":"169.254.169.254"}`, switchboard.CodeToolUnavailable, "scheme or host"},
		{"unset env header", switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/t", Headers: map[string]switchboard.HeaderValue{"X-Api-Key": {Env: "NOPE_KEY"}}}, `{}`, switchboard.CodeToolUnavailable, "NOPE_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, c, &tc.b, tc.input)
			if switchboard.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s mentioning %s", err, tc.code, tc.want)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	c := httpbind.New(&httpbind.Options{MaxResponseBytes: 4096})
	t.Cleanup(c.Close)
	long := strings.Repeat("é", 3000) // 6000 bytes, multi-byte runes at the cut
	for _, tc := range []struct {
		name       string
		status     int
		ct, body   string
		want       string
		code       switchboard.Code
		wantDetail map[string]any
	}{
		{name: "json", status: 200, ct: "application/json; charset=utf-8", body: ` {"id":1} `, want: `{"id":1}`},
		{name: "problem+json", status: 201, ct: "application/hal+json", body: `[1,2]`, want: `[1,2]`},
		{name: "untyped json", status: 200, body: `{"a":true}`, want: `{"a":true}`},
		{name: "empty 204", status: 204, want: `null`},
		{name: "text is wrapped", status: 200, ct: "text/csv", body: "a,b\n1,2\n", want: `{"contentType":"text/csv","text":"a,b\n1,2\n"}`},
		{name: "html is refused", status: 200, ct: "text/html", body: "<!doctype html><p>app", code: switchboard.CodeUpstreamError,
			wantDetail: map[string]any{"status": 200, "excerpt": "<!doctype html><p>app"}},
		{name: "binary is refused", status: 200, ct: "image/png", body: "\x89PNG\x00\x01", code: switchboard.CodeUpstreamError},
		{name: "json type, broken body", status: 200, ct: "application/json", body: `{"a":`, code: switchboard.CodeUpstreamError},
		{name: "server error", status: 500, ct: "application/json", body: `{"error":"db down"}`, code: switchboard.CodeUpstreamError,
			wantDetail: map[string]any{"status": 500, "excerpt": `{"error":"db down"}`}},
		{name: "client error", status: 404, ct: "text/plain", body: "no such task", code: switchboard.CodeUpstreamError,
			wantDetail: map[string]any{"status": 404, "excerpt": "no such task"}},
		{name: "server error, secrets masked", status: 500, ct: "application/json", body: `{"error":"db down","password":"hunter2"}`, code: switchboard.CodeUpstreamError,
			wantDetail: map[string]any{"status": 500, "excerpt": `{"error":"db down","password":"[redacted]"}`}},
		{name: "text error, secrets masked", status: 500, ct: "text/plain", body: "db down password=hunter2 sk_live_4eC39HqLyjWDarjtT1zdp7dc", code: switchboard.CodeUpstreamError,
			wantDetail: map[string]any{"excerpt": "db down password=[redacted] [redacted]"}},
		// Masked before the cut: the key is past the excerpt's end, its
		// value's head would not be.
		{name: "long json error, masked before the cut", status: 500, ct: "application/json", body: `{"pad":"` + strings.Repeat("x", httpbind.ExcerptBytes-30) + `","token":"hunter2hunter2hunter2hunter2"}`, code: switchboard.CodeUpstreamError},
		{name: "content type masked", status: 500, ct: "text/plain; token=hunter2", body: "db down", code: switchboard.CodeUpstreamError,
			wantDetail: map[string]any{"contentType": "text/plain; token=[redacted]"}},
		{name: "oversize", status: 200, ct: "application/json", body: `"` + strings.Repeat("x", 5000) + `"`, code: switchboard.CodePayloadTooLarge},
		{name: "oversize error body is excerpted", status: 502, ct: "text/plain", body: long[:4000], code: switchboard.CodeUpstreamError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := backend(t, tc.status, tc.ct, tc.body)
			out, err := call(t, c, &switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/x"}, `{}`)
			if tc.code == "" {
				if err != nil || out != tc.want {
					t.Fatalf("got %q %v, want %q", out, err, tc.want)
				}
				return
			}
			var e *switchboard.Error
			if switchboard.CodeOf(err) != tc.code {
				t.Fatalf("got %q %v, want %s", out, err, tc.code)
			}
			e = switchboard.AsError(err)
			d, _ := e.Details.(map[string]any)
			for k, v := range tc.wantDetail {
				if d[k] != v {
					t.Fatalf("details[%s] = %v, want %v (message %q)", k, d[k], v, e.Message)
				}
			}
			if ex, ok := d["excerpt"].(string); ok && len(ex) > httpbind.ExcerptBytes+len("…") {
				t.Fatalf("excerpt is %d bytes; the bound is %d", len(ex), httpbind.ExcerptBytes)
			}
			if b, _ := json.Marshal(e); !json.Valid(b) || strings.ContainsRune(string(b), '\uFFFD') {
				t.Fatalf("error does not encode as clean UTF-8 JSON: %s", b)
			} else if strings.Contains(string(b), "hunter") || strings.Contains(string(b), "sk_live") {
				t.Fatalf("a secret from the body reached the caller: %s", b)
			}
		})
	}
}

func TestRedirectsStayOnHost(t *testing.T) {
	other, got := backend(t, 200, "application/json", `{"leaked":true}`)
	c := httpbind.New(nil)
	t.Cleanup(c.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	b := &switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/x", Headers: map[string]switchboard.HeaderValue{"X-Token": {Value: "t"}}}
	_, err := call(t, c, b, `{}`)
	if switchboard.CodeOf(err) != switchboard.CodeUpstreamError {
		t.Fatalf("cross-host redirect: %v", err)
	}
	select {
	case s := <-got:
		t.Fatalf("the redirect was followed to another host with headers %v", s.header)
	default:
	}
}

// A same-host redirect is followed without a Referer: it would carry the
// original query, whose values may be secrets (issue 14 item 11).
func TestRedirectsSendNoReferer(t *testing.T) {
	referers := make(chan []string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		referers <- r.Header.Values("Referer")
		if r.URL.Path == "/x" {
			http.Redirect(w, r, "/y", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	c := httpbind.New(nil)
	t.Cleanup(c.Close)
	b := &switchboard.HTTPBinding{Method: "GET", URL: srv.URL + "/x?api_key=hunter2"}
	out, err := call(t, c, b, `{}`)
	if err != nil || !strings.Contains(out, `"ok"`) {
		t.Fatalf("redirected call: %s %v", out, err)
	}
	if first, second := <-referers, <-referers; len(first) != 0 || len(second) != 0 {
		t.Fatalf("Referer sent: %q then %q", first, second)
	}
}

func TestUnreachableBackend(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := httpbind.New(nil)
	t.Cleanup(c.Close)
	_, err := call(t, c, &switchboard.HTTPBinding{Method: "GET", URL: url}, `{}`)
	if switchboard.CodeOf(err) != switchboard.CodeUpstreamError || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("got %v", err)
	}
}
