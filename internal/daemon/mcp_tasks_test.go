package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// rawMCP is an MCP 2025-11-25 session spoken as raw JSON-RPC over
// streamable HTTP: the go-sdk client has no tasks, so the task methods and
// params.task are written out here, as the spec spells them.
type rawMCP struct {
	t     *testing.T
	url   string
	token string
	sid   string
	id    int
}

type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func openRawMCP(t *testing.T, url, token string) (*rawMCP, json.RawMessage) {
	t.Helper()
	m := &rawMCP{t: t, url: url, token: token}
	res := m.ok("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	m.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return m, res
}

// call sends one request and returns its reply (read from a JSON body or
// from the SSE stream the server answers on).
func (m *rawMCP) call(method string, params any) rpcReply {
	m.t.Helper()
	m.id++
	body := m.post(map[string]any{"jsonrpc": "2.0", "id": m.id, "method": method, "params": params})
	for _, msg := range body {
		var r struct {
			ID int `json:"id"`
			rpcReply
		}
		if json.Unmarshal(msg, &r) == nil && r.ID == m.id && (r.Result != nil || r.Error != nil) {
			return r.rpcReply
		}
	}
	m.t.Fatalf("%s: no reply in %s", method, body)
	return rpcReply{}
}

func (m *rawMCP) ok(method string, params any) json.RawMessage {
	m.t.Helper()
	r := m.call(method, params)
	if r.Error != nil {
		m.t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	return r.Result
}

// invalid sends a request that must fail with invalid params.
func (m *rawMCP) invalid(method string, params any) string {
	m.t.Helper()
	r := m.call(method, params)
	if r.Error == nil || r.Error.Code != -32602 {
		m.t.Fatalf("%s %v: got %s %+v, want invalid params (-32602)", method, params, r.Result, r.Error)
	}
	return r.Error.Message
}

func (m *rawMCP) post(msg any) []json.RawMessage {
	m.t.Helper()
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, m.url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+m.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if m.sid != "" {
		req.Header.Set("Mcp-Session-Id", m.sid)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		m.t.Fatalf("POST %s: %s", b, res.Status)
	}
	if sid := res.Header.Get("Mcp-Session-Id"); sid != "" {
		m.sid = sid
	}
	var out []json.RawMessage
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data:"); ok {
			out = append(out, json.RawMessage(strings.TrimSpace(data)))
		} else if strings.HasPrefix(line, "{") {
			out = append(out, json.RawMessage(line))
		}
	}
	return out
}

type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

func (m *rawMCP) get(id string) wireTask {
	m.t.Helper()
	var tk wireTask
	if err := json.Unmarshal(m.ok("tasks/get", map[string]any{"taskId": id}), &tk); err != nil {
		m.t.Fatal(err)
	}
	return tk
}

