package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/internal/session"
)

var objectSchema = json.RawMessage(`{"type":"object"}`)

// agentOf returns the session of kind the admin sees (the newest).
func agentOf(t *testing.T, e *wsEnv, kind string) map[string]any {
	t.Helper()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if code, c := e.do(t, "GET", "/api/v1/agents?kind="+kind, wsToken, nil, &list); code != http.StatusOK || len(list.Items) == 0 {
		t.Fatalf("no %s agent: %d %s %v", kind, code, c, list.Items)
	}
	return list.Items[0]
}

// ledgerHas reports whether the ledger holds an entry of verb whose
// details match every key of want.
func ledgerHas(t *testing.T, e *wsEnv, verb string, want map[string]any) bool {
	t.Helper()
	var page struct {
		Items []switchboard.ActivityEntry `json:"items"`
	}
	if code, c := e.do(t, "GET", "/api/v1/activity?verb="+verb+"&limit=100", wsToken, nil, &page); code != http.StatusOK {
		t.Fatalf("activity: %d %s", code, c)
	}
	for _, it := range page.Items {
		var d map[string]any
		if json.Unmarshal(it.Details, &d) != nil {
			continue
		}
		ok := true
		for k, v := range want {
			if d[k] != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestInterruptExternalAgent: interrupting an external agent (an agent
// token over HTTP) reaches its work: a call it is running ends CANCELLED,
// a call waiting for approval has the approval cancelled (one
// approval.decide entry, attributed to the session) and ends CANCELLED,
// and the session ends cancelled; a second interrupt is CONFLICT.
func TestInterruptExternalAgent(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	started := make(chan struct{})
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "tasks.watch", Description: "Watch tasks until told to stop.", Class: switchboard.ClassRead, InputSchema: objectSchema},
		func(ctx context.Context, _ json.RawMessage) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 1)
	if err := e.d.RegisterFunc(ctx, switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) {
			ran <- struct{}{}
			return map[string]string{"id": "t1"}, nil
		}); err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if code, c := e.do(t, "POST", "/api/v1/tokens", wsToken, map[string]any{"agent": "planner", "allow": []string{"tasks.*"}}, &tok); code != http.StatusCreated {
		t.Fatalf("token: %d %s", code, c)
	}

	// A running call, and a call waiting for the user's approval.
	type answer struct {
		status int
		code   string
	}
	watched := make(chan answer, 1)
	go func() {
		status, code := e.do(t, "POST", "/api/v1/tools/tasks.watch/call", tok.Token, map[string]any{"input": map[string]any{}}, nil)
		watched <- answer{status, code}
	}()
	<-started
	var waiting switchboard.CallResponse
	if code, c := e.do(t, "POST", "/api/v1/tools/tasks.create/call", tok.Token, map[string]any{"input": map[string]any{}, "async": true}, &waiting); code != http.StatusAccepted || waiting.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("call needing approval: %d %s %+v", code, c, waiting)
	}
	ag := agentOf(t, e, "external")
	id := ag["id"].(string)
	if ag["status"] != "waiting_approval" || ag["transport"] != "http" {
		t.Fatalf("external session before the interrupt: %v", ag)
	}

	var out map[string]any
	if code, c := e.do(t, "POST", "/api/v1/agents/"+id+"/interrupt", wsToken, nil, &out); code != http.StatusOK || out["status"] != "cancelled" {
		t.Fatalf("interrupt: %d %s %v", code, c, out)
	}
	// The answer is definite: both calls have recorded their end.
	var inv switchboard.Invocation
	if code, c := e.do(t, "GET", "/api/v1/invocations/"+waiting.InvocationID, wsToken, nil, &inv); code != http.StatusOK ||
		inv.Status != switchboard.StatusCancelled || inv.Error == nil || inv.Error.Code != switchboard.CodeCancelled || inv.AgentID != id {
		t.Fatalf("waiting call after the interrupt: %d %s %+v", code, c, inv)
	}
	var aprs struct {
		Items []switchboard.ApprovalRequest `json:"items"`
	}
	if code, c := e.do(t, "GET", "/api/v1/approvals?status=all", wsToken, nil, &aprs); code != http.StatusOK || len(aprs.Items) != 1 ||
		aprs.Items[0].Status != switchboard.ApprovalCancelled || !strings.Contains(aprs.Items[0].Reason, "interrupted by user:admin") {
		t.Fatalf("approval after the interrupt: %d %s %+v", code, c, aprs.Items)
	}
	if !ledgerHas(t, e, "approval.decide", map[string]any{"decision": "cancelled", "agentId": id}) {
		t.Error("no approval.decide entry for the cancelled approval")
	}
	if w := <-watched; w.code != "CANCELLED" {
		t.Fatalf("running call after the interrupt: %d %s, want CANCELLED", w.status, w.code)
	}
	select {
	case <-ran:
		t.Fatal("the call waiting for approval ran")
	default:
	}
	if code, c := e.do(t, "POST", "/api/v1/agents/"+id+"/interrupt", wsToken, nil, nil); code != http.StatusConflict || c != "CONFLICT" {
		t.Fatalf("second interrupt: %d %s", code, c)
	}
	// A later call of the same agent starts a new session and runs.
	var later switchboard.CallResponse
	if code, c := e.do(t, "POST", "/api/v1/tools/tasks.create/call", tok.Token, map[string]any{"input": map[string]any{}, "async": true}, &later); code != http.StatusAccepted {
		t.Fatalf("later call: %d %s", code, c)
	}
	if now := agentOf(t, e, "external"); now["id"] == id || now["status"] != "waiting_approval" {
		t.Fatalf("the agent's next session: %v", now)
	}
}

