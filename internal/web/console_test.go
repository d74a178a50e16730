package web

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestConsoleServesPageWithPolicy(t *testing.T) {
	h := Console()
	want := map[string]int{"/": 200, "/console/": 200, "/console": 302, "/nope": 404, "/sdk/x": 404, "/console/console.js": 404}
	types := map[string]string{"/": "text/html; charset=utf-8", "/console/": "text/html; charset=utf-8", "/favicon.svg": "image/svg+xml", "/console.css": "text/css; charset=utf-8"}
	for _, name := range consoleNames(t) {
		want["/"+name] = 200
		if strings.HasSuffix(name, ".js") {
			types["/"+name] = "text/javascript; charset=utf-8"
		}
	}
	for path, code := range want {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != code {
			t.Errorf("%s: %d, want %d", path, rec.Code, code)
		}
		if code != 200 {
			continue
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "style-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if ct, ok := types[path]; ok && rec.Header().Get("Content-Type") != ct {
			t.Errorf("%s: Content-Type %q, want %q", path, rec.Header().Get("Content-Type"), ct)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

// No module builds markup from strings, and the page has no inline script
// or style for the CSP to refuse.
func TestConsoleBuildsDOMOnly(t *testing.T) {
	for _, name := range consoleNames(t) {
		b, _ := consoleFiles.ReadFile("console/" + name)
		s := string(b)
		switch {
		case strings.HasSuffix(name, ".js"):
			for _, bad := range []string{".innerHTML", "insertAdjacentHTML", "outerHTML", "document.write", "eval("} {
				if strings.Contains(s, bad) {
					t.Errorf("%s uses %s", name, bad)
				}
			}
		case strings.HasSuffix(name, ".html"):
			for _, bad := range []string{"<script>", " style=", "<style", "onclick=", "onload=", "onsubmit=", "onerror=", "javascript:"} {
				if strings.Contains(s, bad) {
					t.Errorf("%s has inline %q, which the CSP refuses", name, bad)
				}
			}
		}
	}
}

func consoleNames(t *testing.T) []string {
	t.Helper()
	entries, err := fs.ReadDir(consoleFiles, "console")
	if err != nil || len(entries) < 5 {
		t.Fatalf("console files: %v (%d)", err, len(entries))
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
