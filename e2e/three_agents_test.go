package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// bearer adds an agent token to every MCP request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestThreeAgentsOnOnePage (issue 12, Tests): one demo tab in Chromium and
// three agents at work at once — the built-in assistant filling panel A, a
// background job reporting progress, and an external MCP client (the
// official Go SDK, with an agent token) composing panel B and asking for
// an approval the user grants in the tab. It checks the lease contest
// between the MCP agent and the assistant, an interrupt of the job, that
// each agent's digest shows the others, and attribution (agentId) on every
// ledger entry and on the agent events the tab hears.
func TestThreeAgentsOnOnePage(t *testing.T) {
	e, llm := newChatEnv(t)
	bg := context.Background()

	// The background agent: a job that reports progress and runs until
	// it is cancelled.
	if err := e.d.RegisterFunc(bg, switchboard.Tool{Name: "exports.build", Description: "Build an export.", Class: switchboard.ClassJob,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ json.RawMessage) (any, error) {
			switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 0.25, Total: 1, Message: "collecting"})
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}); err != nil {
		t.Fatal(err)
	}

	// The tab belongs to the daemon's user (the user agent tokens act
	// for), so its approval card may decide the MCP agent's call; the demo
	// takes session credentials in its fragment.
	cred, err := e.admin.CreateSession(bg, "")
	if err != nil {
		t.Fatal(err)
	}
	tabAPI := client.New(e.srv.URL, cred.SessionToken, nil)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/projects?key="+demoKey+"#session="+cred.SessionID+"&token="+cred.SessionToken)
	defer cancel()
	if id := e.connected(t, ctx, demoTools...); id != cred.SessionID {
		t.Fatalf("the tab opened session %s, want %s", id, cred.SessionID)
	}
	poll(t, ctx, chat+`.dataset.sbcReady === "true"`)
	// The agent events the tab hears, as the SDK hands them to the page.
	eval[bool](t, ctx, `(() => { window.agentEvents = [];
		window.switchboard.on("event", ({ kind, data }) => { if (kind === "switchboard.agent.status") window.agentEvents.push(data?.value ?? data) });
		return true })()`)

	// (2) The background job runs and reports progress.
	resp, err := e.call("exports.build", "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		JobID string `json:"jobId"`
	}
	if err := json.Unmarshal(resp.Result, &started); err != nil || started.JobID == "" {
		t.Fatalf("job call answered %s", resp.Result)
	}
	var job switchboard.AgentSession
	waitDaemon(t, "the job's background session with its progress", func() bool {
		list, err := e.admin.Agents(bg, client.AgentQuery{Kind: "background", Active: true})
		for _, a := range list {
			if err == nil && a.JobID == started.JobID && a.Status == switchboard.AgentRunning && a.Progress != nil && *a.Progress == 0.25 {
				job = a
				return true
			}
		}
		return false
	})
	if job.Transport != "job" || !strings.Contains(job.Task, "collecting") {
		t.Fatalf("the job's session: %+v", job)
	}

	// (3) The external agent connects with its token over MCP and composes
	// panel B in the tab (its table reads the projects adapter in the
	// agent's scope, hence data.projects.*).
	tok, err := e.admin.CreateToken(bg, client.TokenRequest{Agent: "claude", Allow: []string{"panel.*", "data.projects.*", "agents.list", "workspace.*"}})
	if err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithTimeout(bg, 2*time.Minute)
	defer mcancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "three-agents", Version: "1"}, nil).Connect(mctx,
		&mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok.Token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mcpCall := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(mctx, &mcp.CallToolParams{Name: strings.ReplaceAll(tool, ".", "-"), Arguments: args})
		if err != nil {
			t.Fatalf("MCP %s: %v", tool, err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	// Composing a panel is an agent's change to the user's page: it waits
	// for the user, whose tab shows the card naming the agent.
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := cs.CallTool(mctx, &mcp.CallToolParams{Name: "panel-compose", Arguments: map[string]any{"spec": json.RawMessage(composedSpec), "sessionId": cred.SessionID}})
		done <- answer{r, err}
	}()
	var ext switchboard.AgentSession
	waitDaemon(t, "the MCP agent's external session", func() bool {
		list, err := e.admin.Agents(bg, client.AgentQuery{Kind: "external", Active: true})
		if err == nil && len(list) == 1 && list[0].Principal == "agent:claude" && list[0].Transport == "mcp" {
			ext = list[0]
			return true
		}
		return false
	})
	card := `switchboard-chat li.sbc-approval[data-sbc-tool="panel.compose"]`
	poll(t, ctx, `!!document.querySelector('`+card+` button.sbc-approve')`)
	if got := eval[string](t, ctx, `document.querySelector('`+card+`').dataset.sbcAgentId`); got != ext.ID {
		t.Fatalf("the approval card names agent %q, want the MCP agent %s", got, ext.ID)
	}
	if title := eval[string](t, ctx, `document.querySelector('`+card+` .sbc-approval-title').textContent`); !strings.Contains(title, "wants to run panel.compose") || strings.HasPrefix(title, "Assistant") {
		t.Fatalf("the card's title %q", title)
	}
	click(t, ctx, card+` button.sbc-approve`)
	a := <-done
	var composed struct {
		InstanceID string `json:"instanceId"`
	}
	if a.err != nil || a.res.IsError || json.Unmarshal([]byte(text(a.res)), &composed) != nil || composed.InstanceID == "" {
		t.Fatalf("the approved panel.compose over MCP: %v %+v", a.err, a.res)
	}
	poll(t, ctx, `document.querySelector('`+card+`').dataset.sbcResolved === "approved"`)
	panelB := composed.InstanceID
	poll(t, ctx, `document.querySelectorAll('[data-sb-instance="`+panelB+`"] tbody tr').length === 6`)
	// Attribution in the panel chrome: the MCP agent, not "the assistant".
	if got := eval[string](t, ctx, `document.querySelector('[data-sb-instance="`+panelB+`"] [data-sb-badge]').textContent`); got != "Composed by claude" {
		t.Errorf("panel B's provenance badge reads %q; want it to name the MCP agent", got)
	}

	// (1) The assistant opens panel A and fills it, then holds its last
	// turn: its run stays at work (and keeps its lease) while the others act.
	hold := make(chan struct{})
	defer func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	}()
	llm.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "a1", Name: "panel_open", Args: `{"panel":"project.settings","params":{"projectId":"borealis"}}`}}})
	llm.Func(func(n int, body map[string]any) modeltest.Turn {
		last := lastToolResult(body)
		var r struct {
			InstanceID string   `json:"instanceId"`
			Applied    []string `json:"applied"`
		}
		_ = json.Unmarshal([]byte(last), &r)
		if r.Applied != nil {
			return modeltest.Turn{Text: "Borealis is Alex's now; anything else?", Hold: hold}
		}
		return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "a2", Name: "panel_fill", Args: `{"instanceId":"` + r.InstanceID + `","values":{"owner":"Alex Doe"}}`}}}
	})
	defer llm.Func(nil)
	say(t, ctx, "Hand Borealis to Alex")
	const owner = `[data-sb-panel="project.settings"] [data-sb-path="owner"]`
	poll(t, ctx, `document.querySelector('`+owner+`')?.value === "Alex Doe"`)
	poll(t, ctx, `[...document.querySelectorAll("switchboard-chat .sbc-assistant")].pop()?.dataset.sbcText?.startsWith("Borealis")`)
	panelA := eval[string](t, ctx, `document.querySelector('[data-sb-panel="project.settings"]').closest("[data-sb-instance]").dataset.sbInstance`)
	var assistant switchboard.AgentSession
	waitDaemon(t, "the assistant's chat session at work", func() bool {
		list, err := e.admin.Agents(bg, client.AgentQuery{Kind: "chat", Session: cred.SessionID, Active: true})
		if err == nil && len(list) == 1 && list[0].Status == switchboard.AgentRunning {
			assistant = list[0]
			return true
		}
		return false
	})

	t.Run("the assistant's digest shows the job and the MCP agent", func(t *testing.T) {
		// The system block of the held turn is the digest the assistant read.
		reqs := llm.Requests()
		sys, _ := json.Marshal(reqs[len(reqs)-1]["messages"])
		for _, id := range []string{job.ID, ext.ID} {
			if !strings.Contains(string(sys), id) {
				t.Errorf("the assistant's system block lacks agent %s", id)
			}
		}
		// The tab's own digest (what the assistant's STATE_SNAPSHOT carries).
		var d switchboard.WorkspaceDigest
		if err := tabAPI.Do(bg, "GET", "/api/v1/digest", nil, &d); err != nil {
			t.Fatal(err)
		}
		if got := digestAgentIDs(d); !got[job.ID] || !got[ext.ID] || !got[assistant.ID] {
			t.Errorf("the tab's digest agents %v, want %s, %s and %s", got, job.ID, ext.ID, assistant.ID)
		}
	})

	t.Run("the MCP agent's digest shows the assistant and the job", func(t *testing.T) {
		r, err := cs.ReadResource(mctx, &mcp.ReadResourceParams{URI: mcpserver.DigestURI})
		if err != nil {
			t.Fatal(err)
		}
		var d switchboard.WorkspaceDigest
		if err := json.Unmarshal([]byte(r.Contents[0].Text), &d); err != nil {
			t.Fatal(err)
		}
		if got := digestAgentIDs(d); !got[job.ID] || !got[assistant.ID] {
			t.Errorf("the MCP agent's digest agents %v, want %s and %s", got, job.ID, assistant.ID)
		}
		// GET /digest with the same token answers the same.
		var hd switchboard.WorkspaceDigest
		if err := client.New(e.srv.URL, tok.Token, nil).Do(bg, "GET", "/api/v1/digest", nil, &hd); err != nil {
			t.Fatal(err)
		}
		if got := digestAgentIDs(hd); !got[job.ID] || !got[assistant.ID] {
			t.Errorf("GET /digest with the agent token: agents %v", got)
		}
	})

	t.Run("(4) the MCP agent cannot fill the assistant's panel: LEASE_HELD names the assistant", func(t *testing.T) {
		res := mcpCall("panel.fill", map[string]any{"instanceId": panelA, "values": map[string]any{"owner": "Claude"}})
		got := text(res)
		if !res.IsError || !strings.Contains(got, "LEASE_HELD") || !strings.Contains(got, assistant.ID) {
			t.Fatalf("the MCP agent's fill of the leased panel: error=%v %s", res.IsError, got)
		}
		if v := eval[string](t, ctx, `document.querySelector('`+owner+`').value`); v != "Alex Doe" {
			t.Fatalf("the refused fill changed the panel to %q", v)
		}
		// The tab shows who holds the panel.
		poll(t, ctx, `(l => l && !l.hidden && l.textContent === "Being edited by the assistant" && l.dataset.sbLease === "`+assistant.ID+`")(document.querySelector('[data-sb-instance="`+panelA+`"] [data-sb-lease]'))`)
	})

	t.Run("(5) interrupting the job cancels it and its session", func(t *testing.T) {
		s, err := e.admin.InterruptAgent(bg, job.ID)
		if err != nil || s.Status != switchboard.AgentCancelled {
			t.Fatalf("interrupt: %+v %v", s, err)
		}
		j, err := e.admin.Job(bg, started.JobID)
		if err != nil || j.Status != switchboard.JobCancelled {
			t.Fatalf("the job after the interrupt: %+v %v", j, err)
		}
		poll(t, ctx, `window.agentEvents.some((v) => v.agentId === "`+job.ID+`" && v.status === "cancelled")`)
	})

	close(hold)
	poll(t, ctx, `!`+chat+`.busy`)

	t.Run("(7) attribution on every ledger entry and agent event", func(t *testing.T) {
		page, err := e.admin.Activity(bg, client.ActivityQuery{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		// Every agent's act names its session: tool calls and approvals,
		// and each status transition (agent.status). The one call a person
		// made (the test, as the signed-in user, starting the job) is the
		// user's own act: no agent is acting, so it names none.
		byAgent := map[string]int{}
		for _, it := range page.Items {
			if it.Verb != "tool.call" && !strings.HasPrefix(it.Verb, "approval.") && it.Verb != "agent.status" {
				continue
			}
			var det struct {
				AgentID string `json:"agentId"`
			}
			_ = json.Unmarshal(it.Details, &det)
			if it.Verb == "tool.call" && it.Actor == "user:admin" && it.Target == "exports.build" {
				if det.AgentID != "" {
					t.Errorf("the user's own call names agent %s", det.AgentID)
				}
				continue
			}
			if det.AgentID == "" {
				t.Errorf("%s %s by %s carries no agentId: %s", it.Verb, it.Target, it.Actor, it.Details)
				continue
			}
			byAgent[it.Verb+" "+det.AgentID]++
		}
		for _, want := range []string{
			"tool.call " + assistant.ID, "tool.call " + ext.ID, "approval.decide " + ext.ID,
			"agent.status " + assistant.ID, "agent.status " + ext.ID, "agent.status " + job.ID,
		} {
			if byAgent[want] == 0 {
				t.Errorf("no %s entry in the ledger; entries by verb and agent: %v", want, byAgent)
			}
		}
		seen := eval[[]string](t, ctx, `window.agentEvents.map((v) => v.agentId ?? "")`)
		ids := map[string]bool{}
		for _, id := range seen {
			if id == "" {
				t.Errorf("an agent event without agentId (%d events)", len(seen))
			}
			ids[id] = true
		}
		for _, a := range []switchboard.AgentSession{assistant, ext, job} {
			if !ids[a.ID] {
				t.Errorf("the tab heard no agent event of %s (%s): %v", a.ID, a.Kind, seen)
			}
		}
	})
}

// lastToolResult is the text of the last message of a model request (a
// tool result), unwrapped from the loop's {"data": ...} envelope.
func lastToolResult(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	content, _ := last["content"].(string)
	if parts, ok := last["content"].([]any); ok && len(parts) > 0 {
		p, _ := parts[0].(map[string]any)
		content, _ = p["text"].(string)
	}
	var envelope struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal([]byte(content), &envelope) == nil && len(envelope.Data) > 0 {
		return string(envelope.Data)
	}
	return content
}

func digestAgentIDs(d switchboard.WorkspaceDigest) map[string]bool {
	out := map[string]bool{}
	for _, a := range d.Agents {
		out[a.ID] = true
	}
	return out
}
