package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

const agentsToken = "agents-test-admin-token"

// agentsDaemon runs a daemon over in-memory SQLite.
func agentsDaemon(t *testing.T, opts daemon.Options) (*daemon.Daemon, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.AdminToken = st, agentsToken
	d, err := daemon.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		d.Close()
		st.Close()
	})
	return d, srv
}

// do sends a request with token and decodes the JSON answer.
func do(t *testing.T, srv *httptest.Server, tok, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.URL+path, rd)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// Every /agents route and code: register (with its heartbeat interval),
// heartbeat, get, list with filters, interrupt then 409, unknown 404
// AGENT_NOT_FOUND, bad input 400, and who may see what.
func TestAgentRoutes(t *testing.T) {
	t.Parallel()
	_, srv := agentsDaemon(t, daemon.Options{})
	st, reg := do(t, srv, agentsToken, "POST", "/api/v1/agents", map[string]any{"kind": "voice", "label": "Voice", "task": "listening"})
	if st != http.StatusCreated || reg["heartbeatIntervalMs"].(float64) != 15000 || reg["status"] != "idle" || reg["kind"] != "voice" || reg["transport"] != "host" {
		t.Fatalf("register: %d %v", st, reg)
	}
	id := reg["id"].(string)
	for _, bad := range []map[string]any{{"kind": "robot", "label": "x"}, {"kind": "voice"}, {"kind": "voice", "label": "x", "status": "done"}, {"kind": "voice", "label": "x", "extra": 1}} {
		if st, m := do(t, srv, agentsToken, "POST", "/api/v1/agents", bad); st != http.StatusBadRequest || errCode(m) != "INVALID_INPUT" {
			t.Errorf("register %v: %d %v", bad, st, m)
		}
	}
	if st, m := do(t, srv, agentsToken, "POST", "/api/v1/agents/"+id+"/heartbeat", nil); st != http.StatusOK || m["id"] != id || m["heartbeatIntervalMs"] == nil {
		t.Fatalf("heartbeat: %d %v", st, m)
	}
	if st, m := do(t, srv, agentsToken, "GET", "/api/v1/agents/"+id, nil); st != http.StatusOK || m["label"] != "Voice" || m["task"] != "listening" {
		t.Fatalf("get: %d %v", st, m)
	}
	if st, m := do(t, srv, agentsToken, "GET", "/api/v1/agents?kind=voice&status=idle", nil); st != http.StatusOK || len(m["items"].([]any)) != 1 {
		t.Fatalf("list: %d %v", st, m)
	}
	if _, m := do(t, srv, agentsToken, "GET", "/api/v1/agents?kind=chat", nil); len(m["items"].([]any)) != 0 {
		t.Fatalf("list kind=chat: %v", m)
	}
	for _, q := range []string{"kind=robot", "status=asleep", "active=maybe"} {
		if st, m := do(t, srv, agentsToken, "GET", "/api/v1/agents?"+q, nil); st != http.StatusBadRequest || errCode(m) != "INVALID_INPUT" {
			t.Errorf("list ?%s: %d %v", q, st, m)
		}
	}
	for _, p := range []string{"GET /api/v1/agents/agt_nope", "POST /api/v1/agents/agt_nope/heartbeat", "POST /api/v1/agents/agt_nope/interrupt"} {
		method, path, _ := bytes.Cut([]byte(p), []byte(" "))
		if st, m := do(t, srv, agentsToken, string(method), string(path), nil); st != http.StatusNotFound || errCode(m) != "AGENT_NOT_FOUND" {
			t.Errorf("%s: %d %v", p, st, m)
		}
	}
	if st, m := do(t, srv, "", "GET", "/api/v1/agents", nil); st != http.StatusUnauthorized || errCode(m) != "UNAUTHORIZED" {
		t.Fatalf("no token: %d %v", st, m)
	}

	// An agent token sees itself only (no agents.list in its scope).
	_, tok := do(t, srv, agentsToken, "POST", "/api/v1/tokens", map[string]any{"agent": "claude", "allow": []string{"tasks.*"}})
	agentTok := tok["token"].(string)
	st, mine := do(t, srv, agentTok, "POST", "/api/v1/agents", map[string]any{"kind": "background", "label": "Claude"})
	if st != http.StatusCreated || mine["principal"] != "agent:claude" {
		t.Fatalf("agent registers: %d %v", st, mine)
	}
	if _, m := do(t, srv, agentTok, "GET", "/api/v1/agents", nil); len(m["items"].([]any)) != 1 {
		t.Fatalf("the agent lists %v, want itself only", m)
	}
	if st, m := do(t, srv, agentTok, "GET", "/api/v1/agents/"+id, nil); st != http.StatusNotFound || errCode(m) != "AGENT_NOT_FOUND" {
		t.Fatalf("the agent reads another: %d %v", st, m)
	}

	// A tab of the daemon's user sees and may stop the user's agents.
	_, ses := do(t, srv, agentsToken, "POST", "/api/v1/sessions", map[string]any{})
	tabTok := ses["sessionToken"].(string)
	if _, m := do(t, srv, tabTok, "GET", "/api/v1/agents", nil); len(m["items"].([]any)) != 2 {
		t.Fatalf("the tab lists %v, want both", m)
	}
	if st, m := do(t, srv, tabTok, "POST", "/api/v1/agents/"+id+"/interrupt", nil); st != http.StatusOK || m["status"] != "cancelled" {
		t.Fatalf("interrupt: %d %v", st, m)
	}
	if st, m := do(t, srv, agentsToken, "POST", "/api/v1/agents/"+id+"/interrupt", nil); st != http.StatusConflict || errCode(m) != "CONFLICT" {
		t.Fatalf("interrupt again: %d %v", st, m)
	}
	if st, m := do(t, srv, agentsToken, "GET", "/api/v1/agents?active=true", nil); st != http.StatusOK || len(m["items"].([]any)) != 1 {
		t.Fatalf("active: %v", m)
	}
}
