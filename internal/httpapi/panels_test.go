package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/sqlite"
)

// notePanel is a host panel over its own state: no adapter needed.
func notePanel(t *testing.T) panel.Def {
	t.Helper()
	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.BodyWith(panelspec.BodyProps{Title: "Note"}, b.FormSubmit("note", "keep",
		panelspec.TextField("title", "Title").Required(), panelspec.NumberField("stars", "Stars").Range(0, 5)))
	b.Source("note", panelspec.StateSource("/note"))
	b.State("note", map[string]any{"title": "Draft", "stars": 1})
	b.Action("keep", panelspec.Mutate("note", panelspec.OpUpdate))
	spec, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return panel.Def{ID: "note", Title: "Note", Description: "A note kept in the panel.", Spec: spec}
}

func TestPanelRoutes(t *testing.T) {
	t.Parallel()
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
	sm, err := session.New(session.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sm.Shutdown)
	b := broker.New(broker.Options{Store: st, Registry: reg, Browser: sm})
	svc := panel.New(panel.Options{Caller: b, Tabs: sm, Tools: reg})
	t.Cleanup(svc.Close)
	if err := svc.Register(notePanel(t)); err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: token, Broker: b, Sessions: sm, Panels: svc})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	tab, err := sm.Create(ctx, "user:7")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sm.Attach(ctx, tab.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	other, _ := sm.Create(ctx, "user:8")

	req := func(method, path, bearer, body string) (int, map[string]any) {
		t.Helper()
		r, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	base := "/api/v1/sessions/" + tab.SessionID + "/panels"

	if code, _ := req("GET", base, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := req("GET", base, other.SessionToken, ""); code != http.StatusUnauthorized {
		t.Fatalf("another tab's token: %d", code)
	}
	if code, body := req("GET", base, tab.SessionToken, ""); code != 200 || len(body["instances"].([]any)) != 0 {
		t.Fatalf("list: %d %v", code, body)
	}
	if code, body := req("POST", base, tab.SessionToken, `{"panel": "nope"}`); code != 404 {
		t.Fatalf("open unknown: %d %v", code, body)
	}
	code, snap := req("POST", base, tab.SessionToken, `{"panel": "note"}`)
	if code != 201 || snap["origin"] != "host" || snap["values"].(map[string]any)["note"].(map[string]any)["title"] != "Draft" {
		t.Fatalf("open: %d %v", code, snap)
	}
	inst := base + "/" + snap["instanceId"].(string)

	code, res := req("PUT", inst+"/values", tab.SessionToken, `{"values": {"title": "Kept", "stars": "many", "color": "red"}}`)
	if code != 200 || len(res["applied"].([]any)) != 1 || len(res["errors"].([]any)) != 2 {
		t.Fatalf("edit: %d %v", code, res)
	}
	if code, _ := req("GET", inst, token, ""); code != 200 {
		t.Fatalf("the admin reads an instance: %d", code)
	}
	if code, _ := req("GET", "/api/v1/sessions/"+other.SessionID+"/panels/"+snap["instanceId"].(string), token, ""); code != 404 {
		t.Fatalf("an instance under the wrong session: %d", code)
	}
	code, res = req("POST", inst+"/actions/keep", tab.SessionToken, "")
	if code != 200 || res["status"] != panel.StatusOK {
		t.Fatalf("action: %d %v", code, res)
	}
	code, snap = req("GET", inst, tab.SessionToken, "")
	if code != 200 || snap["dirty"] != nil || !strings.Contains(mustJSON(t, snap["spec"]), `"title":"Kept"`) {
		t.Fatalf("after keep: %d %v", code, snap)
	}
	if code, res := req("POST", inst+"/actions/launch", tab.SessionToken, ""); code != 404 {
		t.Fatalf("unknown action: %d %v", code, res)
	}
	if code, _ := req("DELETE", inst, tab.SessionToken, ""); code != 204 {
		t.Fatalf("close: %d", code)
	}
	if code, _ := req("DELETE", inst, tab.SessionToken, ""); code != 404 {
		t.Fatalf("close twice: %d", code)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
