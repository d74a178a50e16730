package preview_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/preview"
)

func get(t *testing.T, h http.Handler, method, url string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, url, nil))
	return rec.Result()
}

// A preview is served with the strict headers, sets no cookie, and is
// addressed by its code; unknown ids and other methods get nothing.
func TestServe(t *testing.T) {
	t.Parallel()
	s := preview.New("http://127.0.0.2:7767/", &preview.Options{FrameAncestors: []string{"http://127.0.0.1:7766"}})
	u := s.Put("<b>hi</b><script>1</script>")
	if !strings.HasPrefix(u, "http://127.0.0.2:7767/p/") || s.Put("<b>hi</b><script>1</script>") != u || s.Put("other") == u {
		t.Fatalf("addresses: %s", u)
	}
	if other := preview.New("http://127.0.0.2:7767", nil).Put("<b>hi</b><script>1</script>"); other == u {
		t.Fatal("another server's key gives the same address: guessable")
	}
	path := strings.TrimPrefix(u, "http://127.0.0.2:7767")
	resp := get(t, s.Handler(), "GET", path)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<b>hi</b><script>1</script>") || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'unsafe-inline'", "connect-src 'none'", "form-action 'none'", "frame-ancestors http://127.0.0.1:7766;", "sandbox allow-scripts"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "allow-same-origin") {
		t.Error("the sandbox allows the same origin")
	}
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "Content-Type": "text/html; charset=utf-8"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q", h, got)
		}
	}
	if r := get(t, s.Handler(), "GET", "/p/0123456789abcdef0123456789abcdef"); r.StatusCode != 404 || r.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("unknown id: %d", r.StatusCode)
	}
	if r := get(t, s.Handler(), "POST", path); r.StatusCode != 405 {
		t.Errorf("POST: %d", r.StatusCode)
	}
	if r := get(t, s.Handler(), "GET", "/api/v1/tools"); r.StatusCode != 404 {
		t.Errorf("anything else: %d", r.StatusCode)
	}
}

// The store is bounded: the oldest documents go first.
func TestBounded(t *testing.T) {
	t.Parallel()
	s := preview.New("http://p", &preview.Options{MaxDocs: 2})
	first := s.Put("1")
	s.Put("2")
	last := s.Put("3")
	if r := get(t, s.Handler(), "GET", strings.TrimPrefix(first, "http://p")); r.StatusCode != 404 {
		t.Errorf("the oldest is kept: %d", r.StatusCode)
	}
	if r := get(t, s.Handler(), "GET", strings.TrimPrefix(last, "http://p")); r.StatusCode != 200 {
		t.Errorf("the newest is gone: %d", r.StatusCode)
	}
	big := preview.New("http://p", &preview.Options{MaxBytes: 1000})
	a := big.Put(strings.Repeat("a", 600))
	big.Put(strings.Repeat("b", 600))
	if r := get(t, big.Handler(), "GET", strings.TrimPrefix(a, "http://p")); r.StatusCode != 404 {
		t.Errorf("over the byte bound, the oldest is kept: %d", r.StatusCode)
	}
}
