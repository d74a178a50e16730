package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/web"
)

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:7766"+path, strings.NewReader("{}"))
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func TestSDKFiles(t *testing.T) {
	t.Parallel()
	h := web.SDK()
	for path, ctype := range map[string]string{
		"/sdk/switchboard.js":   "text/javascript; charset=utf-8",
		"/sdk/switchboard.d.ts": "application/typescript; charset=utf-8",
		"/sdk/webmcp.js":        "text/javascript; charset=utf-8",
		"/sdk/modelcontext.js":  "text/javascript; charset=utf-8",
		// The WebMCP polyfill is served by the daemon, never from a CDN.
		"/sdk/vendor/webmcp-polyfill/index.js":  "text/javascript; charset=utf-8",
		"/sdk/vendor/webmcp-polyfill/schema.js": "text/javascript; charset=utf-8",
	} {
		resp := get(t, h, "GET", path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctype || len(body) < 1000 || resp.Header.Get("ETag") == "" {
			t.Fatalf("%s: %d %q %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
		if again := get(t, h, "GET", path, "If-None-Match", resp.Header.Get("ETag")); again.StatusCode != http.StatusNotModified {
			t.Fatalf("%s revalidation: %d", path, again.StatusCode)
		}
	}
	// The directory is also an npm package: its manifest, tests and
	// node_modules are not served.
	for _, path := range []string{"/sdk/nope.js", "/sdk/package.json", "/sdk/test/vendor.test.js", "/sdk/node_modules/react/index.js", "/sdk/CHANGELOG.md"} {
		if resp := get(t, h, "GET", path); resp.StatusCode != 404 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	if resp := get(t, h, "POST", "/sdk/switchboard.js"); resp.StatusCode != 405 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	if !strings.Contains(string(web.SDKSource()), "export function connect") {
		t.Fatal("SDKSource does not look like the SDK")
	}
}

func TestDemoPagesAndBootstrap(t *testing.T) {
	t.Parallel()
	off := web.Demo(web.DemoOptions{})
	for _, p := range []string{"/demo/", "/demo/media", "/demo/projects/apollo"} {
		resp := get(t, off, "GET", p)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `src="/demo/app.js"`) {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
	if resp := get(t, off, "GET", "/demo/missing.js"); resp.StatusCode != 404 {
		t.Fatalf("a missing asset should 404, not serve the page: %d", resp.StatusCode)
	}
	if resp := get(t, off, "POST", "/demo/session", "Origin", "http://127.0.0.1:7766"); resp.StatusCode != 404 {
		t.Fatalf("bootstrap without --demo: %d", resp.StatusCode)
	}

	opened := 0
	const key = "k3y"
	on := web.Demo(web.DemoOptions{MaxSessions: 2, Key: key, OpenSession: func(context.Context) (any, error) {
		opened++
		return map[string]string{"sessionId": "ses_x", "sessionToken": "ses_x.y"}, nil
	}})
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
	}{
		{"no Origin (curl)", []string{web.DemoKeyHeader, key}, 403},
		{"another origin", []string{"Origin", "http://evil.test", web.DemoKeyHeader, key}, 403},
		{"cross-site fetch metadata", []string{"Origin", "http://127.0.0.1:7766", "Sec-Fetch-Site", "cross-site", web.DemoKeyHeader, key}, 403},
		// Without the key a local process that forges the headers gets
		// nothing, and does not use up the cap.
		{"no key", []string{"Origin", "http://127.0.0.1:7766", "Sec-Fetch-Site", "same-origin"}, 401},
		{"wrong key", []string{"Origin", "http://127.0.0.1:7766", web.DemoKeyHeader, "k3z"}, 401},
		{"same origin", []string{"Origin", "http://127.0.0.1:7766", "Sec-Fetch-Site", "same-origin", web.DemoKeyHeader, key}, 200},
		{"same origin again", []string{"Origin", "http://127.0.0.1:7766", web.DemoKeyHeader, key}, 200},
		{"over the cap", []string{"Origin", "http://127.0.0.1:7766", web.DemoKeyHeader, key}, 429},
	} {
		resp := get(t, on, "POST", "/demo/session", tc.hdr...)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
	if opened != 2 {
		t.Fatalf("opened %d sessions, want 2", opened)
	}
	if resp := get(t, on, "GET", "/demo/session", "Origin", "http://127.0.0.1:7766"); resp.StatusCode != 405 {
		t.Fatalf("GET bootstrap: %d", resp.StatusCode)
	}
	if resp := get(t, on, "GET", "/demo/?key="+key); resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("the page whose URL carries the key has Referrer-Policy %q, want no-referrer", resp.Header.Get("Referrer-Policy"))
	}
	closed := web.Demo(web.DemoOptions{OpenSession: func(context.Context) (any, error) { return nil, nil }})
	if resp := get(t, closed, "POST", "/demo/session", "Origin", "http://127.0.0.1:7766", web.DemoKeyHeader, ""); resp.StatusCode != 401 {
		t.Fatalf("a demo without a key must refuse every mint: %d", resp.StatusCode)
	}
}
