package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

const loginHost = "https://app.example/sign-in"

// chanWriter is a stderr that hands each write to the test as it happens.
type chanWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{}
}

func (w *chanWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.ch <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *chanWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func apiCall(t *testing.T, base, tok, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

// switchboard login signs a person in through the host app (the test
// plays the browser and the host's backend), keeps the sign-in 0600 in
// the data root, and the commands that follow act as that person: alice
// lists and approves her approval, never bob's; sees her grant; an
// operator's command answers FORBIDDEN; an expired access token is
// refreshed with the rotated refresh token saved; logout revokes the
// grant and removes the file.
func TestCLILogin(t *testing.T) {
	t.Setenv("SWITCHBOARD_TOKEN", "")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: testToken,
		OAuth: daemon.OAuthOptions{Resource: base + "/mcp", LoginURL: loginHost}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(func() { srv.Close(); d.Close() })
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "notes.delete", Description: "Delete a note.", Class: switchboard.ClassMutate,
		Approval: switchboard.ApprovalHITL, InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)},
		func(context.Context, json.RawMessage) (any, error) { return map[string]bool{"deleted": true}, nil })
	if err != nil {
		t.Fatal(err)
	}
	// An agent acting for each of alice and bob asks to delete a note.
	for _, u := range []string{"alice", "bob"} {
		code, tok := apiCall(t, base, testToken, "POST", "/api/v1/tokens", map[string]any{"agent": "bot-" + u, "user": "user:" + u})
		if code != http.StatusCreated {
			t.Fatalf("token for %s: %d %v", u, code, tok)
		}
		code, call := apiCall(t, base, tok["token"].(string), "POST", "/api/v1/tools/notes.delete/call", map[string]any{"input": map[string]any{"id": u}, "async": true})
		if code != http.StatusAccepted || call["status"] != "awaiting_approval" {
			t.Fatalf("%s's agent call: %d %v", u, code, call)
		}
	}
	_, out, _ := run(t, "--addr", base, "--token", testToken, "approvals", "list", "--agent", "agent:bot-bob", "--quiet")
	bobApproval := strings.TrimSpace(out)
	if bobApproval == "" {
		t.Fatal("no approval for bob")
	}

	data := t.TempDir()
	g := []string{"--addr", base, "--data", data}
	stderr := &chanWriter{ch: make(chan struct{}, 1)}
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append(g, "login", "--no-browser"), strings.NewReader(""), &stdout, stderr)
	}()
	authRe := regexp.MustCompile(`http://\S+/oauth/authorize\?\S+`)
	var authURL string
	for authURL == "" {
		select {
		case <-stderr.ch:
			authURL = authRe.FindString(stderr.String())
		case code := <-done:
			t.Fatalf("login ended before printing the URL: %d %s", code, stderr.String())
		}
	}
	au, _ := url.Parse(authURL)
	q := au.Query()
	redirect := q.Get("redirect_uri")
	if q.Get("client_id") != "switchboard-cli" || q.Get("scope") != "console" || q.Get("resource") != base+"/api/v1" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" ||
		!regexp.MustCompile(`^http://127\.0\.0\.1:\d+/callback$`).MatchString(redirect) {
		t.Fatalf("authorization URL: %s", authURL)
	}

	// The browser: authorize sends it to the host's sign-in page.
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), loginHost+"?") {
		t.Fatalf("authorize: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The host's backend vouches for alice.
	code, m := apiCall(t, base, testToken, "POST", "/api/v1/oauth/signins", map[string]string{"request": loc.Query().Get("request"), "user": "user:alice"})
	if code != http.StatusCreated {
		t.Fatalf("signins: %d %v", code, m)
	}
	// She allows the command line on the consent page.
	res, err = browser.Get(m["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	ticket := regexp.MustCompile(`name="ticket" value="([^"]+)"`).FindStringSubmatch(string(page))
	if res.StatusCode != http.StatusOK || ticket == nil || !strings.Contains(string(page), "switchboard command line") {
		t.Fatalf("consent page: %d %s", res.StatusCode, page)
	}
	res, err = browser.PostForm(base+"/oauth/consent", url.Values{"ticket": {ticket[1]}, "decision": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for res.StatusCode/100 == 3 && strings.HasPrefix(res.Header.Get("Location"), base) {
		if res, err = browser.Get(res.Header.Get("Location")); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if !strings.HasPrefix(res.Header.Get("Location"), redirect+"?") {
		t.Fatalf("after consent: %d %q, want %s", res.StatusCode, res.Header.Get("Location"), redirect)
	}
	// A callback with another state is not the answer; the real one is.
	forged, _ := url.Parse(res.Header.Get("Location"))
	fq := forged.Query()
	fq.Set("state", "forged")
	forged.RawQuery = fq.Encode()
	if res, err := http.Get(forged.String()); err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("callback with a forged state: %v %v", res, err)
	}
	res, err = http.Get(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "return to your terminal") {
		t.Fatalf("callback page: %d %s", res.StatusCode, page)
	}
	if code := <-done; code != 0 || !strings.Contains(stdout.String(), "signed in as user:alice") {
		t.Fatalf("login: %d %q %q", code, stdout.String(), stderr.String())
	}
	file := filepath.Join(data, LoginFile)
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("login file: %v %v", fi, err)
	}

	// As alice: her approval only, which she approves; bob's is not hers.
	code, out, errs := run(t, append(g, "approvals", "list")...)
	if code != 0 || !strings.Contains(out, "agent:bot-alice") || strings.Contains(out, "bot-bob") || !strings.Contains(errs, "1 approval") {
		t.Fatalf("approvals list as alice: %d\n%s%s", code, out, errs)
	}
	_, out, _ = run(t, append(g, "approvals", "list", "--quiet")...)
	if code, out, errs := run(t, append(g, "approvals", "approve", strings.TrimSpace(out))...); code != 0 {
		t.Fatalf("alice approves hers: %d %s %s", code, out, errs)
	}
	if code, _, errs := run(t, append(g, "approvals", "deny", bobApproval)...); code == 0 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("alice denies bob's: %d %s", code, errs)
	}
	code, out, errs = run(t, append(g, "activity")...)
	if code != 0 || !strings.Contains(out, "bot-alice") || strings.Contains(out, "bot-bob") {
		t.Fatalf("activity as alice: %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, append(g, "grant", "list")...)
	if code != 0 || !strings.Contains(out, "switchboard command line") || strings.Contains(out, "user:bob") {
		t.Fatalf("grant list as alice: %d\n%s%s", code, out, errs)
	}
	// The operator's command: the daemon's FORBIDDEN, and what to do.
	code, _, errs = run(t, append(g, "token", "list")...)
	if code != 1 || !strings.HasPrefix(errs, "error: FORBIDDEN: ") || !strings.Contains(errs, "signed in as user:alice") || strings.Count(errs, "\n") != 2 {
		t.Fatalf("token list as alice: %d %q", code, errs)
	}

	// An expired access token is refreshed, and the new refresh token is
	// saved (the old one is spent).
	var l login
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &l); err != nil || l.User != "user:alice" || l.Refresh == "" {
		t.Fatalf("login file: %s %v", b, err)
	}
	oldRefresh := l.Refresh
	l.Expiry = time.Now().Add(-time.Minute)
	if err := writeLogin(file, &l); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, append(g, "approvals", "list", "--status", "all")...); code != 0 || !strings.Contains(out, "bot-alice") {
		t.Fatalf("approvals list after expiry: %d %s %s", code, out, errs)
	}
	b, _ = os.ReadFile(file)
	_ = json.Unmarshal(b, &l)
	if l.Refresh == oldRefresh || !l.Expiry.After(time.Now()) {
		t.Fatalf("the refreshed sign-in was not saved: %s", b)
	}
	if code, _, errs := run(t, append(g, "grant", "list")...); code != 0 {
		t.Fatalf("after the refresh: %d %s", code, errs)
	}
	// Commands started together refresh once: a second use of the spent
	// refresh token would revoke the grant.
	_ = json.Unmarshal(b, &l)
	l.Expiry = time.Now().Add(-time.Minute)
	if err := writeLogin(file, &l); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Go(func() {
			var o, e bytes.Buffer
			codes[i] = Run(ctx, append(g, "grant", "list"), strings.NewReader(""), &o, &e)
		})
	}
	wg.Wait()
	if code, _, errs := run(t, append(g, "approvals", "list")...); code != 0 || codes[0]+codes[1]+codes[2]+codes[3] != 0 {
		t.Fatalf("commands refreshing together: %v, then %d %s", codes, code, errs)
	}

	// logout revokes the grant and forgets the sign-in.
	if code, out, errs := run(t, append(g, "logout")...); code != 0 || !strings.Contains(out, "signed out user:alice") || errs != "" {
		t.Fatalf("logout: %d %q %q", code, out, errs)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the login file is still there: %v", err)
	}
	_, out, _ = run(t, "--addr", base, "--token", testToken, "--json", "grant", "list", "--user", "user:alice")
	var grants []struct {
		ClientName string    `json:"clientName"`
		RevokedAt  time.Time `json:"revokedAt"`
	}
	if err := json.Unmarshal([]byte(out), &grants); err != nil || len(grants) != 1 || grants[0].ClientName != "switchboard command line" || grants[0].RevokedAt.IsZero() {
		t.Fatalf("alice's grant after logout, want revoked: %s %v", out, err)
	}
	if code, _, errs := run(t, append(g, "approvals", "list")...); code == 0 || !strings.Contains(errs, "UNAUTHORIZED") {
		t.Fatalf("after logout, with no admin token in the data root: %d %s", code, errs)
	}
}
