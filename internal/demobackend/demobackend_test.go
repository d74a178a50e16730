package demobackend_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/assertion"
	"github.com/switchboardhq/switchboard/internal/demobackend"
	"github.com/switchboardhq/switchboard/sqlite"
)

// env is the backend with a daemon's signer over a real store: sign
// makes the assertion the daemon would send for a user's agent.
type env struct {
	h      http.Handler
	signer *assertion.Signer
	now    time.Time
}

const issuer = "http://127.0.0.1:7766"

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{now: time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)}
	now := func() time.Time { return e.now }
	if e.signer, err = assertion.New(st, assertion.Options{Issuer: issuer, Now: now}); err != nil {
		t.Fatal(err)
	}
	e.h = demobackend.New(&demobackend.Options{Issuer: issuer, Keys: e.signer.JWKS, Now: now})
	return e
}

// sign is an assertion for user's planner, meant for the test requests'
// origin (httptest's Host is example.com).
func (e *env) sign(t *testing.T, user, aud string) string {
	t.Helper()
	tok, err := e.signer.Sign(context.Background(), assertion.Call{
		Caller: switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: user},
		Tool:   "tasks.create", Invocation: "inv_1", Audience: aud})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func do(t *testing.T, h http.Handler, method, path, key, body string, assertionTok ...string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set("X-Api-Key", key)
	}
	for _, a := range assertionTok {
		r.Header.Set(assertion.Header, a)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

func TestTasksNeedAKeyAndKeepState(t *testing.T) {
	e := newEnv(t)
	h, a := e.h, e.sign(t, "user:alice", "http://example.com")
	p := demobackend.Prefix
	if code, body := do(t, h, "POST", p+"projects/apollo/tasks", "", `{"title":"x"}`); code != 401 || !strings.Contains(body, "TASKS_API_KEY") {
		t.Fatalf("no key: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"projects/nope/tasks", "k", `{"title":"x"}`, a); code != 404 || !strings.Contains(body, "apollo") {
		t.Fatalf("unknown project: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"projects/apollo/tasks", "k", `{"title":"Ship"}`, a); code != 201 || !strings.Contains(body, `"id":"t1"`) {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"tasks/t1/assignee", "k", `{"userId":"u7"}`, a); code != 200 || !strings.Contains(body, `"assignee":"u7"`) {
		t.Fatalf("assign: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"projects/apollo/tasks?status=open", "k", "", a); code != 200 || !strings.Contains(body, `"title":"Ship"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, body := do(t, h, "DELETE", p+"tasks/t1", "k", "", a); code != 200 || !strings.Contains(body, `"deleted":true`) {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"projects/apollo/tasks", "k", "", a); code != 200 || strings.Contains(body, "Ship") {
		t.Fatalf("list after delete: %d %s", code, body)
	}
}

func TestPetStoreAndTheRest(t *testing.T) {
	e := newEnv(t)
	h, a := e.h, e.sign(t, "user:alice", "http://example.com")
	p := demobackend.Prefix
	if code, body := do(t, h, "GET", p+"v3/pet/findByStatus?status=sold", "", ""); code != 200 || !strings.Contains(body, "whiskers") || strings.Contains(body, "doggie") {
		t.Fatalf("findByStatus: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"v3/pet/10", "", ""); code != 200 || !strings.Contains(body, `"name":"doggie"`) {
		t.Fatalf("get pet: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"v3/pet/99", "", ""); code != 404 {
		t.Fatalf("missing pet: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"invoices/inv-1001/send", "k", `{}`, a); code != 200 || !strings.Contains(body, "ap@apollo.example") {
		t.Fatalf("invoice: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"media", "k", `{"url":"javascript:alert(1)"}`, a); code != 400 {
		t.Fatalf("bad media url: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"nothing/here", "", ""); code != 404 || !strings.Contains(body, "no route") {
		t.Fatalf("unknown route: %d %s", code, body)
	}
}

// Each user's tasks are theirs: alice's agent cannot list, assign or
// delete bob's task, whatever id it names (it reads as not found).
func TestTasksArePerUser(t *testing.T) {
	e := newEnv(t)
	p := demobackend.Prefix
	alice, bob := e.sign(t, "user:alice", "http://example.com"), e.sign(t, "user:bob", "http://example.com")
	if code, body := do(t, e.h, "POST", p+"projects/apollo/tasks", "k", `{"title":"Bob's secret"}`, bob); code != 201 || !strings.Contains(body, `"owner":"user:bob"`) {
		t.Fatalf("bob creates: %d %s", code, body)
	}
	if code, body := do(t, e.h, "POST", p+"projects/apollo/tasks", "k", `{"title":"Alice's"}`, alice); code != 201 {
		t.Fatalf("alice creates: %d %s", code, body)
	}
	if code, body := do(t, e.h, "GET", p+"projects/apollo/tasks", "k", "", alice); code != 200 || strings.Contains(body, "secret") || !strings.Contains(body, "Alice's") {
		t.Fatalf("alice lists: %d %s", code, body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", p + "tasks/t1/assignee", `{"userId":"alice"}`},
		{"DELETE", p + "tasks/t1", ""},
	} {
		if code, body := do(t, e.h, c.method, c.path, "k", c.body, alice); code != 404 {
			t.Errorf("alice %s bob's task: %d %s", c.method, code, body)
		}
	}
	if code, body := do(t, e.h, "GET", p+"projects/apollo/tasks", "k", "", bob); code != 200 || !strings.Contains(body, "secret") || strings.Contains(body, "Alice's") {
		t.Fatalf("bob lists after alice's attempts: %d %s", code, body)
	}
}

// A missing, forged, expired or wrong-audience assertion is 401, and the
// call does nothing.
func TestAssertionRefused(t *testing.T) {
	e := newEnv(t)
	p := demobackend.Prefix
	good := e.sign(t, "user:alice", "http://example.com")
	wrongAud := e.sign(t, "user:alice", "http://other.example")
	var h map[string]any
	if err := json.Unmarshal(mustB64(t, strings.Split(good, ".")[0]), &h); err != nil {
		t.Fatal(err)
	}
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: forger, KeyID: h["kid"].(string)}}, nil)
	sig, _ := fs.Sign(mustB64(t, strings.Split(good, ".")[1]))
	forged, _ := sig.CompactSerialize()
	refused := map[string]string{"missing": "", "forged": forged, "wrong audience": wrongAud}
	for name, tok := range refused {
		var code int
		var body string
		if tok == "" {
			code, body = do(t, e.h, "POST", p+"projects/apollo/tasks", "k", `{"title":"x"}`)
		} else {
			code, body = do(t, e.h, "POST", p+"projects/apollo/tasks", "k", `{"title":"x"}`, tok)
		}
		if code != 401 || !strings.Contains(body, "Switchboard-Assertion") {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	e.now = e.now.Add(2 * time.Minute)
	if code, body := do(t, e.h, "POST", p+"projects/apollo/tasks", "k", `{"title":"x"}`, good); code != 401 || !strings.Contains(body, "expired") {
		t.Errorf("expired: %d %s", code, body)
	}
	fresh := e.sign(t, "user:alice", "http://example.com")
	if code, body := do(t, e.h, "GET", p+"projects/apollo/tasks", "k", "", fresh); code != 200 || strings.Contains(body, `"x"`) {
		t.Errorf("a refused call created a task: %d %s", code, body)
	}
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
