package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/web"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The demo's session route is gated by the per-start key serve prints
// (issue 14 item 6): a local process that forges Origin and Sec-Fetch-Site
// but never read serve's output mints nothing, over real HTTP.
func TestDemoSessionNeedsTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: daemon.NewSecret(), Demo: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)

	u, err := url.Parse(d.DemoURL(srv.URL))
	if err != nil || u.Path != "/demo/" || len(u.Query().Get("key")) < 32 {
		t.Fatalf("DemoURL = %q (%v), want /demo/?key=<at least 128 bits>", d.DemoURL(srv.URL), err)
	}
	key := u.Query().Get("key")

	mint := func(key string, send bool) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/demo/session", strings.NewReader("{}"))
		// Everything a browser on the demo page sends: a forging process
		// can send the same.
		req.Header.Set("Origin", srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Content-Type", "application/json")
		if send {
			req.Header.Set(web.DemoKeyHeader, key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	code := func(body map[string]any) string {
		e, _ := body["error"].(map[string]any)
		s, _ := e["code"].(string)
		return s
	}
	for _, tc := range []struct {
		name string
		key  string
		send bool
	}{
		{"no key", "", false},
		{"empty key", "", true},
		{"wrong key", key[:len(key)-1] + "x", true},
		{"the key of another start", strings.Repeat("0", len(key)), true},
	} {
		status, body := mint(tc.key, tc.send)
		if status != http.StatusUnauthorized || code(body) != string(switchboard.CodeUnauthorized) {
			t.Errorf("%s: %d %v, want 401 UNAUTHORIZED", tc.name, status, body)
		}
	}
	status, body := mint(key, true)
	tok, _ := body["sessionToken"].(string)
	if status != http.StatusOK || !strings.HasPrefix(tok, "ses_") {
		t.Fatalf("with the key: %d %v, want a session", status, body)
	}
	// The token is a real session's.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/sessions/"+body["sessionId"].(string)+"/tools", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the minted token lists its own tools: %d", resp.StatusCode)
	}
}

// Without --demo there is no key and no URL to print.
func TestDemoOffHasNoURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: daemon.NewSecret()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if u := d.DemoURL("http://127.0.0.1:7766"); u != "" {
		t.Fatalf("DemoURL without the demo = %q", u)
	}
}
