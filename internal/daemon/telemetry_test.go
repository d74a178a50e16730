package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/internal/sse"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestTelemetryCarriesNoSecrets drives real calls through the HTTP API —
// a call whose arguments and result hold secret-looking values, a call an
// approval lets through, a model run with a priced model whose key comes
// from the environment, a composed panel and a refused one in a user's
// tab — captures every byte the telemetry webhook receives, and fails if
// any argument, result, prompt, token, key, user, session, run, approval
// or invocation id is in it. It also checks every kind arrived with its
// fields, and that the Go callback saw the same events.
func TestTelemetryCarriesNoSecrets(t *testing.T) {
	const (
		apiKey    = "sk-live-TELEMETRYKEY-0001"
		argSecret = "argument-value-hunter2"
		resSecret = "result-value-correcthorse"
		hitlArg   = "approval-argument-swordfish"
		prompt    = "prompt text: please read the private ledger"
		modelArg  = "model-argument-opensesame"
		userID    = "user:u-4242-private"
		panelText = "panel-state-private-title"
	)
	t.Setenv("TELEMETRY_TEST_API_KEY", apiKey) // the model's key, as serve reads it

	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("webhook got %s %s", r.Method, r.Header.Get("Content-Type"))
		}
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	defer hook.Close()
	var callbackSaw []telemetry.Event // read after Close, written by the sink's goroutine only

	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := modeltest.NewOpenAI(t)
	token := daemon.NewSecret()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: token,
		Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL(),
			APIKeyEnv: "TELEMETRY_TEST_API_KEY", Price: &model.Price{InputPerMTok: 3, OutputPerMTok: 15}}},
		Telemetry: daemon.TelemetryOptions{
			Callback: func(e telemetry.Event) { callbackSaw = append(callbackSaw, e) },
			Webhook:  &telemetry.WebhookOptions{URL: hook.URL},
		}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			d.Close()
		}
	}()
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	if err := d.EnablePanels(ctx); err != nil {
		t.Fatal(err)
	}
	read := switchboard.Tool{Name: "vault.read", Description: "Read a secret.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	if err := d.RegisterFunc(ctx, read, func(_ context.Context, in json.RawMessage) (any, error) {
		return map[string]any{"echo": json.RawMessage(in), "secret": resSecret}, nil
	}); err != nil {
		t.Fatal(err)
	}
	del := switchboard.Tool{Name: "vault.delete", Description: "Delete a secret.", Class: switchboard.ClassMutate,
		Approval: switchboard.ApprovalHITL, InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}
	if err := d.RegisterFunc(ctx, del, func(context.Context, json.RawMessage) (any, error) {
		return map[string]string{"deleted": resSecret}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var never []string // every value that must not reach the sink
	never = append(never, apiKey, argSecret, resSecret, hitlArg, prompt, modelArg, userID, "u-4242-private", panelText, token)

	// A plain call with secret arguments and a secret result.
	code, call := do(t, srv, token, "POST", "/api/v1/tools/vault.read/call", map[string]any{"input": map[string]any{"text": argSecret}})
	if code != 200 {
		t.Fatalf("call: %d %v", code, call)
	}
	never = append(never, call["invocationId"].(string))

	// An agent's call that waits for the operator's approval.
	_, tok := do(t, srv, token, "POST", "/api/v1/tokens", map[string]any{"agent": "bot"})
	agentTok := tok["token"].(string)
	never = append(never, agentTok)
	code, call = do(t, srv, agentTok, "POST", "/api/v1/tools/vault.delete/call", map[string]any{"input": map[string]any{"id": hitlArg}, "async": true})
	if code != 202 || call["status"] != "awaiting_approval" {
		t.Fatalf("agent call: %d %v", code, call)
	}
	never = append(never, call["invocationId"].(string))
	_, list := do(t, srv, token, "GET", "/api/v1/approvals?status=pending", nil)
	items, _ := list["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("pending approvals: %v", list)
	}
	aprID, _ := items[0].(map[string]any)["approvalId"].(string)
	if aprID == "" {
		aprID, _ = items[0].(map[string]any)["id"].(string)
	}
	if aprID == "" {
		t.Fatalf("pending approval without an id: %v", items[0])
	}
	never = append(never, aprID)
	if code, body := do(t, srv, token, "POST", "/api/v1/approvals/"+aprID, map[string]any{"decision": "approve", "reason": "ok " + hitlArg}); code != 200 {
		t.Fatalf("approve: %d %v", code, body)
	}

	// A model run: the model calls the tool with a secret argument.
	m.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "vault_read", Args: `{"text":"` + modelArg + `"}`}}, InputTokens: 120, OutputTokens: 30},
		modeltest.Turn{Text: "Done.", InputTokens: 200, OutputTokens: 5})
	admin := client.New(srv.URL, token, nil)
	info, err := admin.StartRun(ctx, client.RunRequest{Input: prompt})
	if err != nil {
		t.Fatal(err)
	}
	never = append(never, info.RunID)
	if err := admin.RunEvents(ctx, info.RunID, "", func(string, agui.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if auth := m.Headers()[0].Get("Authorization"); auth != "Bearer "+apiKey {
		t.Fatalf("the scripted model was not called with the key from the environment: %q", auth)
	}

	// A user's tab: an agent-style compose that opens, and one refused.
	_, ses := do(t, srv, token, "POST", "/api/v1/sessions", map[string]any{"principal": userID})
	sid, _ := ses["sessionId"].(string)
	if sid == "" {
		t.Fatalf("open session: %v", ses)
	}
	never = append(never, sid, ses["sessionToken"].(string))
	tabReq, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/sessions/"+sid+"/events", nil)
	tabReq.Header.Set("Authorization", "Bearer "+ses["sessionToken"].(string))
	tab, err := http.DefaultClient.Do(tabReq)
	if err != nil || tab.StatusCode != 200 {
		t.Fatalf("connect the tab: %v %v", tab, err)
	}
	defer tab.Body.Close()
	if _, err := sse.NewReader(tab.Body).Next(); err != nil { // connected
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, tab.Body) }()
	spec := `{"v": 1, "root": "body", "sources": {"task": {"kind": "state", "path": "/task", "key": "id"}},
	 "state": {"task": {"id": "t-1", "title": "` + panelText + `"}},
	 "nodes": {"body": {"type": "panel-body", "props": {"title": "` + panelText + `"}, "children": ["form"]},
	  "form": {"type": "field-form", "props": {"bind": "task", "submit": "save", "fields": [{"path": "title", "label": "Title", "kind": "text"}]}}},
	 "actions": {"save": {"kind": "mutate", "source": "task", "op": "update"}}}`
	code, call = do(t, srv, token, "POST", "/api/v1/tools/panel.compose/call",
		map[string]any{"input": map[string]any{"spec": json.RawMessage(spec), "sessionId": sid, "title": panelText}})
	if code != 200 {
		t.Fatalf("compose: %d %v", code, call)
	}
	never = append(never, call["invocationId"].(string))
	bad := `{"v": 1, "root": "missing", "nodes": {"body": {"type": "text", "props": {"text": "` + panelText + `"}}}}`
	code, call = do(t, srv, token, "POST", "/api/v1/tools/panel.compose/call",
		map[string]any{"input": map[string]any{"spec": json.RawMessage(bad), "sessionId": sid}})
	if code < 400 {
		t.Fatalf("a bad spec composed: %d %v", code, call)
	}

	d.Close() // delivers what is queued
	closed = true

	mu.Lock()
	all := bytes.Join(bodies, nil)
	mu.Unlock()
	for _, s := range never {
		if s != "" && bytes.Contains(all, []byte(s)) {
			t.Errorf("the telemetry stream holds %q:\n%s", s, all)
		}
	}
	var events []telemetry.Event
	sc := bufio.NewScanner(bytes.NewReader(all))
	for sc.Scan() {
		var e telemetry.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a line that is not an event: %s", sc.Bytes())
		}
		var raw map[string]any
		_ = json.Unmarshal(sc.Bytes(), &raw)
		for k := range raw {
			if !allowedTelemetryField[k] {
				t.Errorf("event field %q is not one of the frozen fields: %s", k, sc.Bytes())
			}
		}
		events = append(events, e)
	}
	if len(events) != len(callbackSaw) {
		t.Errorf("the webhook got %d events, the callback %d", len(events), len(callbackSaw))
	}
	has := func(what string, ok func(telemetry.Event) bool) {
		t.Helper()
		for _, e := range events {
			if ok(e) {
				return
			}
		}
		t.Errorf("no %s event among:\n%s", what, all)
	}
	has("tool.outcome for the plain call", func(e telemetry.Event) bool {
		return e.V == 1 && e.Kind == "tool.outcome" && e.Tool == "vault.read" && e.Outcome == "succeeded" &&
			e.Class == "read" && e.Transport == "go" && e.Surface == "api" && e.Ts != ""
	})
	has("tool.outcome for the approved call", func(e telemetry.Event) bool {
		return e.Kind == "tool.outcome" && e.Tool == "vault.delete" && e.Outcome == "succeeded" && e.Class == "mutate"
	})
	has("approval.decided", func(e telemetry.Event) bool {
		return e.Kind == "approval.decided" && e.Tool == "vault.delete" && e.Decision == "approved"
	})
	has("model.usage with cost", func(e telemetry.Event) bool {
		return e.Kind == "model.usage" && e.Model == "scripted" && e.InputTokens == 120 && e.OutputTokens == 30 &&
			e.CostUSD != nil && *e.CostUSD > 0
	})
	has("panel.composed opened", func(e telemetry.Event) bool {
		return e.Kind == "panel.composed" && e.Outcome == "opened" && e.Nodes == 2
	})
	has("panel.composed refused", func(e telemetry.Event) bool {
		return e.Kind == "panel.composed" && e.Outcome == "refused" && strings.HasPrefix(e.Code, "SPEC_") && len(e.Issues) > 0
	})
}

// allowedTelemetryField is every JSON field an event may have: a field
// added to the event shape must be added here (and to docs/operations.md)
// on purpose.
var allowedTelemetryField = map[string]bool{
	"v": true, "kind": true, "ts": true, "tool": true, "surface": true, "class": true, "transport": true,
	"outcome": true, "code": true, "durationMs": true, "decision": true, "channel": true, "waitMs": true,
	"nodes": true, "issues": true, "model": true, "inputTokens": true, "outputTokens": true,
	"cachedInputTokens": true, "costUsd": true,
}
