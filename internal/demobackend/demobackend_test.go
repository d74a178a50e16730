package demobackend_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/demobackend"
)

func do(t *testing.T, h http.Handler, method, path, key, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set("X-Api-Key", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

func TestTasksNeedAKeyAndKeepState(t *testing.T) {
	h := demobackend.New()
	p := demobackend.Prefix
	if code, body := do(t, h, "POST", p+"projects/apollo/tasks", "", `{"title":"x"}`); code != 401 || !strings.Contains(body, "TASKS_API_KEY") {
		t.Fatalf("no key: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"projects/nope/tasks", "k", `{"title":"x"}`); code != 404 || !strings.Contains(body, "apollo") {
		t.Fatalf("unknown project: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"projects/apollo/tasks", "k", `{"title":"Ship"}`); code != 201 || !strings.Contains(body, `"id":"t1"`) {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"tasks/t1/assignee", "k", `{"userId":"u7"}`); code != 200 || !strings.Contains(body, `"assignee":"u7"`) {
		t.Fatalf("assign: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"projects/apollo/tasks?status=open", "k", ""); code != 200 || !strings.Contains(body, `"title":"Ship"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, body := do(t, h, "DELETE", p+"tasks/t1", "k", ""); code != 200 || !strings.Contains(body, `"deleted":true`) {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"projects/apollo/tasks", "k", ""); code != 200 || strings.Contains(body, "Ship") {
		t.Fatalf("list after delete: %d %s", code, body)
	}
}

func TestPetStoreAndTheRest(t *testing.T) {
	h := demobackend.New()
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
	if code, body := do(t, h, "POST", p+"invoices/inv-1001/send", "k", `{}`); code != 200 || !strings.Contains(body, "ap@apollo.example") {
		t.Fatalf("invoice: %d %s", code, body)
	}
	if code, body := do(t, h, "POST", p+"media", "k", `{"url":"javascript:alert(1)"}`); code != 400 {
		t.Fatalf("bad media url: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", p+"nothing/here", "", ""); code != 404 || !strings.Contains(body, "no route") {
		t.Fatalf("unknown route: %d %s", code, body)
	}
}
