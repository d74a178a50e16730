package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/aguitest"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/sqlite"
)

// assistantEnv is the daemon's assistant wired as the daemon wires it, over
// real SQLite, with a scripted OpenAI-compatible model and one Go-function
// api tool (tasks.create).
type assistantEnv struct {
	srv   *httptest.Server
	store *sqlite.Store
	model *modeltest.OpenAI
	rt    *agent.Runtime
	admin *client.Client
	tasks chan map[string]any
	// approvals is the approval service of a hitl env.
	approvals *approval.Service
	// opts built srv's handler, for a test that needs a variant.
	opts httpapi.Options
}

func newAssistant(t *testing.T, configured bool) *assistantEnv {
	t.Helper()
	return newAssistantWith(t, configured, false)
}

// newAssistantWith is newAssistant; with hitl, tasks.create (mutate) needs
// the user's approval (the real approval service) and AG-UI and AI SDK runs
// interrupt for it.
func newAssistantWith(t *testing.T, configured, hitl bool) *assistantEnv {
	t.Helper()
	return newAssistantOpts(t, configured, hitl, nil)
}

// newAssistantOpts is newAssistantWith; tune, if set, adjusts the
// runtime's options.
func newAssistantOpts(t *testing.T, configured, hitl bool, tune func(*agent.Options, *sqlite.Store)) *assistantEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := session.New(session.Options{Store: st, Heartbeat: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	bo := broker.Options{Store: st, Registry: reg, Browser: sm}
	var approvals *approval.Service
	if hitl {
		if approvals, err = approval.New(approval.Options{Store: st, PollInterval: 20 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		bo.Policy = approvals
	}
	b := broker.New(bo)
	e := &assistantEnv{store: st, model: modeltest.NewOpenAI(t), tasks: make(chan map[string]any, 16), approvals: approvals}
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task in a project.", Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"projectId":{"type":"string"},"title":{"type":"string"}},"required":["projectId","title"]}`),
		Binding:     &switchboard.Binding{Go: true},
	}}); err != nil {
		t.Fatal(err)
	}
	b.Handle("tasks.create", func(_ context.Context, in json.RawMessage) (any, error) {
		var v map[string]any
		json.Unmarshal(in, &v)
		e.tasks <- v
		return map[string]any{"id": "t1", "title": v["title"]}, nil
	})
	var models model.Resolver
	if configured {
		models, err = model.NewResolver(map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: e.model.BaseURL()}},
			&model.Options{MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
	}
	ao := agent.Options{Broker: b, Registry: reg, Browser: sm, Models: models, History: st}
	if hitl {
		ao.Approvals = approvals
	}
	if tune != nil {
		tune(&ao, st)
	}
	e.rt, err = agent.New(ao)
	if err != nil {
		t.Fatal(err)
	}
	e.opts = httpapi.Options{Registry: reg, AdminToken: token, Broker: b, Sessions: sm, Agent: e.rt}
	h, err := httpapi.New(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(h)
	e.admin = client.New(e.srv.URL, token, nil)
	t.Cleanup(func() {
		e.rt.Close()
		sm.Shutdown()
		e.srv.Close()
		b.Close()
		st.Close()
	})
	return e
}

// post sends JSON with a bearer and returns the response.
func (e *assistantEnv) post(t *testing.T, method, path, bearer, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decodeJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// readAGUI reads an AG-UI SSE body, checking the lifecycle.
func readAGUI(t *testing.T, body io.Reader) ([]agui.Event, []string) {
	t.Helper()
	var evs []agui.Event
	var ids []string
	err := agui.ReadFrames(body, func(id string, data []byte) error {
		ev, err := agui.Decode(data)
		if err != nil {
			return err
		}
		evs = append(evs, ev)
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := agui.CheckAll(evs); err != nil {
		t.Fatalf("lifecycle: %v", err)
	}
	return evs, ids
}

var createThenAnswer = []modeltest.Turn{
	{Text: "On it.", ToolCalls: []modeltest.Call{{ID: "c1", Name: "tasks_create", Args: `{"projectId":"p1","title":"Ship it"}`}}, InputTokens: 50, OutputTokens: 9},
	{Text: "Created task t1.", InputTokens: 70, OutputTokens: 5},
}

func TestRunsRoutes(t *testing.T) {
	e := newAssistant(t, true)
	e.model.Push(createThenAnswer...)
	resp := e.post(t, "POST", "/api/v1/runs", token, `{"threadId":"chat-1","input":"create 'Ship it' in p1"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /runs: %d %v", resp.StatusCode, decodeJSON(t, resp))
	}
	info := decodeJSON(t, resp)
	id := info["runId"].(string)
	if info["threadId"] != "chat-1" || resp.Header.Get("Location") != "/api/v1/runs/"+id {
		t.Errorf("%v %s", info, resp.Header.Get("Location"))
	}
	ev := e.post(t, "GET", "/api/v1/runs/"+id+"/events", token, "")
	if ct := ev.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	evs, ids := readAGUI(t, ev.Body)
	if _, ok := evs[len(evs)-1].(*agui.RunFinished); !ok || ids[0] != "0" || ids[len(ids)-1] != strconv.Itoa(len(ids)-1) {
		t.Fatalf("last %T ids %v…%v", evs[len(evs)-1], ids[0], ids[len(ids)-1])
	}
	if v := <-e.tasks; v["title"] != "Ship it" {
		t.Errorf("tool got %v", v)
	}
	// Resume after an event id returns exactly the rest.
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Last-Event-ID", "4")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	var rest []string
	agui.ReadFrames(r2.Body, func(id string, _ []byte) error { rest = append(rest, id); return nil })
	if len(rest) != len(ids)-5 || rest[0] != "5" {
		t.Errorf("resumed ids %v of %d", rest, len(ids))
	}
	got := decodeJSON(t, e.post(t, "GET", "/api/v1/runs/"+id, token, ""))
	if got["status"] != "succeeded" || got["steps"] != float64(2) || got["usage"].(map[string]any)["totalTokens"] != float64(134) {
		t.Errorf("GET /runs/{id}: %v", got)
	}
	if r := e.post(t, "GET", "/api/v1/runs/nope", token, ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown run: %d", r.StatusCode)
	}
	if r := e.post(t, "POST", "/api/v1/runs", token, `{"threadId":"x"}`); r.StatusCode != http.StatusBadRequest {
		t.Errorf("run without input: %d", r.StatusCode)
	}
}

func TestCancelRoute(t *testing.T) {
	e := newAssistant(t, true)
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(modeltest.Turn{Text: "thinking hard about it", Hold: hold})
	info := decodeJSON(t, e.post(t, "POST", "/api/v1/runs", token, `{"input":"go"}`))
	id := info["runId"].(string)
	run, _ := e.rt.Get(id)
	for {
		recs, more, _ := run.Events(0)
		if len(recs) >= 5 { // started, user message, step, first text
			break
		}
		<-more
	}
	got := decodeJSON(t, e.post(t, "POST", "/api/v1/runs/"+id+"/cancel", token, ""))
	if got["status"] != "cancelled" {
		t.Fatalf("%v", got)
	}
	evs, _ := readAGUI(t, e.post(t, "GET", "/api/v1/runs/"+id+"/events", token, "").Body)
	if fin := evs[len(evs)-1].(*agui.RunFinished); fin.Outcome.Type != "cancelled" {
		t.Errorf("%+v", fin.Outcome)
	}
}

// TestAGUIWithReferenceClient drives POST /agui with @ag-ui/client's
// HttpAgent: the run calls the api tool and answers; the client's lifecycle
// checks and zod schemas accept every event.
func TestAGUIWithReferenceClient(t *testing.T) {
	e := newAssistant(t, true)
	aguitest.Require(t)
	e.model.Push(createThenAnswer...)
	var out struct {
		Events   []map[string]any `json:"events"`
		Messages []agui.Message   `json:"messages"`
		Error    string           `json:"error"`
	}
	opts := `{"threadId":"chat-ag","runId":"run-ag-1","headers":{"Authorization":"Bearer ` + token + `"},
		"messages":[{"id":"u1","role":"user","content":"create 'Ship it' in p1"}]}`
	aguitest.Run(t, nil, &out, "agui", e.srv.URL+"/api/v1/agui", opts)
	if out.Error != "" {
		t.Fatalf("HttpAgent: %s", out.Error)
	}
	var roles []string
	for _, m := range out.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" || out.Messages[3].Content != "Created task t1." {
		t.Errorf("client messages %s: %+v", strings.Join(roles, ","), out.Messages)
	}
	if out.Messages[1].ToolCalls[0].Function.Name != "tasks.create" {
		t.Errorf("tool call %+v", out.Messages[1].ToolCalls)
	}
	run, err := e.rt.Get("run-ag-1")
	if err != nil || run.ThreadID() != "chat-ag" {
		t.Fatalf("the client's run id was not used: %v", err)
	}
}

// TestAGUIFrontendTool: client tools are emitted as calls and the run ends;
// the client answers in the next run.
func TestAGUIFrontendTool(t *testing.T) {
	e := newAssistant(t, true)
	e.model.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "f", Name: "pick_color", Args: `{"options":["red","blue"]}`}}})
	body := `{"threadId":"chat-fe","runId":"r1","messages":[{"id":"u1","role":"user","content":"choose"}],
		"tools":[{"name":"pick_color","description":"Let the user pick.","parameters":{"type":"object","properties":{"options":{"type":"array"}}}}],"context":[]}`
	evs, _ := readAGUI(t, e.post(t, "POST", "/api/v1/agui", token, body).Body)
	fin := evs[len(evs)-1].(*agui.RunFinished)
	if fin.Outcome == nil || len(fin.Outcome.PendingToolCallIDs) != 1 {
		t.Fatalf("%+v", fin)
	}
	if n, _ := e.store.ActivityList(context.Background(), switchboard.ActivityFilter{}); len(n) != 0 {
		t.Errorf("a frontend tool was executed: %d ledger entries", len(n))
	}
}

func TestAGUINoModelConfigured(t *testing.T) {
	e := newAssistant(t, false)
	body := `{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"hi"}],"tools":[],"context":[]}`
	resp := e.post(t, "POST", "/api/v1/agui", token, body)
	evs, _ := readAGUI(t, resp.Body)
	re, ok := evs[len(evs)-1].(*agui.RunError)
	if !ok || re.Code != "MODEL_ERROR" || !strings.Contains(re.Message, "--config") || len(evs) != 2 {
		t.Fatalf("%d events, last %+v", len(evs), evs[len(evs)-1])
	}
	if r := e.post(t, "POST", "/api/v1/agui", token, `{"threadId":"t"}`); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad input: %d", r.StatusCode)
	}
}

// TestAISDKChatChunkByChunk checks the UI Message Stream of /agent/chat.
func TestAISDKChatChunkByChunk(t *testing.T) {
	e := newAssistant(t, true)
	e.model.Push(createThenAnswer...)
	body := `{"id":"chat-ai","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"create 'Ship it' in p1"}]}]}`
	resp := e.post(t, "POST", "/api/v1/agent/chat", token, body)
	if resp.Header.Get("X-Vercel-Ai-Ui-Message-Stream") != "v1" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("headers %v", resp.Header)
	}
	var chunks []string
	agui.ReadFrames(resp.Body, func(_ string, data []byte) error {
		if string(data) == "[DONE]" {
			chunks = append(chunks, "[DONE]")
			return nil
		}
		var c map[string]any
		json.Unmarshal(data, &c)
		k := c["type"].(string)
		if strings.HasPrefix(k, "data-") {
			return nil // usage and invocation notes
		}
		chunks = append(chunks, k)
		return nil
	})
	want := "start,start-step,text-start,text-delta,text-end,tool-input-start,tool-input-delta,tool-input-available,tool-output-available,finish-step," +
		"start-step,text-start,text-delta,text-delta,text-end,finish-step,finish,[DONE]"
	if got := strings.Join(dedupDeltas(chunks), ","); got != dedupDeltas2(want) {
		t.Errorf("chunks\n got %s\nwant %s", got, dedupDeltas2(want))
	}
	if h := decodeJSON(t, e.post(t, "GET", "/api/v1/agent/capabilities?session=chat-ai", token, "")); h["nativeFollowUp"] != false || h["aiSdkOwnsHistory"] != true {
		t.Errorf("capabilities of an AI SDK chat: %v", h)
	}
}

// dedupDeltas collapses runs of the same delta chunk (their number depends
// on chunking).
func dedupDeltas(cs []string) []string {
	var out []string
	for _, c := range cs {
		if len(out) > 0 && out[len(out)-1] == c && strings.HasSuffix(c, "-delta") {
			continue
		}
		out = append(out, c)
	}
	return out
}

func dedupDeltas2(s string) string { return strings.Join(dedupDeltas(strings.Split(s, ",")), ",") }

// TestAISDKChatWithAIPackage reads /agent/chat with the `ai` package.
func TestAISDKChatWithAIPackage(t *testing.T) {
	e := newAssistant(t, true)
	aguitest.Require(t)
	e.model.Push(createThenAnswer...)
	var out struct {
		Header  string            `json:"header"`
		Invalid []json.RawMessage `json:"invalid"`
		Errors  []string          `json:"errors"`
		Message struct {
			Parts []map[string]any `json:"parts"`
		} `json:"message"`
	}
	body := `{"id":"chat-ai2","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"create 'Ship it' in p1"}]}]}`
	aguitest.Run(t, nil, &out, "aisdk", e.srv.URL+"/api/v1/agent/chat", body, `{"authorization":"Bearer `+token+`"}`)
	if out.Header != "v1" || len(out.Invalid) > 0 || len(out.Errors) > 0 {
		t.Fatalf("%+v", out)
	}
	var kinds []string
	for _, p := range out.Message.Parts {
		k := p["type"].(string)
		if k == "dynamic-tool" {
			k += ":" + p["toolName"].(string) + ":" + p["state"].(string)
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, ","); got != "step-start,text,dynamic-tool:tasks.create:output-available,step-start,text" {
		t.Errorf("assembled message parts: %s", got)
	}
}

func TestFollowUpRoute(t *testing.T) {
	e := newAssistant(t, true)
	hold := make(chan struct{})
	e.model.Push(modeltest.Turn{Text: "working on it", Hold: hold}, modeltest.Turn{Text: "done, with the extra"})
	info := decodeJSON(t, e.post(t, "POST", "/api/v1/runs", token, `{"threadId":"chat-fu","input":"start"}`))
	run, _ := e.rt.Get(info["runId"].(string))
	for {
		recs, more, _ := run.Events(0)
		if len(recs) >= 5 {
			break
		}
		<-more
	}
	if h := decodeJSON(t, e.post(t, "GET", "/api/v1/agent/capabilities?session=chat-fu", token, "")); h["nativeFollowUp"] != true || h["aiSdkOwnsHistory"] != false {
		t.Errorf("capabilities %v", h)
	}
	f := `{"text":"and tag it","clientSeq":1,"clientNonce":"n1"}`
	r1 := e.post(t, "POST", "/api/v1/agent/chat/chat-fu/followup", token, f)
	if r1.StatusCode != http.StatusAccepted {
		t.Fatalf("queued: %d", r1.StatusCode)
	}
	if v := decodeJSON(t, r1); v["status"] != "queued" || v["runId"] != run.ID() {
		t.Errorf("%v", v)
	}
	r2 := e.post(t, "POST", "/api/v1/agent/chat/chat-fu/followup", token, f)
	if v := decodeJSON(t, r2); r2.StatusCode != http.StatusAccepted || v["replayed"] != true {
		t.Errorf("replay: %d %v", r2.StatusCode, v)
	}
	r3 := e.post(t, "POST", "/api/v1/agent/chat/chat-fu/followup", token, `{"text":"x","clientSeq":1,"clientNonce":"n2"}`)
	if v := decodeJSON(t, r3); r3.StatusCode != http.StatusConflict || v["error"].(map[string]any)["code"] != "FOLLOWUP_SEQUENCE_CONFLICT" {
		t.Errorf("conflict: %d %v", r3.StatusCode, v)
	}
	close(hold)
	<-run.Done()
	if run.Info().Steps != 2 {
		t.Errorf("the follow-up was not consumed in a second step: %+v", run.Info())
	}
	// An AI SDK chat has no native follow-up: 409 before anything changes.
	e.model.Push(modeltest.Turn{Text: "hi"})
	chat := e.post(t, "POST", "/api/v1/agent/chat", token, `{"id":"chat-sdk","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}]}]}`)
	io.Copy(io.Discard, chat.Body)
	r4 := e.post(t, "POST", "/api/v1/agent/chat/chat-sdk/followup", token, `{"text":"x","clientSeq":1,"clientNonce":"n"}`)
	if v := decodeJSON(t, r4); r4.StatusCode != http.StatusConflict || v["error"].(map[string]any)["code"] != "FOLLOWUP_UNSUPPORTED" {
		t.Errorf("unsupported: %d %v", r4.StatusCode, v)
	}
}

func TestMessagesRoute(t *testing.T) {
	e := newAssistant(t, true)
	big := "data:image/png;base64," + strings.Repeat("Q", 20000)
	put := e.post(t, "PUT", "/api/v1/agent/chat/chat-m/messages", token,
		`{"messages":[{"id":"u1","role":"user","parts":[{"type":"file","mediaType":"image/png","url":"`+big+`"},{"type":"text","text":"what is this?"}]}]}`)
	if put.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %v", put.StatusCode, decodeJSON(t, put))
	}
	got := decodeJSON(t, e.post(t, "GET", "/api/v1/agent/chat/chat-m/messages", token, ""))
	raw, _ := json.Marshal(got["messages"])
	if bytes.Contains(raw, []byte("QQQQ")) || !bytes.Contains(raw, []byte("removed from saved history")) || got["revision"] != float64(1) {
		t.Errorf("GET: %v", got)
	}
	if r := e.post(t, "PUT", "/api/v1/agent/chat/chat-m/messages", token, `"nope"`); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad PUT: %d", r.StatusCode)
	}
}

// TestSessionTokenRunsInItsTab: a browser tab (session token, never the
// admin token) drives the assistant, whose browser tool call runs in that
// tab through the real session machinery; another tab cannot see the chat.
func TestSessionTokenRunsInItsTab(t *testing.T) {
	e := newAssistant(t, true)
	ctx := context.Background()
	cred, err := e.admin.CreateSession(ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	tab := e.admin.Tab(cred)
	nav := switchboard.Tool{Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`)}
	if _, err := tab.Advertise(ctx, []switchboard.Tool{nav}); err != nil {
		t.Fatal(err)
	}
	// Act as the tab: hold its event stream (connected, so the tab is live,
	// once Events returns) and answer the dispatched request.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	stream, err := tab.Events(sctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	served := make(chan string, 1)
	go func() {
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			if ev.Kind != "browser.action.request" {
				continue
			}
			var req switchboard.BrowserActionRequest
			json.Unmarshal(ev.Data, &req)
			served <- string(req.Input)
			tab.PostResult(sctx, req.RunID, switchboard.BrowserActionResult{InvocationID: req.InvocationID, OK: true, Result: json.RawMessage(`{"page":"/reports"}`)})
		}
	}()
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "n", Name: "nav_goto", Args: `{"page":"/reports"}`}}},
		modeltest.Turn{Text: "You are on the reports page."},
	)
	body := `{"threadId":"chat-tab","runId":"r-tab","messages":[{"id":"u1","role":"user","content":"show reports"}],"tools":[],"context":[]}`
	evs, _ := readAGUI(t, e.post(t, "POST", "/api/v1/agui", cred.SessionToken, body).Body)
	if got := <-served; got != `{"page":"/reports"}` {
		t.Errorf("tab got %s", got)
	}
	var dispatched bool
	for _, ev := range evs {
		if c, ok := ev.(*agui.Custom); ok && c.Name == "switchboard.browser.dispatch" {
			dispatched = true
		}
	}
	res := evs[0]
	for _, ev := range evs {
		if r, ok := ev.(*agui.ToolCallResult); ok {
			res = r
		}
	}
	if r, ok := res.(*agui.ToolCallResult); !ok || r.IsError || !dispatched || !strings.Contains(r.Content, "/reports") {
		t.Fatalf("browser call: dispatched=%v result %+v", dispatched, res)
	}
	// The tab may not name another tab, and another tab cannot read the chat.
	other, _ := e.admin.CreateSession(ctx, "user:bob")
	if r := e.post(t, "POST", "/api/v1/runs", cred.SessionToken, `{"input":"x","sessionId":"`+other.SessionID+`"}`); r.StatusCode != http.StatusForbidden {
		t.Errorf("naming another tab: %d", r.StatusCode)
	}
	// Another user's chat reads as an unknown one (security review F4):
	// the same answer, so chat ids cannot be probed; writing it is NOT_FOUND.
	readAs := func(id string) (int, string) {
		r := e.post(t, "GET", "/api/v1/agent/chat/"+id+"/messages", other.SessionToken, "")
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, strings.ReplaceAll(string(b), id, "ID")
	}
	if st, body := readAs("chat-tab"); st != http.StatusOK || strings.Contains(body, "show reports") {
		t.Errorf("another tab read the chat: %d %s", st, body)
	} else if st2, unknown := readAs("chat-nobody"); st2 != st || unknown != body {
		t.Errorf("another user's chat reads %d %s, an unknown one %d %s", st, body, st2, unknown)
	}
	if r := e.post(t, "PUT", "/api/v1/agent/chat/chat-tab/messages", other.SessionToken, `[]`); r.StatusCode != http.StatusNotFound {
		t.Errorf("another tab wrote the chat: %d", r.StatusCode)
	}
	if r := e.post(t, "GET", "/api/v1/runs/r-tab", other.SessionToken, ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("another tab saw the run: %d", r.StatusCode)
	}
	if r := e.post(t, "GET", "/api/v1/agent/chat/chat-tab/messages", cred.SessionToken, ""); r.StatusCode != http.StatusOK {
		t.Errorf("the tab's own chat: %d", r.StatusCode)
	}
	if r := e.post(t, "GET", "/api/v1/runs/r-tab", "wrong", ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad token: %d", r.StatusCode)
	}
}

// TestTypedClient drives the assistant routes through client.Client.
func TestTypedClient(t *testing.T) {
	e := newAssistant(t, true)
	ctx := context.Background()
	e.model.Push(createThenAnswer...)
	info, err := e.admin.StartRun(ctx, client.RunRequest{ThreadID: "chat-c", Input: "create 'Ship it' in p1"})
	if err != nil {
		t.Fatal(err)
	}
	var evs []agui.Event
	var lastID string
	if err := e.admin.RunEvents(ctx, info.RunID, "", func(id string, ev agui.Event) error {
		evs, lastID = append(evs, ev), id
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := agui.CheckAll(evs); err != nil {
		t.Fatal(err)
	}
	var rest int
	if err := e.admin.RunEvents(ctx, info.RunID, lastID, func(string, agui.Event) error { rest++; return nil }); err != nil || rest != 0 {
		t.Errorf("after the last id: %d events, %v", rest, err)
	}
	got, err := e.admin.GetRun(ctx, info.RunID)
	if err != nil || got.Status != switchboard.RunSucceeded {
		t.Errorf("%+v %v", got, err)
	}
	if _, err := e.admin.GetRun(ctx, "nope"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Errorf("unknown run: %v", err)
	}
	h, err := e.admin.ChatMessages(ctx, "chat-c")
	if err != nil || h.Revision != 1 {
		t.Fatalf("%+v %v", h, err)
	}
	if _, err := e.admin.PutChatMessages(ctx, "chat-c", json.RawMessage(`[]`)); err != nil {
		t.Error(err)
	}
	caps, err := e.admin.AgentCapabilities(ctx, "chat-c")
	if err != nil || !caps.NativeFollowUp {
		t.Errorf("%+v %v", caps, err)
	}
	e.model.Push(modeltest.Turn{Text: "hi again"})
	res, err := e.admin.FollowUp(ctx, "chat-c", switchboard.FollowUp{Text: "hello?", ClientSeq: 1, ClientNonce: "z"})
	if err != nil || res.Status != "started" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := e.admin.CancelRun(ctx, res.RunID); err != nil {
		t.Error(err)
	}
}

// Issue 14 item 8: the protocol bodies' own members are matched exactly.
// Their readers fold case and keep unknown members, so before the check a
// lone THREADID was read as threadId, ROLE as role and ID as the chat id.
func TestProtocolBodiesAreCaseExact(t *testing.T) {
	e := newAssistant(t, false)
	for _, tc := range []struct{ path, body, pointer string }{
		{"/api/v1/agui", `{"THREADID":"t","threadId":"u","runId":"r","messages":[]}`, ""}, // a case-variant duplicate: the envelope check
		{"/api/v1/agui", `{"THREADID":"t","runId":"r","messages":[]}`, "/THREADID"},
		{"/api/v1/agui", `{"threadId":"t","runId":"r","messages":[{"id":"u1","ROLE":"user","content":"hi"}]}`, "/messages/0/ROLE"},
		{"/api/v1/agent/chat", `{"ID":"chat-9","messages":[]}`, "/ID"},
	} {
		resp := e.post(t, "POST", tc.path, token, tc.body)
		var env struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || env.Error.Code != "INVALID_INPUT" || (tc.pointer != "" && env.Error.Details["pointer"] != tc.pointer) {
			t.Errorf("%s %s: %d %+v; want 400 INVALID_INPUT at %s", tc.path, tc.body, resp.StatusCode, env.Error, tc.pointer)
		}
	}
}

// TestAgentModels: GET /agent/models tells the operator which model runs
// use, or that none is configured and how to configure one; it is the
// admin's alone (a tab's session token is refused).
func TestAgentModels(t *testing.T) {
	e := newAssistant(t, false)
	resp := e.post(t, "GET", "/api/v1/agent/models", token, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var rep model.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.Configured || rep.Setup == nil || !strings.Contains(rep.Setup.Config, "models:") || rep.Error == nil || rep.Error.Code != switchboard.CodeModelError {
		t.Fatalf("no model: %+v", rep)
	}
	cred, err := e.admin.CreateSession(context.Background(), "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	if r := e.post(t, "GET", "/api/v1/agent/models", cred.SessionToken, ""); r.StatusCode != http.StatusUnauthorized && r.StatusCode != http.StatusForbidden {
		t.Errorf("a session token reads the models: %d", r.StatusCode)
	}

	e = newAssistant(t, true)
	rep = model.Report{}
	if err := json.NewDecoder(e.post(t, "GET", "/api/v1/agent/models", token, "").Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Configured || len(rep.Models) != 1 || rep.Models[0].Model != "scripted" || rep.Models[0].BaseURL != e.model.BaseURL() || rep.Setup != nil {
		t.Fatalf("configured: %+v", rep)
	}
}
