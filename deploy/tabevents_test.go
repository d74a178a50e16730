package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// tabEvent is one event of a tab's stream.
type tabEvent struct {
	id, kind string
	data     json.RawMessage
}

// TestApprovalInTheTabAcrossReplicas: the tab-side approval UI whatever
// replica each request reaches (issue 16). The user's tab holds its
// stream on replica 0; an agent's call that needs approval is made
// through replica 1; the tab's stream on replica 0 gets approval.request
// (once, with a resumable id); the tab decides through replica 2; the
// caller on replica 1 is woken, the backend runs once, and the tab's
// stream gets approval.resolved.
func TestApprovalInTheTabAcrossReplicas(t *testing.T) {
	c := newCluster(t, 3)
	be := newBackend(t)
	ctx := context.Background()
	c.register(be.tools(), "test.send")

	// A tab of the daemon's user, whose agents' approvals it may decide.
	cred, err := c.at(2).CreateSession(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.at(0).Tab(cred).Events(sctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	events := make(chan tabEvent, 64)
	go func() {
		defer close(events)
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			events <- tabEvent{ev.ID, ev.Kind, ev.Data}
		}
	}()
	eventually(t, 30*time.Second, "the tab's stream is recorded on replica 0", func() (bool, string) {
		h := c.holder(t, cred.SessionID)
		return h == 0, fmt.Sprint("holder ", h)
	})
	// await reads the tab's events until one of kind for invocation inv,
	// counting every event of inv it passes (seen).
	seen := map[string]int{}
	await := func(kind, inv string) tabEvent {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("the tab's stream on replica 0 ended waiting for %s", kind)
				}
				var body struct {
					InvocationID string `json:"invocationId"`
				}
				if json.Unmarshal(ev.data, &body) == nil && body.InvocationID == inv {
					seen[ev.kind]++
					if ev.kind == kind {
						return ev
					}
				}
			case <-timeout:
				t.Fatalf("the tab on replica 0 did not get %s for %s", kind, inv)
			}
		}
	}

	tok, err := c.lb().CreateToken(ctx, client.TokenRequest{Agent: "bot-tab"})
	if err != nil {
		t.Fatal(err)
	}
	agent := client.New("http://"+c.reps[1].addr, tok.Token, nil) // the caller waits on replica 1
	resp, err := agent.CallToolWith(ctx, "test.send", json.RawMessage(`{"tab":"decides"}`), client.CallOptions{}, client.CallExtra{Async: true})
	if err != nil || resp.Status != switchboard.StatusAwaitingApproval || resp.InvocationID == "" {
		t.Fatalf("the agent's call through replica 1: %+v %v", resp, err)
	}
	req := await("approval.request", resp.InvocationID)
	var shown struct {
		ApprovalID string `json:"approvalId"`
		Tool       string `json:"tool"`
	}
	if err := json.Unmarshal(req.data, &shown); err != nil || shown.ApprovalID == "" || shown.Tool != "test.send" || req.id == "" {
		t.Fatalf("approval.request on the tab's stream: %+v %s", req, req.data)
	}

	// The tab decides through replica 2, with its own session token.
	tab := client.New("http://"+c.reps[2].addr, cred.SessionToken, nil)
	a, err := tab.Decide(ctx, shown.ApprovalID, client.Decision{Approve: true, Reason: "from the tab"})
	if err != nil || a.Status != switchboard.ApprovalApproved || a.DecidedBy != "user:admin" {
		t.Fatalf("the tab's decision through replica 2: %+v %v", a, err)
	}
	eventually(t, 60*time.Second, "the call made through replica 1 completes", func() (bool, string) {
		inv, err := c.at(1).GetInvocation(ctx, resp.InvocationID)
		return err == nil && inv.Status == switchboard.StatusSucceeded, fmt.Sprintf("%+v %v", inv.Status, err)
	})
	if n := be.count(`{"tab":"decides"}`); n != 1 {
		t.Fatalf("the backend ran the approved call %d times, want once", n)
	}
	res := await("approval.resolved", resp.InvocationID)
	if res.id == "" {
		t.Fatalf("approval.resolved has no resumable id: %+v", res)
	}
	// Told once: one request, then one resolution, nothing between.
	if seen["approval.request"] != 1 || seen["approval.resolved"] != 1 || len(seen) != 2 {
		t.Fatalf("the tab's events for the call: %v, want one approval.request and one approval.resolved", seen)
	}
}