// sseEvents reads an AG-UI SSE answer to its end.
func sseEvents(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" { // the AI SDK stream's end
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, ev)
	}
	return out
}

func postAGUI(t *testing.T, e *wsEnv, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/agui", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+wsToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestInterruptParkedAssistantRun: an AG-UI run that ends at an approval
// (RUN_FINISHED with the interrupt outcome) leaves its chat session
// waiting_approval, not done; interrupting it cancels the pending approval
// and the waiting call, the session ends cancelled, and a later resume of
// that interrupt gets CONFLICT saying it was cancelled.
func TestInterruptParkedAssistantRun(t *testing.T) {
	t.Parallel()
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "On it.", ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_create", Args: `{}`}}})
	e := newWorkspaceDaemonWith(t, daemon.Options{Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}}})
	ran := make(chan struct{}, 1)
	if err := e.d.RegisterFunc(context.Background(), switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) {
			ran <- struct{}{}
			return map[string]string{"id": "t1"}, nil
		}); err != nil {
		t.Fatal(err)
	}
	evs := sseEvents(t, postAGUI(t, e, `{"threadId":"chat-park","runId":"run-p1","messages":[{"id":"u1","role":"user","content":"create a task"}],"tools":[],"context":[]}`))
	last := evs[len(evs)-1]
	outcome, _ := last["outcome"].(map[string]any)
	if last["type"] != "RUN_FINISHED" || outcome["type"] != "interrupt" {
		t.Fatalf("run ended %v", last)
	}
	apr := outcome["interrupts"].([]any)[0].(map[string]any)["id"].(string)

	ag := agentOf(t, e, "chat")
	id := ag["id"].(string)
	if ag["status"] != "waiting_approval" || ag["runId"] != "run-p1" {
		t.Fatalf("the parked run's session: %v", ag)
	}
	var out map[string]any
	if code, c := e.do(t, "POST", "/api/v1/agents/"+id+"/interrupt", wsToken, nil, &out); code != http.StatusOK || out["status"] != "cancelled" {
		t.Fatalf("interrupt: %d %s %v", code, c, out)
	}
	var a switchboard.ApprovalRequest
	if code, c := e.do(t, "GET", "/api/v1/approvals/"+apr, wsToken, nil, &a); code != http.StatusOK || a.Status != switchboard.ApprovalCancelled || a.AgentID != id {
		t.Fatalf("approval after the interrupt: %d %s %+v", code, c, a)
	}
	var inv switchboard.Invocation
	if code, c := e.do(t, "GET", "/api/v1/invocations/"+a.InvocationID, wsToken, nil, &inv); code != http.StatusOK || inv.Status != switchboard.StatusCancelled {
		t.Fatalf("the waiting call: %d %s %+v", code, c, inv)
	}
	if !ledgerHas(t, e, "approval.decide", map[string]any{"decision": "cancelled", "approvalId": apr}) {
		t.Error("no approval.decide entry for the cancelled approval")
	}

	resp := postAGUI(t, e, `{"threadId":"chat-park","runId":"run-p2","messages":[],"tools":[],"context":[],
		"resume":[{"interruptId":"`+apr+`","status":"resolved","payload":{"approved":true}}]}`)
	defer resp.Body.Close()
	var env switchboard.ErrorEnvelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != http.StatusConflict || env.Error == nil ||
		!strings.Contains(env.Error.Message, "already cancelled") || !strings.Contains(env.Error.Message, "was cancelled while waiting for approval") {
		t.Fatalf("resume after the interrupt: %d %+v %v", resp.StatusCode, env.Error, err)
	}
	select {
	case <-ran:
		t.Fatal("the interrupted call ran")
	default:
	}
}

