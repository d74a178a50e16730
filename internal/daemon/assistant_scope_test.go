package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// assistantDaemon is a whole daemon over real HTTP and SQLite whose
// assistant talks to a scripted OpenAI-compatible model, with read tools
// that count their runs.
type assistantDaemon struct {
	srv   *httptest.Server
	admin *client.Client
	model *modeltest.OpenAI
	ran   map[string]int
	token string
}

func newAssistantDaemon(t *testing.T, results map[string]string) *assistantDaemon {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &assistantDaemon{model: modeltest.NewOpenAI(t), ran: map[string]int{}, token: daemon.NewSecret()}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: e.token,
		Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: e.model.BaseURL()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for name, result := range results {
		tl := switchboard.Tool{Name: name, Description: "Read " + name + ".", Class: switchboard.ClassRead,
			InputSchema: json.RawMessage(`{"type":"object"}`)}
		if err := d.RegisterFunc(ctx, tl, func(context.Context, json.RawMessage) (any, error) {
			e.ran[name]++ // runs are sequential in these tests: one call per model turn
			return json.RawMessage(result), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.srv = httptest.NewServer(d.Handler())
	t.Cleanup(e.srv.Close)
	e.admin = client.New(e.srv.URL, e.token, nil)
	return e
}

// run starts a run with bearer (POST /runs) and returns its AG-UI events,
// read to the end from GET /runs/{id}/events, and the stream's raw bytes.
func (e *assistantDaemon) run(t *testing.T, bearer, input string) ([]agui.Event, string) {
	t.Helper()
	ctx := context.Background()
	info, err := client.New(e.srv.URL, bearer, nil).StartRun(ctx, client.RunRequest{Input: input})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/runs/"+info.RunID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body) // the stream ends with the run
	if err != nil {
		t.Fatal(err)
	}
	var evs []agui.Event
	if err := agui.ReadFrames(strings.NewReader(string(raw)), func(_ string, data []byte) error {
		ev, err := agui.Decode(data)
		evs = append(evs, ev)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return evs, string(raw)
}

func toolResult(evs []agui.Event) *agui.ToolCallResult {
	for _, ev := range evs {
		if r, ok := ev.(*agui.ToolCallResult); ok {
			return r
		}
	}
	return nil
}

// offered is the tool names the model was offered in request n.
func (e *assistantDaemon) offered(n int) []string {
	var names []string
	tools, _ := e.model.Requests()[n]["tools"].([]any)
	for _, tl := range tools {
		f, _ := tl.(map[string]any)["function"].(map[string]any)
		name, _ := f["name"].(string)
		names = append(names, name)
	}
	return names
}

// The assistant of a run a tab starts runs with the scope the app gave the
// tab's user (issue 14 item 6): a tool outside it is neither offered to the
// model nor run when the model calls it anyway (TOOL_NOT_FOUND, as for an
// agent token with that scope). The admin's run keeps full scope.
func TestSessionAssistantHasItsUsersScope(t *testing.T) {
	t.Parallel()
	e := newAssistantDaemon(t, map[string]string{"tasks.list": `{"tasks":[]}`, "billing.read": `{"balance":42}`})
	ctx := context.Background()
	cred, err := e.admin.OpenSession(ctx, client.SessionRequest{Principal: "user:alice", Allow: []string{"tasks.*"}})
	if err != nil {
		t.Fatal(err)
	}
	// The tab is connected, as the user's is: an unknown name bound to a
	// tab that is gone would answer the tab's state (SESSION_GONE) instead.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	stream, err := e.admin.Tab(cred).Events(sctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	// The model was not offered billing.read; it guesses the tool's real
	// name, as a prompt-injected model would.
	callBilling := []modeltest.Turn{
		{ToolCalls: []modeltest.Call{{ID: "b1", Name: "billing.read", Args: `{}`}}},
		{Text: "Done."},
	}

	e.model.Push(callBilling...)
	evs, _ := e.run(t, cred.SessionToken, "what is my balance?")
	r := toolResult(evs)
	if r == nil || !strings.Contains(r.Content, `"code":"`+string(switchboard.CodeToolNotFound)+`"`) {
		t.Fatalf("the tab's assistant calling billing.read (outside allow tasks.*): %+v, want a TOOL_NOT_FOUND result", r)
	}
	if e.ran["billing.read"] != 0 {
		t.Fatalf("billing.read ran %d times for the tab's assistant", e.ran["billing.read"])
	}
	if got := strings.Join(e.offered(0), ","); !strings.Contains(got, "tasks_list") || strings.Contains(got, "billing_read") {
		t.Fatalf("the tab's assistant was offered %s, want tasks_list and not billing_read", got)
	}

	// The same call from the admin token's run runs: full scope.
	e.model.Push(callBilling...)
	evs, _ = e.run(t, e.token, "what is my balance?")
	if r := toolResult(evs); r == nil || r.IsError || e.ran["billing.read"] != 1 {
		t.Fatalf("the admin's assistant calling billing.read: %+v, ran %d", r, e.ran["billing.read"])
	}

	// A deny list narrows an otherwise unscoped user the same way.
	denied, err := e.admin.OpenSession(ctx, client.SessionRequest{Principal: "user:bob", Deny: []string{"billing.*"}})
	if err != nil {
		t.Fatal(err)
	}
	e.model.Push(modeltest.Turn{Text: "Hello."})
	e.run(t, denied.SessionToken, "hi")
	if got := strings.Join(e.offered(len(e.model.Requests())-1), ","); !strings.Contains(got, "tasks_list") || strings.Contains(got, "billing_read") {
		t.Fatalf("the assistant of a session denied billing.* was offered %s", got)
	}

	// A bad glob opens no session.
	if _, err := e.admin.OpenSession(ctx, client.SessionRequest{Allow: []string{"tasks list"}}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("a bad allow glob: %v, want INVALID_INPUT", err)
	}
}

// What a tool returns reaches the run's event stream redacted as the ledger
// and the logs redact it (issue 14 item 6): a cookie one tool returned is in
// neither the stream nor what the model is told.
func TestRunEventsAreRedacted(t *testing.T) {
	t.Parallel()
	const cookie = "s3cr3tCookieValue0123456789"
	e := newAssistantDaemon(t, map[string]string{
		"profile.read": `{"name":"alice","cookie":"` + cookie + `","headers":{"Set-Cookie":"sid=` + cookie + `; HttpOnly"},"note":"see session=` + cookie + `"}`,
	})
	e.model.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "p1", Name: "profile_read", Args: `{}`}}},
		modeltest.Turn{Text: "Your name is alice."},
	)
	evs, raw := e.run(t, e.token, "who am I?")
	r := toolResult(evs)
	if r == nil || r.IsError || !strings.Contains(r.Content, "alice") {
		t.Fatalf("profile.read result: %+v", r)
	}
	if strings.Contains(raw, cookie) {
		t.Fatalf("the run's event stream carries the cookie value:\n%s", raw)
	}
	if b, _ := json.Marshal(e.model.Requests()); strings.Contains(string(b), cookie) {
		t.Fatal("the model was told the cookie value")
	}
	if !strings.Contains(r.Content, "[redacted]") {
		t.Fatalf("the result does not say what was hidden: %s", r.Content)
	}
}