// TestRunBoundToATabOnAnotherReplica: the assistant's run started on
// replica 1 for a tab whose stream replica 0 holds sends its browser call
// to that tab (issue 16), though another tab, on replica 2, advertises
// the same tool (so an unbound call could not choose); the tab's result
// is POSTed through replica 2 and the run finishes.
func TestRunBoundToATabOnAnotherReplica(t *testing.T) {
	if os.Getenv(dsnEnv) == "" || bin == "" {
		t.Skipf("set %s to run replicas on Postgres", dsnEnv)
	}
	llm := modeltest.NewOpenAI(t,
		modeltest.Turn{Text: "Going.", ToolCalls: []modeltest.Call{{ID: "c1", Name: "nav_goto", Args: `{"page":"media"}`}}},
		modeltest.Turn{Text: "Done."})
	cfg := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "models:\n  default:\n    provider: openai\n    model: scripted\n    baseURL: %s\n", llm.BaseURL()), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 3, "--config", cfg)
	ctx := context.Background()
	nav := switchboard.Tool{Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`)}
	var creds []client.SessionCredentials
	var streams []*tabStream
	for _, at := range []int{0, 2} {
		cred, err := c.at(at).CreateSession(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		tab := c.at(at).Tab(cred)
		streams = append(streams, newTabStream(t, tab))
		if _, err := tab.Advertise(ctx, []switchboard.Tool{nav}); err != nil {
			t.Fatal(err)
		}
		creds = append(creds, cred)
	}
	for i, cred := range creds {
		want := []int{0, 2}[i]
		eventually(t, 30*time.Second, "the tabs' streams are recorded", func() (bool, string) {
			h := c.holder(t, cred.SessionID)
			return h == want, fmt.Sprint("holder ", h)
		})
	}
	// Replica 1 sees both tabs: the tool is live in two of them.
	eventually(t, 30*time.Second, "replica 1 hears of both tabs", func() (bool, string) {
		list, err := c.at(1).Sessions(ctx)
		live := 0
		for _, s := range list {
			if s.Connected && len(s.Tools) == 1 {
				live++
			}
		}
		return err == nil && live == 2, fmt.Sprint(live, err)
	})

	body, _ := json.Marshal(map[string]string{"threadId": "chat-bound", "sessionId": creds[0].SessionID, "input": "open the media page"})
	var started struct{ RunID string }
	if err := c.at(1).Do(ctx, "POST", "/api/v1/runs", json.RawMessage(body), &started); err != nil || started.RunID == "" {
		t.Fatalf("POST /runs on replica 1: %+v %v", started, err)
	}
	select {
	case req := <-streams[0].requests:
		if req.Tool != "nav.goto" || req.RunID != started.RunID {
			t.Fatalf("the bound tab on replica 0 got %+v", req)
		}
		tab := client.New("http://"+c.reps[2].addr, token, nil).Tab(creds[0])
		if _, err := tab.PostResult(ctx, req.RunID, switchboard.BrowserActionResult{
			InvocationID: req.InvocationID, OK: true, Result: json.RawMessage(`{"page":"media"}`)}); err != nil {
			t.Fatal(err)
		}
	case req := <-streams[1].requests:
		t.Fatalf("the run's call went to the other tab, on replica 2: %+v", req)
	case <-time.After(60 * time.Second):
		t.Fatal("the run's browser call reached no tab")
	}
	eventually(t, 60*time.Second, "the run finishes", func() (bool, string) {
		var info struct{ Status string }
		err := c.at(1).Do(ctx, "GET", "/api/v1/runs/"+started.RunID, nil, &info)
		return err == nil && info.Status == string(switchboard.RunSucceeded), fmt.Sprint(info.Status, err)
	})
	if n := len(llm.Requests()); n != 2 {
		t.Fatalf("the model was asked %d times, want 2 (the call, then its result)", n)
	}

	// A call naming only the run (POST /tools/{name}/call with runId, as
	// a tool the run drives makes it) goes to the run's tab on replica 0:
	// made on the run's replica (its binding) and on another (the run's
	// stored tab); either way not ambiguous between the two tabs.
	for _, at := range []int{1, 2} {
		page := fmt.Sprintf("from-%d", at)
		done := make(chan error, 1)
		go func() {
			resp, err := c.at(at).CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"`+page+`"}`), client.CallOptions{RunID: started.RunID})
			if err == nil && resp.Status != switchboard.StatusSucceeded {
				err = fmt.Errorf("status %s", resp.Status)
			}
			done <- err
		}()
		select {
		case req := <-streams[0].requests:
			if !strings.Contains(string(req.Input), page) || req.RunID != started.RunID {
				t.Fatalf("the run's tab got %+v", req)
			}
			if _, err := c.at(0).Tab(creds[0]).PostResult(ctx, req.RunID, switchboard.BrowserActionResult{
				InvocationID: req.InvocationID, OK: true, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		case req := <-streams[1].requests:
			t.Fatalf("a call naming the run through replica %d went to the other tab: %+v", at, req)
		case err := <-done:
			t.Fatalf("a call naming the run through replica %d ended before reaching the tab: %v", at, err)
		case <-time.After(60 * time.Second):
			t.Fatalf("a call naming the run through replica %d reached no tab", at)
		}
		if err := <-done; err != nil {
			t.Fatalf("a call naming the run through replica %d: %v", at, err)
		}
	}
}