// TestParkedRunSessionEndsWhenAnswered: the session of a run parked at an
// approval ends done once the approval is decided elsewhere (the console).
func TestParkedRunSessionEndsWhenAnswered(t *testing.T) {
	t.Parallel()
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "On it.", ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_create", Args: `{}`}}})
	e := newWorkspaceDaemonWith(t, daemon.Options{Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}}})
	if err := e.d.RegisterFunc(context.Background(), switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "t1"}, nil }); err != nil {
		t.Fatal(err)
	}
	evs := sseEvents(t, postAGUI(t, e, `{"threadId":"chat-ans","runId":"run-a1","messages":[{"id":"u1","role":"user","content":"create a task"}],"tools":[],"context":[]}`))
	apr := evs[len(evs)-1]["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	if ag := agentOf(t, e, "chat"); ag["status"] != "waiting_approval" {
		t.Fatalf("parked: %v", ag)
	}
	if code, c := e.do(t, "POST", "/api/v1/approvals/"+apr, wsToken, map[string]any{"decision": "deny", "reason": "not now"}, nil); code != http.StatusOK {
		t.Fatalf("deny: %d %s", code, c)
	}
	if ag := agentOf(t, e, "chat"); ag["status"] != "done" || !strings.Contains(ag["reason"].(string), "answered") {
		t.Fatalf("after the decision: %v", ag)
	}

	// Parked again, then the run is cancelled over its own route: its
	// waiting call is cancelled, and so is the session.
	m.Push(modeltest.Turn{Text: "Again.", ToolCalls: []modeltest.Call{{ID: "c2", Name: "tasks_create", Args: `{}`}}})
	evs = sseEvents(t, postAGUI(t, e, `{"threadId":"chat-ans2","runId":"run-a2","messages":[{"id":"u1","role":"user","content":"create another"}],"tools":[],"context":[]}`))
	if out, _ := evs[len(evs)-1]["outcome"].(map[string]any); out["type"] != "interrupt" {
		t.Fatalf("second run ended %v", evs[len(evs)-1])
	}
	if code, c := e.do(t, "POST", "/api/v1/runs/run-a2/cancel", wsToken, nil, nil); code != http.StatusOK {
		t.Fatalf("cancel: %d %s", code, c)
	}
	if ag := agentOf(t, e, "chat"); ag["runId"] != "run-a2" || ag["status"] != "cancelled" || !strings.Contains(ag["reason"].(string), "cancelled") {
		t.Fatalf("after the run's cancel: %v", ag)
	}
}

