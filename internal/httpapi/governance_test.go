package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/job"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/sqlite"
)

// gov is the API with governance over real SQLite: tokens, approvals
// (whose events reach live tabs), the ledger, jobs and a small rate limit.
type gov struct {
	srv     *httptest.Server
	admin   *client.Client
	store   *sqlite.Store
	ledger  *activity.Ledger
	entries chan switchboard.ActivityEntry // every tool.call entry, as written
	release chan struct{}                  // lets tasks.slow and deck.export finish
	started chan struct{}
	broker  *broker.Broker
}

func newGov(t *testing.T) *gov {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := &gov{store: st, entries: make(chan switchboard.ActivityEntry, 64), release: make(chan struct{}), started: make(chan struct{}, 8)}
	if g.ledger, err = activity.New(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(ctx, st, &registry.Options{Audit: g.ledger.RecordToolChange})
	if err != nil {
		t.Fatal(err)
	}
	sm, err := session.New(session.Options{Store: st, Heartbeat: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := approval.New(approval.Options{Store: st, Ledger: g.ledger,
		Floor: map[switchboard.Class]switchboard.Approval{switchboard.ClassMutate: switchboard.ApprovalHITL}, Notify: approval.TabNotifier(sm.Send)})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := job.New(job.Options{Store: st, Ledger: g.ledger})
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{Store: st, Registry: reg, Browser: sm, Policy: approvals, Jobs: jobs,
		RateLimit: &broker.RateLimit{PerPrincipal: ratelimit.Rate{PerSecond: 0.001, Burst: 30}},
		OnActivity: func(e switchboard.ActivityEntry) {
			g.ledger.Observe(e)
			g.entries <- e
		}})
	g.broker = b
	no := false
	for _, tool := range []switchboard.Tool{
		{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)},
		{Name: "tasks.list", Description: "List the tasks of a project.", Class: switchboard.ClassRead},
		{Name: "tasks.delete", Description: "Delete a task for good.", Class: switchboard.ClassMutate},
		{Name: "tasks.slow", Description: "A slow read.", Class: switchboard.ClassRead},
		{Name: "admin.purge", Description: "Purge all tasks.", Class: switchboard.ClassMutate, Approval: switchboard.ApprovalUserOnly},
		{Name: "media.upload", Description: "Upload an image.", Class: switchboard.ClassMutate, Reversible: &no},
		{Name: "deck.export", Description: "Export a deck.", Class: switchboard.ClassJob, Approval: switchboard.ApprovalNone},
	} {
		tool.Binding = &switchboard.Binding{Go: true}
		if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
			t.Fatal(err)
		}
		name := tool.Name
		b.Handle(name, func(ctx context.Context, in json.RawMessage) (any, error) {
			if name == "tasks.slow" || name == "deck.export" {
				g.started <- struct{}{}
				select {
				case <-g.release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return map[string]any{"ok": true, "tool": name, "input": in}, nil
		})
	}
	h, err := httpapi.New(httpapi.Options{Registry: reg, AdminToken: token, Broker: b, Sessions: sm,
		Governance: &httpapi.Governance{
			Tokens: scope.NewTokens(st, nil), Approvals: approvals, Ledger: g.ledger, Jobs: jobs,
			SessionUser: func(ctx context.Context, id string) (string, error) {
				s, err := st.SessionGet(ctx, id)
				return s.Principal, err
			},
		}})
	if err != nil {
		t.Fatal(err)
	}
	g.srv = httptest.NewServer(h)
	g.admin = client.New(g.srv.URL, token, nil)
	t.Cleanup(func() {
		sm.Shutdown()
		g.srv.Close()
		jobs.Close()
		b.Close()
		st.Close()
	})
	return g
}

// agent mints a token for name and returns its client.
func (g *gov) agent(t *testing.T, name string, allow, deny []string) (*client.Client, client.TokenCreated) {
	t.Helper()
	tok, err := g.admin.CreateToken(context.Background(), client.TokenRequest{Agent: name, Allow: allow, Deny: deny})
	if err != nil {
		t.Fatal(err)
	}
	return client.New(g.srv.URL, tok.Token, nil), tok
}

// raw sends a request with bearer tok and returns status, headers and body.
func (g *gov) raw(t *testing.T, tok, method, path, body string, hdr map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, g.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, resp.Header, m
}

// sameAsUnknown checks that every tool route answers an agent's request
// for each hidden tool byte for byte as it answers for unknown (a name
// that does not exist), once the name is swapped.
func sameAsUnknown(t *testing.T, g *gov, token string, hidden []string, unknown string) {
	t.Helper()
	routes := []struct{ method, path, body string }{
		{"GET", "/api/v1/tools/%s", ""},
		{"POST", "/api/v1/tools/%s/call", `{"input":{}}`},
		{"POST", "/api/v1/tools/%s/call", `{"input":{},"sessionId":"ses_none"}`},
	}
	for _, rt := range routes {
		wantSt, _, want := g.raw(t, token, rt.method, fmt.Sprintf(rt.path, unknown), rt.body, nil)
		wantJSON, _ := json.Marshal(want)
		if code(want) != "TOOL_NOT_FOUND" && !strings.Contains(rt.body, "sessionId") {
			t.Fatalf("%s %s of an unknown name: %d %s", rt.method, rt.path, wantSt, wantJSON)
		}
		for _, name := range hidden {
			st, _, got := g.raw(t, token, rt.method, fmt.Sprintf(rt.path, name), rt.body, nil)
			gotJSON, _ := json.Marshal(got)
			if st != wantSt || strings.ReplaceAll(string(gotJSON), name, unknown) != string(wantJSON) {
				t.Errorf("%s %s for hidden %s: %d %s; an unknown name gets %d %s", rt.method, rt.path, name, st, gotJSON, wantSt, wantJSON)
			}
		}
	}
	_, _, found := g.raw(t, token, "POST", "/api/v1/tools/search", `{"query":"`+strings.Join(hidden, " ")+`","limit":100}`, nil)
	items, _ := found["items"].([]any)
	for _, it := range items {
		if n, _ := it.(map[string]any)["name"].(string); slices.Contains(hidden, n) {
			t.Errorf("search shows hidden %s", n)
		}
	}
}

func code(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func names(ts []switchboard.Tool) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

// Rule 3: scopes are enforced before execution and in listing, search and
// describe; agent tokens are stored hashed, listed without secrets and
// refused at once when revoked.
func TestScopedAgentToken(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	ag, tok := g.agent(t, "planner", []string{"tasks.*", "admin.*"}, []string{"*.delete"})
	if !strings.HasPrefix(tok.Token, "sbt_") || tok.ID == "" {
		t.Fatalf("created %+v", tok)
	}
	m, err := ag.ListTools(ctx, client.ListOptions{})
	if err != nil || names(m.Tools) != "tasks.create,tasks.list,tasks.slow" {
		t.Fatalf("the agent lists %q (%v); want only what it may call", names(m.Tools), err)
	}
	res, err := ag.SearchTools(ctx, switchboard.SearchQuery{Query: "delete purge upload task"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Items {
		if h.Name == "tasks.delete" || h.Name == "admin.purge" || h.Name == "media.upload" {
			t.Fatalf("search showed the agent %s", h.Name)
		}
	}
	if _, err := ag.GetTool(ctx, "tasks.delete"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("describe a denied tool: %v", err)
	}
	// Out of scope, or user-only, reads exactly like a name that does not
	// exist: same code, same message, no scope lists. (This answered
	// FORBIDDEN "outside the scope of agent:planner" with allow and deny
	// until the registry became the one place visibility is decided.)
	hidden := []string{"tasks.delete", "admin.purge", "media.upload"}
	sameAsUnknown(t, g, tok.Token, hidden, "tasks.nope")
	for _, name := range hidden {
		if _, err := ag.CallTool(ctx, name, nil, client.CallOptions{}); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
			t.Errorf("call %s: %v, want TOOL_NOT_FOUND", name, err)
		}
	}
	if es := g.toolCalls(t); len(es) != 0 {
		t.Fatalf("refused calls were recorded: %+v", es)
	}
	// User routes refuse agent tokens with FORBIDDEN.
	for _, r := range [][2]string{{"POST", "/api/v1/tools"}, {"GET", "/api/v1/tokens"}, {"GET", "/api/v1/activity"}, {"POST", "/api/v1/sessions"}} {
		if st, _, body := g.raw(t, tok.Token, r[0], r[1], `{}`, nil); st != http.StatusForbidden || code(body) != "FORBIDDEN" {
			t.Errorf("%s %s with an agent token: %d %v", r[0], r[1], st, body)
		}
	}
	// Listed without secrets.
	st, _, body := g.raw(t, token, "GET", "/api/v1/tokens", "", nil)
	if b, _ := json.Marshal(body); st != 200 || strings.Contains(string(b), tok.Token) || strings.Contains(string(b), "hash") {
		t.Fatalf("token list: %d %s", st, b)
	}
	if _, err := g.admin.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ag.ListTools(ctx, client.ListOptions{}); switchboard.CodeOf(err) != switchboard.CodeUnauthorized {
		t.Fatalf("a revoked token: %v", err)
	}
}

func (g *gov) toolCalls(t *testing.T) []switchboard.ActivityEntry {
	t.Helper()
	es, err := g.store.ActivityList(context.Background(), switchboard.ActivityFilter{Verb: activity.VerbToolCall})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// Rule 1 over HTTP and the SDK. An external agent's async call answers 202
// awaiting_approval and reaches no tab: a tab may not decide it (an agent
// can mint or steal a session), the user's token does. The built-in
// assistant's call in a tab is announced to that tab only, which decides it
// with its session token; another user's tab can neither see nor decide it.
func TestApprovalThroughTheTab(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	ag, tok := g.agent(t, "planner", nil, nil)
	cred, err := g.admin.CreateSession(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := g.admin.CreateSession(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	tab := g.admin.Tab(cred)
	stream, err := tab.Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if ev, err := stream.Next(); err != nil || ev.Kind != session.KindReady {
		t.Fatalf("first frame %+v %v", ev, err)
	}

	// An external agent's call, even one naming alice's tab.
	resp, err := ag.CallToolWith(ctx, "tasks.create", json.RawMessage(`{"title":"Ship","approved":true}`),
		client.CallOptions{SessionID: cred.SessionID}, client.CallExtra{Async: true})
	if err != nil || resp.Status != switchboard.StatusAwaitingApproval || resp.InvocationID == "" {
		t.Fatalf("async call: %+v %v", resp, err)
	}
	inv, err := ag.GetInvocation(ctx, resp.InvocationID)
	if err != nil || inv.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("poll: %+v %v", inv, err)
	}
	mine, err := ag.Approvals(ctx, client.ApprovalQuery{})
	if err != nil || len(mine) != 1 || mine[0].InvocationID != resp.InvocationID {
		t.Fatalf("the agent's own approvals: %+v %v", mine, err)
	}
	agentApproval := mine[0].ID
	if st, _, body := g.raw(t, tok.Token, "POST", "/api/v1/approvals/"+agentApproval, `{"decision":"approve"}`, nil); st != 403 || code(body) != "FORBIDDEN" {
		t.Fatalf("the agent approving its own call: %d %v", st, body)
	}
	// One the tab may not decide is as unknown to it as an id that does
	// not exist: the same status, code and message (security review F4).
	for _, id := range []string{agentApproval, "apr_nope"} {
		for _, m := range []string{"POST", "GET"} {
			st, _, body := g.raw(t, cred.SessionToken, m, "/api/v1/approvals/"+id, `{"decision":"approve"}`, nil)
			msg, _ := body["error"].(map[string]any)["message"].(string)
			if st != 404 || code(body) != "NOT_FOUND" || msg != fmt.Sprintf("no approval %q", id) {
				t.Fatalf("a tab's %s of approval %s: %d %v", m, id, st, body)
			}
		}
	}
	if st, _, body := g.raw(t, cred.SessionToken, "GET", "/api/v1/approvals", "", nil); st != 200 || len(body["items"].([]any)) != 0 {
		t.Fatalf("the tab lists an external agent's approval: %d %v", st, body)
	}
	a, err := g.admin.Decide(ctx, agentApproval, client.Decision{Approve: true})
	if err != nil || a.Status != switchboard.ApprovalApproved || a.DecidedBy != "user:admin" {
		t.Fatalf("the user's decision: %+v %v", a, err)
	}
	if e := <-g.entries; e.Target != "tasks.create" || e.Actor != "agent:planner" {
		t.Fatalf("entry %+v", e)
	}
	inv, _ = ag.GetInvocation(ctx, resp.InvocationID)
	if inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("after approval: %+v", inv)
	}

	// The tab's own assistant calls in that tab.
	asst := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "assistant"}
	done := make(chan switchboard.Invocation, 1)
	go func() {
		inv, _ := g.broker.Call(ctx, broker.CallRequest{Tool: "tasks.create", Input: json.RawMessage(`{"title":"Ship it"}`), SessionID: cred.SessionID, Caller: &asst})
		done <- inv
	}()
	// The first event after ready is the assistant's: the external agent's
	// request above never reached the tab.
	ev, err := stream.Next()
	if err != nil || ev.Kind != approval.EventRequest || ev.ID == "" {
		t.Fatalf("tab event %+v %v", ev, err)
	}
	var req approval.RequestEvent
	if err := json.Unmarshal(ev.Data, &req); err != nil || req.Tool != "tasks.create" || req.Agent != switchboard.Assistant().String() ||
		req.SessionID != cred.SessionID || req.Class != switchboard.ClassMutate || req.ExpiresAt.IsZero() || req.Summary == "" || !strings.Contains(string(req.Input), "Ship it") {
		t.Fatalf("approval.request %s", ev.Data)
	}
	if st, _, body := g.raw(t, bob.SessionToken, "POST", "/api/v1/approvals/"+req.ApprovalID, `{"decision":"deny"}`, nil); st != 404 || code(body) != "NOT_FOUND" {
		t.Fatalf("another user's tab deciding: %d %v", st, body)
	}
	if st, _, _ := g.raw(t, bob.SessionToken, "GET", "/api/v1/approvals/"+req.ApprovalID, "", nil); st != 404 {
		t.Fatalf("another user's tab reading it: %d", st)
	}
	st, _, body := g.raw(t, cred.SessionToken, "POST", "/api/v1/approvals/"+req.ApprovalID, `{"decision":"approve","reason":"looks right"}`, nil)
	if st != 200 || body["status"] != "approved" || body["decidedBy"] != "user:alice" || body["channel"] != "sdk" {
		t.Fatalf("the tab's decision: %d %v", st, body)
	}
	if inv := <-done; inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("the assistant's call after approval: %+v", inv)
	}
	<-g.entries
	ev, err = stream.Next()
	if err != nil || ev.Kind != approval.EventResolved || !bytes.Contains(ev.Data, []byte(`"status":"approved"`)) {
		t.Fatalf("resolved event %+v %v", ev, err)
	}
	// Another agent cannot read this agent's invocation.
	other, _ := g.agent(t, "other", nil, nil)
	if _, err := other.GetInvocation(ctx, resp.InvocationID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("another agent's invocation: %v", err)
	}
	// Decided approvals are listed by status; deciding again conflicts.
	all, _ := g.admin.Approvals(ctx, client.ApprovalQuery{Status: "approved"})
	if len(all) != 2 {
		t.Fatalf("approved list %+v", all)
	}
	if _, err := g.admin.Decide(ctx, req.ApprovalID, client.Decision{Approve: false}); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("deciding twice: %v", err)
	}
}

// RELIABILITY rows 10 and 11 over HTTP.
func TestIdempotencyKeyHeader(t *testing.T) {
	g := newGov(t)
	hdr := map[string]string{"Idempotency-Key": "create-1"}
	st1, _, a := g.raw(t, token, "POST", "/api/v1/tools/tasks.create/call", `{"input":{"title":"A"}}`, hdr)
	st2, _, b := g.raw(t, token, "POST", "/api/v1/tools/tasks.create/call", `{"input": {"title": "A"}}`, hdr)
	if st1 != 200 || st2 != 200 || a["invocationId"] != b["invocationId"] {
		t.Fatalf("replay: %d %v / %d %v", st1, a, st2, b)
	}
	st, _, c := g.raw(t, token, "POST", "/api/v1/tools/tasks.create/call", `{"input":{"title":"B"}}`, hdr)
	if st != http.StatusUnprocessableEntity || code(c) != "IDEMPOTENCY_CONFLICT" {
		t.Fatalf("same key, other body: %d %v", st, c)
	}
	if n := len(g.toolCalls(t)); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
	// In flight: 409.
	slow := map[string]string{"Idempotency-Key": "slow-1"}
	done := make(chan int, 1)
	go func() {
		st, _, _ := g.raw(t, token, "POST", "/api/v1/tools/tasks.slow/call", `{}`, slow)
		done <- st
	}()
	<-g.started
	if st, _, body := g.raw(t, token, "POST", "/api/v1/tools/tasks.slow/call", `{}`, slow); st != http.StatusConflict || code(body) != "CONFLICT" {
		t.Fatalf("in-flight duplicate: %d %v", st, body)
	}
	close(g.release)
	if st := <-done; st != 200 {
		t.Fatalf("first call %d", st)
	}
}

// RELIABILITY row 22 over HTTP: 429 with Retry-After.
func TestRateLimitedAnswer(t *testing.T) {
	g := newGov(t)
	_, tok := g.agent(t, "runaway", nil, nil)
	var st int
	var h http.Header
	var body map[string]any
	for i := 0; i < 31; i++ {
		st, h, body = g.raw(t, tok.Token, "POST", "/api/v1/tools/tasks.list/call", `{}`, nil)
	}
	d, _ := body["error"].(map[string]any)["details"].(map[string]any)
	if st != http.StatusTooManyRequests || code(body) != "RATE_LIMITED" || h.Get("Retry-After") == "" || d["retryAfterMs"] == nil {
		t.Fatalf("31st call: %d %v %v", st, h, body)
	}
}

// The ledger's routes: tail and cursor paging with filters, a live
// follow, verification, reversal refused for irreversible entries, and no
// route that edits or deletes.
func TestActivityRoutes(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	for _, title := range []string{"a", "b", "c"} {
		if _, err := g.admin.CallTool(ctx, "tasks.create", json.RawMessage(`{"title":"`+title+`","password":"hunter2"}`), client.CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.admin.CallTool(ctx, "media.upload", nil, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	page, err := g.admin.Activity(ctx, client.ActivityQuery{Verb: "tool.call", Limit: 2})
	if err != nil || len(page.Items) != 2 || page.Items[1].Target != "media.upload" {
		t.Fatalf("tail: %+v %v", page, err)
	}
	first, err := g.admin.Activity(ctx, client.ActivityQuery{After: "0", Limit: 3})
	if err != nil || len(first.Items) != 3 || first.NextCursor == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	next, err := g.admin.Activity(ctx, client.ActivityQuery{After: first.NextCursor, Limit: 100})
	if err != nil || len(next.Items) == 0 || next.Items[0].ID != first.Items[2].ID+1 {
		t.Fatalf("next page: %+v %v", next, err)
	}
	if _, err := g.admin.Activity(ctx, client.ActivityQuery{Since: "yesterday"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("bad since: %v", err)
	}
	// No update or delete.
	for _, m := range []string{"PUT", "PATCH", "DELETE"} {
		if st, _, body := g.raw(t, token, m, "/api/v1/activity/1", `{}`, nil); st != 404 || code(body) != "NOT_FOUND" {
			t.Errorf("%s /activity/1: %d %v", m, st, body)
		}
	}
	rep, err := g.admin.VerifyActivity(ctx)
	if err != nil || !rep.OK || rep.Entries == 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	last := page.Items[1].ID
	if _, err := g.admin.Reverse(ctx, last, false); switchboard.CodeOf(err) != switchboard.CodeConflict || !strings.Contains(err.Error(), "irreversible") {
		t.Fatalf("reverse an irreversible entry: %v", err)
	}
	// Follow: entries after the cursor, then new ones, as SSE.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan switchboard.ActivityEntry, 16)
	go func() {
		_ = g.admin.FollowActivity(fctx, client.ActivityQuery{After: page.NextCursor, Verb: "tool.call"}, func(e switchboard.ActivityEntry) error {
			got <- e
			return nil
		})
	}()
	if _, err := g.admin.CallTool(ctx, "tasks.list", nil, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := <-got; e.Target != "tasks.list" {
		t.Fatalf("followed %+v", e)
	}
}

// Jobs over HTTP: the call returns a job id, GET reports it, cancel ends
// it; another agent cannot see it.
func TestJobRoutes(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	ag, _ := g.agent(t, "exporter", nil, nil)
	resp, err := ag.CallTool(ctx, "deck.export", nil, client.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		JobID string `json:"jobId"`
	}
	_ = json.Unmarshal(resp.Result, &h)
	<-g.started
	j, err := ag.Job(ctx, h.JobID)
	if err != nil || j.Status != switchboard.JobRunning || j.Caller != "agent:exporter" {
		t.Fatalf("job %+v %v", j, err)
	}
	other, _ := g.agent(t, "other", nil, nil)
	if _, err := other.Job(ctx, h.JobID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("another agent's job: %v", err)
	}
	if _, err := other.CancelJob(ctx, h.JobID); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("another agent cancelling: %v", err)
	}
	j, err = ag.CancelJob(ctx, h.JobID)
	if err != nil || j.Status != switchboard.JobCancelled {
		t.Fatalf("cancel: %+v %v", j, err)
	}
	if _, err := g.admin.CancelJob(ctx, h.JobID); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("cancel twice: %v", err)
	}
}

// The session routes write session.open and session.close entries.
func TestSessionEntries(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	cred, err := g.admin.CreateSession(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.admin.CloseSession(ctx, cred.SessionID); err != nil {
		t.Fatal(err)
	}
	page, _ := g.admin.Activity(ctx, client.ActivityQuery{})
	var verbs []string
	for _, e := range page.Items {
		if e.Target == cred.SessionID && e.Actor == "user:admin" {
			verbs = append(verbs, e.Verb)
		}
	}
	if strings.Join(verbs, ",") != "session.open,session.close" {
		t.Fatalf("session entries %v", verbs)
	}
}

// A token.create entry names the token by its id (not a secret) and never
// carries the token itself.
func TestTokenEntryKeepsTheID(t *testing.T) {
	g := newGov(t)
	_, tok := g.agent(t, "planner", []string{"tasks.*"}, nil)
	page, err := g.admin.Activity(context.Background(), client.ActivityQuery{Verb: "token.create", Limit: 10})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("token.create entries: %+v %v", page, err)
	}
	var d struct{ TokenID string }
	if err := json.Unmarshal(page.Items[0].Details, &d); err != nil || d.TokenID != tok.ID {
		t.Errorf("details %s: tokenId %q, want %q (%v)", page.Items[0].Details, d.TokenID, tok.ID, err)
	}
	secret := tok.Token[strings.IndexByte(tok.Token, '.')+1:]
	if b, _ := json.Marshal(page.Items[0]); strings.Contains(string(b), secret) {
		t.Errorf("the token's secret is in the ledger: %s", b)
	}
}

// A session opened for "user:alice" (the app naming the user with its kind)
// decides as user:alice, not user:user:alice.
func TestTabDecisionNamesTheUserOnce(t *testing.T) {
	for _, user := range []string{"alice", "user:alice"} {
		t.Run(user, func(t *testing.T) {
			g := newGov(t)
			ctx := context.Background()
			cred, err := g.admin.CreateSession(ctx, user)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := g.admin.Tab(cred).Events(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			if ev, err := stream.Next(); err != nil || ev.Kind != session.KindReady {
				t.Fatalf("first frame %+v %v", ev, err)
			}
			asst := switchboard.Assistant()
			done := make(chan switchboard.Invocation, 1)
			go func() {
				inv, _ := g.broker.Call(ctx, broker.CallRequest{Tool: "tasks.create", Input: json.RawMessage(`{"title":"Ship it"}`), SessionID: cred.SessionID, Caller: &asst})
				done <- inv
			}()
			ev, err := stream.Next()
			if err != nil || ev.Kind != approval.EventRequest {
				t.Fatalf("tab event %+v %v", ev, err)
			}
			var req approval.RequestEvent
			if err := json.Unmarshal(ev.Data, &req); err != nil {
				t.Fatal(err)
			}
			st, _, body := g.raw(t, cred.SessionToken, "POST", "/api/v1/approvals/"+req.ApprovalID, `{"decision":"approve"}`, nil)
			if st != 200 || body["decidedBy"] != "user:alice" {
				t.Fatalf("the tab's decision: %d %v", st, body)
			}
			if inv := <-done; inv.Status != switchboard.StatusSucceeded {
				t.Fatalf("the assistant's call after approval: %+v", inv)
			}
			a, err := g.admin.Approval(ctx, req.ApprovalID)
			if err != nil || a.DecidedBy != "user:alice" {
				t.Fatalf("the stored decision: %+v %v", a, err)
			}
		})
	}
}

// Issue 25: an agent acting for alice asks alice. Bob's token and bob's
// tab cannot see or decide the request (NOT_FOUND); the operator's
// decision is recorded as an override.
func TestApprovalForTheUserActedFor(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	mint := func(user string) (*client.Client, client.TokenCreated) {
		tok, err := g.admin.CreateToken(ctx, client.TokenRequest{Agent: "planner", User: user})
		if err != nil {
			t.Fatal(err)
		}
		return client.New(g.srv.URL, tok.Token, nil), tok
	}
	forAlice, aliceTok := mint("user:alice")
	forBob, _ := mint("bob")
	if aliceTok.User != "user:alice" || aliceTok.ActsFor != "user:alice" {
		t.Fatalf("minted %+v", aliceTok.AgentToken)
	}
	if st, _, body := g.raw(t, token, "POST", "/api/v1/tokens", `{"agent":"x","user":"agent:planner"}`, nil); st != 400 || code(body) != "INVALID_INPUT" {
		t.Fatalf("a token acting for an agent: %d %v", st, body)
	}
	resp, err := forAlice.CallToolWith(ctx, "tasks.create", json.RawMessage(`{"title":"Ship"}`), client.CallOptions{}, client.CallExtra{Async: true})
	if err != nil || resp.Status != switchboard.StatusAwaitingApproval {
		t.Fatalf("alice's agent's call: %+v %v", resp, err)
	}
	mine, err := forAlice.Approvals(ctx, client.ApprovalQuery{})
	if err != nil || len(mine) != 1 || mine[0].User != "user:alice" {
		t.Fatalf("alice's agent's approvals: %+v %v", mine, err)
	}
	id := mine[0].ID
	if theirs, err := forBob.Approvals(ctx, client.ApprovalQuery{}); err != nil || len(theirs) != 0 {
		t.Fatalf("bob's agent lists %+v %v", theirs, err)
	}
	bobTab, err := g.admin.CreateSession(ctx, "user:bob")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{bobTab.SessionToken} {
		if st, _, body := g.raw(t, tok, "GET", "/api/v1/approvals/"+id, "", nil); st != 404 || code(body) != "NOT_FOUND" {
			t.Errorf("bob's tab reads alice's approval: %d %v", st, body)
		}
		if st, _, body := g.raw(t, tok, "POST", "/api/v1/approvals/"+id, `{"decision":"approve"}`, nil); st != 404 || code(body) != "NOT_FOUND" {
			t.Errorf("bob's tab decides alice's approval: %d %v", st, body)
		}
	}
	a, err := g.admin.Decide(ctx, id, client.Decision{Reason: "not now"})
	if err != nil || a.DecidedBy != switchboard.Operator {
		t.Fatalf("the operator decides: %+v %v", a, err)
	}
	es, err := g.store.ActivityList(ctx, switchboard.ActivityFilter{Verb: activity.VerbApprovalDecide})
	if err != nil || len(es) != 1 || !strings.Contains(string(es[0].Details), `"override":true`) || !strings.Contains(string(es[0].Details), `"user":"user:alice"`) {
		t.Fatalf("the operator's decision entry: %+v %v", es, err)
	}
}

// One agent name acting for two users is two agents to the record routes:
// neither reads the other's invocations or jobs (NOT_FOUND, as an unknown
// id), lists them, or cancels them; the operator reads both.
func TestRecordsOfOneAgentNameForTwoUsers(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	mint := func(user string) string {
		tok, err := g.admin.CreateToken(ctx, client.TokenRequest{Agent: "planner", User: user})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	alice, bob, op := mint("user:alice"), mint("user:bob"), mint("")
	st, _, body := g.raw(t, alice, "POST", "/api/v1/tools/tasks.list/call", `{}`, nil)
	inv, _ := body["invocationId"].(string)
	if st != 200 || inv == "" {
		t.Fatalf("alice's agent's call: %d %v", st, body)
	}
	st, _, body = g.raw(t, alice, "GET", "/api/v1/invocations/"+inv, "", nil)
	if st != 200 || body["user"] != "user:alice" || body["caller"] != "agent:planner" {
		t.Fatalf("alice's agent reads its call: %d %v", st, body)
	}
	_, _, unknown := g.raw(t, bob, "GET", "/api/v1/invocations/nope", "", nil)
	unknownJSON, _ := json.Marshal(unknown)
	for who, tok := range map[string]string{"bob's planner": bob, "the operator's planner": op} {
		st, _, body := g.raw(t, tok, "GET", "/api/v1/invocations/"+inv, "", nil)
		got, _ := json.Marshal(body)
		if st != 404 || strings.ReplaceAll(string(got), inv, "nope") != string(unknownJSON) {
			t.Errorf("%s reads alice's call: %d %s; an unknown id gets %s", who, st, got, unknownJSON)
		}
		if _, _, list := g.raw(t, tok, "GET", "/api/v1/invocations", "", nil); strings.Contains(fmt.Sprint(list), inv) {
			t.Errorf("%s lists alice's call: %v", who, list)
		}
	}
	if _, _, list := g.raw(t, alice, "GET", "/api/v1/invocations", "", nil); !strings.Contains(fmt.Sprint(list), inv) {
		t.Errorf("alice's agent does not list its call: %v", list)
	}
	if st, _, _ := g.raw(t, token, "GET", "/api/v1/invocations/"+inv, "", nil); st != 200 {
		t.Errorf("the operator reads alice's call: %d", st)
	}

	st, _, body = g.raw(t, alice, "POST", "/api/v1/tools/deck.export/call", `{}`, nil)
	res, _ := body["result"].(map[string]any)
	job, _ := res["jobId"].(string)
	if st != 200 || job == "" {
		t.Fatalf("alice's agent's job: %d %v", st, body)
	}
	<-g.started
	st, _, body = g.raw(t, alice, "GET", "/api/v1/jobs/"+job, "", nil)
	if st != 200 || body["user"] != "user:alice" {
		t.Fatalf("alice's agent reads its job: %d %v", st, body)
	}
	for _, req := range []struct{ method, path string }{{"GET", "/api/v1/jobs/" + job}, {"POST", "/api/v1/jobs/" + job + "/cancel"}} {
		if st, _, body := g.raw(t, bob, req.method, req.path, "", nil); st != 404 || code(body) != "NOT_FOUND" {
			t.Errorf("bob's planner: %s %s: %d %v", req.method, req.path, st, body)
		}
	}
	if _, _, list := g.raw(t, bob, "GET", "/api/v1/jobs", "", nil); strings.Contains(fmt.Sprint(list), job) {
		t.Errorf("bob's planner lists alice's job: %v", list)
	}
	if _, _, list := g.raw(t, alice, "GET", "/api/v1/jobs", "", nil); !strings.Contains(fmt.Sprint(list), job) {
		t.Errorf("alice's planner does not list its job: %v", list)
	}
	if st, _, body := g.raw(t, alice, "POST", "/api/v1/jobs/"+job+"/cancel", "", nil); st != 200 || body["status"] != "cancelled" {
		t.Errorf("alice's planner cancels its job: %d %v", st, body)
	}
}

// Rate limits are per caller as Principal.Key tells them apart: alice's
// planner spending its burst leaves bob's planner its own.
func TestRateLimitPerUserOfOneAgentName(t *testing.T) {
	g := newGov(t)
	ctx := context.Background()
	mint := func(user string) string {
		tok, err := g.admin.CreateToken(ctx, client.TokenRequest{Agent: "planner", User: user})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	alice, bob := mint("user:alice"), mint("user:bob")
	var st int
	for range 31 {
		st, _, _ = g.raw(t, alice, "POST", "/api/v1/tools/tasks.list/call", `{}`, nil)
	}
	if st != http.StatusTooManyRequests {
		t.Fatalf("alice's planner's 31st call: %d", st)
	}
	if st, _, body := g.raw(t, bob, "POST", "/api/v1/tools/tasks.list/call", `{}`, nil); st != 200 {
		t.Fatalf("bob's planner after alice's ran out: %d %v", st, body)
	}
}