// until polls tasks/get until the task reaches status: nothing outside
// the daemon is told when an approved call starts its job.
func (m *rawMCP) until(id, status string) wireTask {
	m.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		tk := m.get(id)
		if tk.Status == status {
			return tk
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("task %s is %s (%s), want %s", id, tk.Status, tk.StatusMessage, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startTask calls reports.build as a task and returns the task created.
func (m *rawMCP) startTask(args map[string]any, meta map[string]any) wireTask {
	m.t.Helper()
	params := map[string]any{"name": "reports-build", "arguments": args, "task": map[string]any{"ttl": 60000}}
	if meta != nil {
		params["_meta"] = meta
	}
	var out struct {
		Task wireTask `json:"task"`
	}
	if err := json.Unmarshal(m.ok("tools/call", params), &out); err != nil || out.Task.TaskID == "" {
		m.t.Fatalf("tools/call as a task: %+v %v", out, err)
	}
	return out.Task
}

// TestMCPTasks: over /mcp, an agent runs a job tool as a 2025-11-25 task
// on real SQLite (and Postgres when SWITCHBOARD_TEST_POSTGRES is set): the
// task id is the invocation's, it waits for approval as input_required,
// works, completes with the job's result from tasks/result, shows in the
// agent's tasks/list and in nobody else's; another caller and an unknown
// id get invalid params; a re-sent call with the same idempotency key is
// the same task and runs once; a cancelled task ends the job (its work
// sees the cancellation), is cancelled in the ledger, and cannot be
// cancelled again.
func TestMCPTasks(t *testing.T) {
	for _, db := range durables(t) {
		t.Run(db.name, func(t *testing.T) { testMCPTasks(t, db) })
	}
}

func testMCPTasks(t *testing.T, db durable) {
	ctx := context.Background()
	st := db.open(t)
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	release := make(chan struct{})
	stopped := make(chan error, 1)
	var runs atomic.Int32
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "reports.build", Description: "Build a report.", Class: switchboard.ClassJob,
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"pages":{"type":"integer"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"pages":{"type":"integer"}}}`)},
		func(ctx context.Context, in json.RawMessage) (any, error) {
			runs.Add(1)
			var args struct{ Pages int }
			_ = json.Unmarshal(in, &args)
			if args.Pages == 3 { // only a cancel ends this one
				<-ctx.Done()
				stopped <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
			select {
			case <-release:
				return map[string]int{"pages": args.Pages}, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "reports.peek", Description: "Read a report.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	admin := client.New(srv.URL, mcpToken, nil)
	token := func(agent string) string {
		tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: agent, User: "user:alice", Allow: []string{"reports.*"}})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	approve := func(inv string) {
		t.Helper()
		list, err := admin.Approvals(ctx, client.ApprovalQuery{Invocation: inv})
		if err != nil || len(list) != 1 {
			t.Fatalf("approval of %s: %+v %v", inv, list, err)
		}
		if _, err := admin.Decide(ctx, list[0].ID, client.Decision{Approve: true}); err != nil {
			t.Fatal(err)
		}
	}

	a, initRes := openRawMCP(t, srv.URL+"/mcp", token("planner"))
	var caps struct {
		Capabilities struct {
			Tasks struct {
				List, Cancel *struct{}
				Requests     struct{ Tools struct{ Call *struct{} } }
			}
		}
	}
	if err := json.Unmarshal(initRes, &caps); err != nil || caps.Capabilities.Tasks.List == nil || caps.Capabilities.Tasks.Cancel == nil || caps.Capabilities.Tasks.Requests.Tools.Call == nil {
		t.Fatalf("initialize does not advertise tasks: %s", initRes)
	}
	var listed struct {
		Tools []struct {
			Name      string
			Execution *struct{ TaskSupport string }
		}
	}
	if err := json.Unmarshal(a.ok("tools/list", map[string]any{}), &listed); err != nil {
		t.Fatal(err)
	}
	support := map[string]string{}
	for _, tl := range listed.Tools {
		if tl.Execution != nil {
			support[tl.Name] = tl.Execution.TaskSupport
		}
	}
	if support["reports-build"] != "optional" || support["reports-peek"] != "" {
		t.Fatalf("execution.taskSupport: %v", support)
	}
	if r := a.call("tools/call", map[string]any{"name": "reports-peek", "task": map[string]any{}}); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("a read tool called as a task: %s %+v, want method not found", r.Result, r.Error)
	}

	// A task waits for approval, then works, then completes; a re-send
	// with its key is the same task.
	key := map[string]any{"switchboard/idempotencyKey": "build-q3"}
	tk := a.startTask(map[string]any{"pages": 12}, key)
	if again := a.startTask(map[string]any{"pages": 12}, key); again.TaskID != tk.TaskID {
		t.Fatalf("a re-sent task call made task %s beside %s", again.TaskID, tk.TaskID)
	}
	inv, err := admin.GetInvocation(ctx, tk.TaskID)
	if err != nil || inv.Tool != "reports.build" {
		t.Fatalf("the task id is not the invocation's: %+v %v", inv, err)
	}
	if tk.Status != "input_required" || !strings.Contains(tk.StatusMessage, inv.ApprovalID) || tk.TTL == nil || *tk.TTL != (30*24*time.Hour).Milliseconds() || tk.PollInterval <= 0 {
		t.Fatalf("created task: %+v", tk)
	}
	approve(tk.TaskID)
	a.until(tk.TaskID, "working")
	close(release)
	var out struct {
		Content           []struct{ Text string }
		StructuredContent struct{ Pages int }
		IsError           bool
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(a.ok("tasks/result", map[string]any{"taskId": tk.TaskID}), &out); err != nil {
		t.Fatal(err)
	}
	if out.IsError || out.StructuredContent.Pages != 12 || !strings.Contains(string(out.Meta["io.modelcontextprotocol/related-task"]), tk.TaskID) {
		t.Fatalf("tasks/result: %+v", out)
	}
	if got := a.get(tk.TaskID); got.Status != "completed" || runs.Load() != 1 {
		t.Fatalf("after its result the task is %+v, and the tool ran %d times", got, runs.Load())
	}
	a.invalid("tasks/cancel", map[string]any{"taskId": tk.TaskID}) // ended already

	// Only the caller sees its tasks.
	b, _ := openRawMCP(t, srv.URL+"/mcp", token("other"))
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		b.invalid(m, map[string]any{"taskId": tk.TaskID})
		a.invalid(m, map[string]any{"taskId": "inv_unknown"})
	}
	listOf := func(m *rawMCP) []string {
		var l struct{ Tasks []wireTask }
		if err := json.Unmarshal(m.ok("tasks/list", map[string]any{}), &l); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range l.Tasks {
			ids = append(ids, x.TaskID)
		}
		return ids
	}
	if ids := listOf(a); len(ids) != 1 || ids[0] != tk.TaskID {
		t.Fatalf("planner's tasks/list: %v, want [%s]", ids, tk.TaskID)
	}
	if ids := listOf(b); len(ids) != 0 {
		t.Fatalf("other's tasks/list: %v, want none", ids)
	}

	// Cancelling a working task ends its job.
	tk2 := a.startTask(map[string]any{"pages": 3}, nil)
	approve(tk2.TaskID)
	a.until(tk2.TaskID, "working")
	var cancelled wireTask
	if err := json.Unmarshal(a.ok("tasks/cancel", map[string]any{"taskId": tk2.TaskID}), &cancelled); err != nil || cancelled.Status != "cancelled" {
		t.Fatalf("tasks/cancel: %+v %v", cancelled, err)
	}
	select {
	case cause := <-stopped:
		if switchboard.CodeOf(cause) != switchboard.CodeCancelled {
			t.Fatalf("the job's work stopped with %v", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the job's work never saw the cancel")
	}
	if got := a.get(tk2.TaskID); got.Status != "cancelled" || !strings.HasPrefix(got.StatusMessage, "CANCELLED") {
		t.Fatalf("cancelled task reads %+v", got)
	}
	a.invalid("tasks/cancel", map[string]any{"taskId": tk2.TaskID})
	if err := json.Unmarshal(a.ok("tasks/result", map[string]any{"taskId": tk2.TaskID}), &out); err != nil || !out.IsError || !strings.HasPrefix(out.Content[0].Text, "CANCELLED") {
		t.Fatalf("tasks/result of a cancelled task: %+v %v", out, err)
	}
	entries, err := admin.Activity(ctx, client.ActivityQuery{Verb: activity.VerbJobFinish})
	if err != nil {
		t.Fatal(err)
	}
	var ended []string
	for _, e := range entries.Items {
		var dt struct{ InvocationID, Status string }
		_ = json.Unmarshal(e.Details, &dt)
		ended = append(ended, dt.InvocationID+"="+dt.Status)
	}
	if want := tk2.TaskID + "=cancelled"; !strings.Contains(strings.Join(ended, " "), want) {
		t.Fatalf("job.finish entries %v lack %s", ended, want)
	}
}

// stateless sends one 2026-07-28 request (no session; the revision and
// the client's capabilities, which declare the Tasks extension, on the
// request) and returns its reply.
func stateless(t *testing.T, url, token, method string, params map[string]any) rpcReply {
	t.Helper()
	return statelessWith(t, url, token, method, params, map[string]any{})
}

// statelessWith is stateless with caps beside the extension in the
// client's capabilities.
func statelessWith(t *testing.T, url, token, method string, params, caps map[string]any) rpcReply {
	t.Helper()
	caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data:")
		var r struct {
			ID *int `json:"id"`
			rpcReply
		}
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &r) == nil && r.ID != nil {
			return r.rpcReply
		}
	}
	t.Fatalf("%s: no reply (%s)", method, res.Status)
	return rpcReply{}
}

type detailedTask struct {
	ResultType    string
	TaskID        string
	Status        string
	StatusMessage string
	TTLSeconds    *int64
	InputRequests map[string]json.RawMessage
	Result        *struct {
		IsError           bool
		StructuredContent struct{ Pages int }
	}
}

// TestMCPTasksExtension: a 2026-07-28 client that declares the Tasks
// extension (SEP-2663) gets resultType "task" for a job tool's call, polls
// tasks/get through approval (input_required) and working to completed
// with the result inline, and cancels a second task (tasks/cancel is
// acknowledged, the job's work sees the cancel, the task reads
// cancelled); another caller's or an unknown id is invalid params on
// tasks/get and acknowledged on tasks/cancel, where it changes nothing.
func TestMCPTasksExtension(t *testing.T) {
	ctx := context.Background()
	st := durables(t)[0].open(t)
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	release := make(chan struct{})
	stopped := make(chan error, 1)
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "reports.build", Description: "Build a report.", Class: switchboard.ClassJob,
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"pages":{"type":"integer"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"pages":{"type":"integer"}}}`)},
		func(ctx context.Context, in json.RawMessage) (any, error) {
			var args struct{ Pages int }
			_ = json.Unmarshal(in, &args)
			if args.Pages == 3 {
				<-ctx.Done()
				stopped <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
			select {
			case <-release:
				return map[string]int{"pages": args.Pages}, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	admin := client.New(srv.URL, mcpToken, nil)
	token := func(agent string) string {
		tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: agent, User: "user:alice", Allow: []string{"reports.*"}})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	planner, other := token("planner"), token("other")
	decodeTask := func(r rpcReply) detailedTask {
		t.Helper()
		var tk detailedTask
		if r.Error != nil || json.Unmarshal(r.Result, &tk) != nil {
			t.Fatalf("reply %s %+v", r.Result, r.Error)
		}
		return tk
	}
	get := func(id string) detailedTask {
		return decodeTask(stateless(t, url, planner, "tasks/get", map[string]any{"taskId": id}))
	}
	until := func(id, status string) detailedTask {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			tk := get(id)
			if tk.Status == status {
				return tk
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s is %s, want %s", id, tk.Status, status)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	approve := func(inv string) {
		t.Helper()
		list, err := admin.Approvals(ctx, client.ApprovalQuery{Invocation: inv})
		if err != nil || len(list) != 1 {
			t.Fatalf("approval of %s: %+v %v", inv, list, err)
		}
		if _, err := admin.Decide(ctx, list[0].ID, client.Decision{Approve: true}); err != nil {
			t.Fatal(err)
		}
	}

	var disc struct {
		Capabilities struct{ Extensions map[string]json.RawMessage }
	}
	if r := stateless(t, url, planner, "server/discover", map[string]any{}); r.Error != nil || json.Unmarshal(r.Result, &disc) != nil || disc.Capabilities.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("server/discover: %s %+v", r.Result, r.Error)
	}
	created := decodeTask(stateless(t, url, planner, "tools/call", map[string]any{"name": "reports-build", "arguments": map[string]any{"pages": 5}}))
	if created.ResultType != "task" || created.Status != "input_required" || created.Result != nil || created.TTLSeconds == nil || *created.TTLSeconds != int64((30*24*time.Hour).Seconds()) {
		t.Fatalf("tools/call answered %+v", created)
	}
	if tk := get(created.TaskID); tk.ResultType != "complete" || tk.Status != "input_required" || tk.InputRequests == nil {
		t.Fatalf("tasks/get while waiting: %+v", tk)
	}
	approve(created.TaskID)
	until(created.TaskID, "working")
	close(release)
	if tk := until(created.TaskID, "completed"); tk.Result == nil || tk.Result.IsError || tk.Result.StructuredContent.Pages != 5 {
		t.Fatalf("completed task: %+v", tk)
	}

	if r := stateless(t, url, other, "tasks/get", map[string]any{"taskId": created.TaskID}); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("another caller's tasks/get: %s %+v", r.Result, r.Error)
	}
	if r := stateless(t, url, planner, "tasks/list", map[string]any{}); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("tasks/list on 2026-07-28: %s %+v", r.Result, r.Error)
	}

	second := decodeTask(stateless(t, url, planner, "tools/call", map[string]any{"name": "reports-build", "arguments": map[string]any{"pages": 3}}))
	approve(second.TaskID)
	until(second.TaskID, "working")
	for _, who := range []string{other, planner} { // another's cancel is acknowledged and does nothing
		if ack := stateless(t, url, who, "tasks/cancel", map[string]any{"taskId": second.TaskID}); ack.Error != nil || !strings.Contains(string(ack.Result), `"resultType":"complete"`) {
			t.Fatalf("tasks/cancel: %s %+v", ack.Result, ack.Error)
		}
		if who == other && get(second.TaskID).Status != "working" {
			t.Fatal("another caller's tasks/cancel cancelled the task")
		}
	}
	select {
	case cause := <-stopped:
		if switchboard.CodeOf(cause) != switchboard.CodeCancelled {
			t.Fatalf("the job's work stopped with %v", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the job's work never saw the cancel")
	}
	until(second.TaskID, "cancelled")
}

// TestMCPTasksExtensionUpdateDecides: with form elicitation allowed, a
// task waiting for approval asks for it in inputRequests, and the
// client's tasks/update with an accepted form decides it: the job runs
// and the task completes.
func TestMCPTasksExtensionUpdateDecides(t *testing.T) {
	ctx := context.Background()
	st := durables(t)[0].open(t)
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken, MCP: mcpserver.Options{Elicitation: mcpserver.ElicitForm}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	err = d.RegisterFunc(ctx, switchboard.Tool{Name: "reports.build", Description: "Build a report.", Class: switchboard.ClassJob,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage) (any, error) { return map[string]int{"pages": 1}, nil })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: "planner", User: "user:alice", Allow: []string{"reports.*"}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(method string, params map[string]any) detailedTask {
		t.Helper()
		r := statelessWith(t, srv.URL+"/mcp", tok.Token, method, params, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}})
		var tk detailedTask
		if r.Error != nil || json.Unmarshal(r.Result, &tk) != nil {
			t.Fatalf("%s: %s %+v", method, r.Result, r.Error)
		}
		return tk
	}
	created := call("tools/call", map[string]any{"name": "reports-build", "arguments": map[string]any{}})
	waiting := call("tasks/get", map[string]any{"taskId": created.TaskID})
	if waiting.Status != "input_required" || len(waiting.InputRequests) != 1 {
		t.Fatalf("tasks/get while waiting: %+v", waiting)
	}
	var key string
	for k, v := range waiting.InputRequests {
		key = k
		if !strings.Contains(string(v), `"method":"elicitation/create"`) || !strings.Contains(string(v), `"mode":"form"`) {
			t.Fatalf("input request %s", v)
		}
	}
	call("tasks/update", map[string]any{"taskId": created.TaskID,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}})
	deadline := time.Now().Add(20 * time.Second)
	for {
		tk := call("tasks/get", map[string]any{"taskId": created.TaskID})
		if tk.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %+v after the form approved it", tk)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