// TestResumeUnderTheSameRunIDStartsWithRunStarted is CopilotKit's resume
// (it re-sends the interrupted run's own runId) through the whole daemon:
// deciding the approval ends the parked run's agent session, whose status
// event must not land in the resuming run's stream before its RUN_STARTED
// (@ag-ui/client refuses such a stream: "First event must be
// 'RUN_STARTED'"). The stream is one well-formed run, and the call runs.
func TestResumeUnderTheSameRunIDStartsWithRunStarted(t *testing.T) {
	t.Parallel()
	m := modeltest.NewOpenAI(t, modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_create", Args: `{}`}}}, modeltest.Turn{Text: "Created."})
	e := newWorkspaceDaemonWith(t, daemon.Options{Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}}})
	ran := make(chan struct{}, 2)
	if err := e.d.RegisterFunc(context.Background(), switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) {
			ran <- struct{}{}
			return map[string]string{"id": "t1"}, nil
		}); err != nil {
		t.Fatal(err)
	}
	evs := sseEvents(t, postAGUI(t, e, `{"threadId":"chat-same","runId":"run-same","messages":[{"id":"u1","role":"user","content":"create a task"}],"tools":[],"context":[]}`))
	apr := evs[len(evs)-1]["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	if ag := agentOf(t, e, "chat"); ag["status"] != "waiting_approval" {
		t.Fatalf("parked: %v", ag)
	}
	evs = sseEvents(t, postAGUI(t, e, `{"threadId":"chat-same","runId":"run-same","messages":[],"tools":[],"context":[],
		"resume":[{"interruptId":"`+apr+`","status":"resolved","payload":{"approved":true}}]}`))
	var types []string
	for _, ev := range evs {
		types = append(types, ev["type"].(string))
	}
	if len(types) == 0 || types[0] != "RUN_STARTED" || types[len(types)-1] != "RUN_FINISHED" || evs[len(evs)-1]["runId"] != "run-same" {
		t.Fatalf("the resumed run's stream: %v", types)
	}
	if n := strings.Count(strings.Join(types, ","), "RUN_STARTED"); n != 1 {
		t.Fatalf("%d RUN_STARTED in %v", n, types)
	}
	if len(ran) != 1 {
		t.Fatalf("the approved call ran %d times", len(ran))
	}
}

// TestInterruptReleasesLeases: a panel lease ends when its holding agent
// session ends — here by an interrupt — so another agent's edit goes
// through at once instead of meeting LEASE_HELD until the lease expires.
func TestInterruptReleasesLeases(t *testing.T) {
	t.Parallel()
	p := newPanelDaemon(t)
	planner := p.token(scope.TokenRequest{Agent: "planner"})
	writer := p.token(scope.TokenRequest{Agent: "writer"})
	id := p.open(t, planner, "note")
	code, body := p.call(t, planner, panel.ToolFill, map[string]any{"instanceId": id, "values": map[string]any{"title": "Plan"}})
	if code != 200 {
		t.Fatalf("planner's fill: %d %v", code, body)
	}
	holder := body["result"].(map[string]any)["lease"].(map[string]any)["agentId"].(string)
	if code, body := p.call(t, writer, panel.ToolFill, map[string]any{"instanceId": id, "values": map[string]any{"title": "Mine"}}); code != http.StatusConflict || panelErrCode(body) != "LEASE_HELD" {
		t.Fatalf("writer's fill while planner holds it: %d %v", code, body)
	}
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/agents/"+holder+"/interrupt", ""); code != 200 || body["status"] != "cancelled" {
		t.Fatalf("interrupt the holder: %d %v", code, body)
	}
	code, body = p.call(t, writer, panel.ToolFill, map[string]any{"instanceId": id, "values": map[string]any{"title": "Mine"}})
	res, _ := body["result"].(map[string]any)
	if code != 200 || res["lease"].(map[string]any)["principal"] != "agent:writer" {
		t.Fatalf("writer's fill after the interrupt: %d %v", code, body)
	}
}

