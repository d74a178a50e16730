package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// env is a whole daemon over real HTTP and SQLite whose assistant talks to
// a scripted model, with read tools in two namespaces.
type env struct {
	d     *daemon.Daemon
	srv   *httptest.Server
	admin *client.Client
	model *modeltest.OpenAI
	token string
	reads atomic.Int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{model: modeltest.NewOpenAI(t), token: daemon.NewSecret()}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: e.token,
		Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: e.model.BaseURL()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	e.d = d
	for name, result := range map[string]string{"finance.read": `{"revenue":120}`, "design.read": `{"slides":12}`, "billing.read": `{"balance":1}`} {
		tl := switchboard.Tool{Name: name, Description: "Read " + name + ".", Summary: "read " + name, Class: switchboard.ClassRead,
			InputSchema: json.RawMessage(`{"type":"object"}`)}
		if err := d.RegisterFunc(ctx, tl, func(context.Context, json.RawMessage) (any, error) {
			e.reads.Add(1)
			return json.RawMessage(result), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.srv = httptest.NewServer(d.Handler())
	t.Cleanup(func() { e.srv.CloseClientConnections(); e.srv.Close() })
	e.admin = client.New(e.srv.URL, e.token, nil)
	return e
}

// agentToken mints a token for an agent acting for user:alice.
func (e *env) agentToken(t *testing.T, allow ...string) string {
	t.Helper()
	tok, err := e.admin.CreateToken(context.Background(), client.TokenRequest{Agent: "partner", User: "user:alice", Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

var (
	installOnce sync.Once
	installErr  string
)

// nodeDir is testdata/node with its packages installed, or a skip.
func nodeDir(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "node"))
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; skipping the A2A JavaScript SDK client check")
	}
	installOnce.Do(func() {
		marker := filepath.Join(dir, "node_modules", ".switchboard-installed")
		if _, err := os.Stat(marker); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = "npm ci failed: " + err.Error() + ": " + string(out)
			return
		}
		_ = os.WriteFile(marker, nil, 0o644)
	})
	if installErr != "" {
		t.Skip(installErr)
	}
	return dir
}

// The official A2A JavaScript SDK client fetches the assistant's card,
// streams a task to its end, sends a blocking message, cancels a task,
// and is refused for an unknown task (TaskNotFound), a second cancel
// (TaskNotCancelable) and a forged token (401). The tasks are alice's,
// within the partner token's scope.
func TestJavaScriptSDKClient(t *testing.T) {
	e := newEnv(t)
	dir := nodeDir(t)
	token := e.agentToken(t, "finance.*", "design.*")
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "finance_read", Args: `{}`}}},
		modeltest.Turn{Text: "Board pack ready."},
		modeltest.Turn{Text: "Design has 12 slides."},
		modeltest.Turn{Text: "Working", Hold: hold},
	)
	in, _ := json.Marshal(map[string]string{"base": e.srv.URL, "token": token, "badToken": "sbk_forged.0000"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "check.mjs", string(in))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.mjs: %v\n%s\n%s", err, raw, stderr.String())
	}
	var out struct {
		Card struct {
			Name       string   `json:"name"`
			Skills     []string `json:"skills"`
			Schemes    []string `json:"schemes"`
			Interfaces []string `json:"interfaces"`
			Streaming  bool     `json:"streaming"`
		} `json:"card"`
		Stream   []string `json:"stream"`
		Streamed struct {
			ID        string   `json:"id"`
			State     string   `json:"state"`
			Artifacts []string `json:"artifacts"`
			History   string   `json:"history"`
		} `json:"streamed"`
		Blocking struct {
			State     string   `json:"state"`
			Artifacts []string `json:"artifacts"`
		} `json:"blocking"`
		Cancel struct {
			Before string `json:"before"`
			After  string `json:"after"`
		} `json:"cancel"`
		CancelAgain string `json:"cancelAgain"`
		Unknown     string `json:"unknown"`
		Forged      string `json:"forged"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("check.mjs printed %s: %v", raw, err)
	}
	skills := "," + strings.Join(out.Card.Skills, ",") + ","
	if !strings.Contains(skills, ",billing,design,finance,") || strings.Join(out.Card.Schemes, ",") != "bearer" ||
		len(out.Card.Interfaces) != 1 || out.Card.Interfaces[0] != "JSONRPC 1.0 "+e.srv.URL+"/a2a" || !out.Card.Streaming {
		t.Fatalf("card as the SDK read it: %+v", out.Card)
	}
	stream := strings.Join(out.Stream, " | ")
	if !strings.HasPrefix(stream, "task TASK_STATE_") || !strings.Contains(stream, "artifact Board pack ready.") ||
		!strings.HasSuffix(stream, "status TASK_STATE_COMPLETED") {
		t.Fatalf("the stream the SDK read: %s", stream)
	}
	if out.Streamed.State != "TASK_STATE_COMPLETED" || strings.Join(out.Streamed.Artifacts, "") != "Board pack ready." || out.Streamed.History != "Prepare the Q3 board pack" {
		t.Fatalf("the streamed task: %+v", out.Streamed)
	}
	if out.Blocking.State != "TASK_STATE_COMPLETED" || strings.Join(out.Blocking.Artifacts, "") != "Design has 12 slides." {
		t.Fatalf("the blocking send: %+v", out.Blocking)
	}
	if out.Cancel.After != "TASK_STATE_CANCELED" || out.CancelAgain != "TaskNotCancelableError" || out.Unknown != "TaskNotFoundError" {
		t.Fatalf("cancel %+v, cancel again %s, unknown %s", out.Cancel, out.CancelAgain, out.Unknown)
	}
	if !strings.Contains(out.Forged, "401") || !strings.Contains(out.Forged, "UNAUTHORIZED") {
		t.Fatalf("the forged token: %s, want a 401 UNAUTHORIZED", out.Forged)
	}
	// On the switchboard side: alice's task, made by the partner agent,
	// within its scope, that called finance.read once.
	tk, err := e.admin.Task(context.Background(), out.Streamed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Owner != "user:alice" || tk.Creator != "agent:partner" || strings.Join(tk.Envelope.Allow, ",") != "design.*,finance.*" ||
		len(tk.Steps) != 1 || tk.Steps[0].Tool != "finance.read" || e.reads.Load() != 1 {
		t.Fatalf("the task on switchboard's side: %+v (reads %d)", tk, e.reads.Load())
	}
}

// rpc POSTs body to /a2a with token and decodes the answer.
func (e *env) rpc(t *testing.T, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func rpcCode(out map[string]any) float64 {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// Bad input gets JSON-RPC's codes (and a missing or forged token 401),
// and another user's task is TaskNotFound as an unknown one.
func TestJSONRPCErrors(t *testing.T) {
	e := newEnv(t)
	token := e.agentToken(t)
	for _, c := range []struct {
		name, token, body string
		status            int
		code              float64
	}{
		{"no token", "", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, 401, 0},
		{"forged token", "sbk_forged.0000", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, 401, 0},
		{"not JSON", token, `{"jsonrpc":`, 200, -32700},
		{"a batch", token, `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, 200, -32600},
		{"no version", token, `{"id":1,"method":"GetTask","params":{"id":"x"}}`, 200, -32600},
		{"an object id", token, `{"jsonrpc":"2.0","id":{},"method":"GetTask","params":{"id":"x"}}`, 200, -32600},
		{"unknown method", token, `{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`, 200, -32601},
		{"no params", token, `{"jsonrpc":"2.0","id":1,"method":"SendMessage"}`, 200, -32602},
		{"params of a wrong type", token, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":7}}`, 200, -32602},
		{"an agent's message", token, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}`, 200, -32602},
		{"an empty goal", token, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":" "}]}}}`, 200, -32602},
		{"a file part", token, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"https://x/y.pdf"}]}}}`, 200, -32005},
		{"an unknown task", token, `{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"task_nope"}}`, 200, -32001},
	} {
		status, out := e.rpc(t, c.token, c.body)
		if status != c.status || (c.code != 0 && rpcCode(out) != c.code) {
			t.Errorf("%s: %d %v, want %d and code %v", c.name, status, out, c.status, c.code)
		}
		if c.status == 401 {
			if errv, _ := out["error"].(map[string]any); errv["code"] != string(switchboard.CodeUnauthorized) {
				t.Errorf("%s: body %v, want the UNAUTHORIZED envelope", c.name, out)
			}
		}
	}
	// The admin's task is not the partner's.
	e.model.Push(modeltest.Turn{Text: "Done."})
	tk, err := e.admin.CreateTask(context.Background(), client.TaskRequest{Goal: "Admin work"})
	if err != nil {
		t.Fatal(err)
	}
	_, out := e.rpc(t, token, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+tk.ID+`"}}`)
	if rpcCode(out) != -32001 || out["id"] != float64(2) {
		t.Fatalf("another user's task: %v, want TaskNotFound (-32001) answering id 2", out)
	}
	_, out = e.rpc(t, e.token, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{}}`)
	if res, _ := out["result"].(map[string]any); len(res["tasks"].([]any)) != 1 {
		t.Fatalf("the admin's ListTasks: %v", out)
	}
}

// A message sent again (the same messageId, from the same caller) answers
// with the task it made instead of starting the work twice; another
// caller's message of the same id is its own task.
func TestReplayedMessageIsOneTask(t *testing.T) {
	e := newEnv(t)
	token := e.agentToken(t)
	e.model.Push(modeltest.Turn{Text: "One."}, modeltest.Turn{Text: "Two."})
	send := func(tok string) string {
		_, out := e.rpc(t, tok, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"Count"}]},"configuration":{"returnImmediately":true}}}`)
		res, _ := out["result"].(map[string]any)
		tk, _ := res["task"].(map[string]any)
		id, _ := tk["id"].(string)
		if id == "" {
			t.Fatalf("SendMessage: %v", out)
		}
		return id
	}
	first := send(token)
	if again := send(token); again != first {
		t.Fatalf("the same message again made task %s, want %s", again, first)
	}
	if other := send(e.token); other == first {
		t.Fatalf("another caller's message of the same id found the first caller's task")
	}
	if ts, err := e.admin.Tasks(context.Background(), 0); err != nil || len(ts) != 2 {
		t.Fatalf("%d tasks (%v), want 2", len(ts), err)
	}
}

// A blocking SendMessage waits on the task's changes and, once the task
// ended, keeps nothing for it: a daemon serving many tasks does not grow
// with every task it ever waited on.
func TestAwaitKeepsNothingForAnEndedTask(t *testing.T) {
	e := newEnv(t)
	token := e.agentToken(t)
	e.model.Push(modeltest.Turn{Text: "Done."})
	_, out := e.rpc(t, token, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-await","role":"ROLE_USER","parts":[{"text":"Finish"}]}}}`)
	res, _ := out["result"].(map[string]any)
	tk, _ := res["task"].(map[string]any)
	st, _ := tk["status"].(map[string]any)
	if st["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("SendMessage: %v", out)
	}
	if n := e.d.Tasks.Waited(); n != 0 {
		t.Fatalf("%d tasks keep a change channel after the only waiter left", n)
	}
}
