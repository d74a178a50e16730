package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestConsoleServesPageWithPolicy(t *testing.T) {
	h := Console()
	for path, want := range map[string]int{"/": 200, "/console.js": 200, "/console.css": 200, "/nope": 404, "/sdk/x": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
		if want == 200 && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: no CSP", path)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
	if js := consoleJS(t); strings.Contains(js, ".innerHTML") || strings.Contains(js, "insertAdjacentHTML") || strings.Contains(js, "outerHTML") {
		t.Error("the console must not use innerHTML")
	}
}

func consoleJS(t *testing.T) string {
	b, err := consoleFiles.ReadFile("console/console.js")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