// TestAgentStatusReachesEveryTabOfTheUser: a transition is a
// switchboard.agent.status event on every live tab of the user the agent
// acts for — also tabs no agent session is bound to — and on no other
// user's tab.
func TestAgentStatusReachesEveryTabOfTheUser(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx := context.Background()
	attach := func(user string) (session.Created, *session.Conn) {
		tab, err := e.d.Sessions.Create(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := e.d.Sessions.Attach(ctx, tab.SessionID, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		return tab, conn
	}
	statuses := func(c *session.Conn) []map[string]any {
		var out []map[string]any
		for {
			ev, ok := c.Next()
			if !ok {
				return out
			}
			if ev.Kind == daemon.EventAgentStatus {
				var v map[string]any
				if err := json.Unmarshal(ev.Data, &v); err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
		}
	}
	alice1, c1 := attach("user:alice")
	_, c2 := attach("user:alice")
	_, bob := attach("user:bob")
	var reg map[string]any
	if code, c := e.do(t, "POST", "/api/v1/agents", alice1.SessionToken, map[string]any{"kind": "voice", "label": "Voice", "task": "listening"}, &reg); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, c)
	}
	for name, c := range map[string]*session.Conn{"alice's tab the agent is bound to": c1, "alice's other tab": c2} {
		got := statuses(c)
		if len(got) != 1 || got[0]["type"] != "CUSTOM" || got[0]["name"] != daemon.EventAgentStatus {
			t.Fatalf("%s got %v", name, got)
		}
		v := got[0]["value"].(map[string]any)
		if v["agentId"] != reg["id"] || v["status"] != "idle" || v["task"] != "listening" {
			t.Fatalf("%s: event value %v", name, v)
		}
	}
	if got := statuses(bob); len(got) != 0 {
		t.Fatalf("bob's tab got %v", got)
	}
	if code, c := e.do(t, "POST", "/api/v1/agents/"+reg["id"].(string)+"/interrupt", alice1.SessionToken, nil, nil); code != http.StatusOK {
		t.Fatalf("interrupt: %d %s", code, c)
	}
	if got := statuses(c2); len(got) != 1 || got[0]["value"].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("alice's other tab after the interrupt: %v", got)
	}
	if got := statuses(bob); len(got) != 0 {
		t.Fatalf("bob's tab got %v", got)
	}
}

// TestInterruptParkedAISDKRun: an AI SDK chat that stops at a
// tool-approval-request leaves its session waiting_approval; an interrupt
// cancels the approval and ends the session cancelled.
func TestInterruptParkedAISDKRun(t *testing.T) {
	t.Parallel()
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "On it.", ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_create", Args: `{}`}}})
	e := newWorkspaceDaemonWith(t, daemon.Options{Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}}})
	if err := e.d.RegisterFunc(context.Background(), switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: objectSchema},
		func(context.Context, json.RawMessage) (any, error) { return map[string]string{"id": "t1"}, nil }); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/agent/chat", strings.NewReader(
		`{"id":"chat-sdk","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"create a task"}]}]}`))
	req.Header.Set("Authorization", "Bearer "+wsToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	approvalID := ""
	for _, ev := range sseEvents(t, resp) {
		if ev["type"] == "tool-approval-request" {
			approvalID, _ = ev["approvalId"].(string)
		}
	}
	if approvalID == "" {
		t.Fatal("the chat asked for no approval")
	}
	ag := agentOf(t, e, "chat")
	if ag["status"] != "waiting_approval" || ag["transport"] != "aisdk" {
		t.Fatalf("the parked chat's session: %v", ag)
	}
	if code, c := e.do(t, "POST", "/api/v1/agents/"+ag["id"].(string)+"/interrupt", wsToken, nil, nil); code != http.StatusOK {
		t.Fatalf("interrupt: %d %s", code, c)
	}
	var a switchboard.ApprovalRequest
	if code, c := e.do(t, "GET", "/api/v1/approvals/"+approvalID, wsToken, nil, &a); code != http.StatusOK || a.Status != switchboard.ApprovalCancelled {
		t.Fatalf("approval after the interrupt: %d %s %+v", code, c, a)
	}
	if ag := agentOf(t, e, "chat"); ag["status"] != "cancelled" {
		t.Fatalf("after the interrupt: %v", ag)
	}
}
