package workspace_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ledger keeps what the registry appends.
type ledger struct {
	mu      sync.Mutex
	entries []switchboard.ActivityEntry
}

func (l *ledger) Append(_ context.Context, e *switchboard.ActivityEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, *e)
	return nil
}

func (l *ledger) statuses(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		var d struct {
			Status string `json:"status"`
		}
		if e.Target == id && e.Verb == "agent.status" && json.Unmarshal(e.Details, &d) == nil {
			out = append(out, d.Status)
		}
	}
	return out
}

func newAgents(t *testing.T) (*workspace.Agents, *clock, *ledger, *[]switchboard.AgentSession) {
	t.Helper()
	c := &clock{t: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	l := &ledger{}
	var mu sync.Mutex
	var events []switchboard.AgentSession
	a := workspace.NewAgents(&workspace.AgentsOptions{Ledger: l, Now: c.now, HeartbeatInterval: 10 * time.Second, IdleTimeout: time.Minute,
		Notify: func(_ context.Context, r switchboard.AgentRecord) {
			mu.Lock()
			events = append(events, r.Session)
			mu.Unlock()
		}})
	return a, c, l, &events
}

var (
	admin = workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	alice = workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "alice"})
)

// The status machine: idle → running → waiting_approval (derived from the
// approvals of its calls) → running → done; every transition is one
// ledger entry and one event; a finished session takes nothing more.
func TestStatusMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, l, events := newAgents(t)
	s, err := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentBackground, Label: "export", Principal: switchboard.Assistant()})
	if err != nil || s.Status != switchboard.AgentIdle {
		t.Fatalf("start: %+v %v", s, err)
	}
	if _, err := a.SetStatus(ctx, s.ID, switchboard.AgentRunning, "exporting"); err != nil {
		t.Fatal(err)
	}
	a.ApprovalPending(ctx, s.ID, "apr_1")
	a.ApprovalPending(ctx, s.ID, "apr_2")
	if got, _ := a.Get(ctx, s.ID, admin); got.Status != switchboard.AgentWaitingApproval || got.Task != "exporting" {
		t.Fatalf("with approvals pending: %+v", got)
	}
	if !a.Escalated("apr_1") {
		t.Fatal("a background agent's approval is escalated")
	}
	a.ApprovalSettled(ctx, s.ID, "apr_1")
	if got, _ := a.Get(ctx, s.ID, admin); got.Status != switchboard.AgentWaitingApproval {
		t.Fatalf("one approval still waits: %+v", got)
	}
	a.ApprovalSettled(ctx, s.ID, "apr_2")
	if _, err := a.End(ctx, s.ID, switchboard.AgentDone, "finished"); err != nil {
		t.Fatal(err)
	}
	want := "idle running waiting_approval running done"
	if got := strings.Join(l.statuses(s.ID), " "); got != want {
		t.Fatalf("ledger transitions %q, want %q", got, want)
	}
	if len(*events) != 5 {
		t.Fatalf("%d events, want 5", len(*events))
	}
	if _, err := a.End(ctx, s.ID, switchboard.AgentCancelled, "again"); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("ending twice: %v, want CONFLICT", err)
	}
	if _, err := a.SetStatus(ctx, "agt_nope", switchboard.AgentRunning, ""); switchboard.CodeOf(err) != switchboard.CodeAgentNotFound {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := a.Start(ctx, workspace.Spec{Kind: "robot"}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("bad kind: %v", err)
	}
}

// A registered session that stops sending heartbeats ends done with a
// reason; one that keeps them stays; an external agent ends after the
// idle window, but not while its call waits for approval.
func TestHeartbeatExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, c, _, _ := newAgents(t)
	quiet, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentVoice, Label: "voice", Principal: admin.Principal, Heartbeat: true})
	alive, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentVoice, Label: "voice 2", Principal: admin.Principal, Heartbeat: true})
	ext := a.External(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "claude"}, workspace.TransportHTTP, "")
	waiting := a.External(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "codex"}, workspace.TransportHTTP, "")
	a.ApprovalPending(ctx, waiting, "apr_x")
	for range 2 {
		c.add(10 * time.Second)
		if _, err := a.Heartbeat(ctx, alive.ID, admin); err != nil {
			t.Fatal(err)
		}
		if n := a.Sweep(ctx); n != 0 {
			t.Fatalf("swept %d before three intervals passed", n)
		}
	}
	c.add(10 * time.Second)
	if n := a.Sweep(ctx); n != 1 {
		t.Fatalf("swept %d, want the silent one", n)
	}
	got, _ := a.Get(ctx, quiet.ID, admin)
	if got.Status != switchboard.AgentDone || !strings.Contains(got.Reason, "missed heartbeats") || got.EndedAt.IsZero() {
		t.Fatalf("silent session: %+v", got)
	}
	if _, err := a.Heartbeat(ctx, quiet.ID, admin); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("heartbeat after expiry: %v, want CONFLICT", err)
	}
	c.add(time.Minute)
	a.Heartbeat(ctx, alive.ID, admin)
	a.Sweep(ctx)
	if got, _ := a.Get(ctx, ext, admin); got.Status != switchboard.AgentDone || !strings.HasPrefix(got.Reason, "idle") {
		t.Fatalf("idle external agent: %+v", got)
	}
	if got, _ := a.Get(ctx, waiting, admin); got.Status != switchboard.AgentWaitingApproval {
		t.Fatalf("an external agent waiting on approval is not idle: %+v", got)
	}
	// A new call after its session ended starts a new one.
	if again := a.External(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "claude"}, workspace.TransportHTTP, ""); again == ext || again == "" {
		t.Fatalf("a call after the idle end reuses %s", again)
	}
}

// Interrupt runs the session's own cancel and ends it cancelled; a second
// interrupt is CONFLICT; who may see and stop what follows Viewer.
func TestInterruptAndVisibility(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, _, _ := newAgents(t)
	stopped := 0
	mine, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentChat, Principal: switchboard.Assistant(), User: "alice", SessionID: "ses_a",
		Status: switchboard.AgentRunning, Interrupt: func(context.Context, string) error { stopped++; return nil }})
	bobs, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentChat, Principal: switchboard.Assistant(), User: "user:bob"})
	claude := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "claude", Allow: []string{"tasks.*"}}
	lister := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "lister", Allow: []string{"agents.*"}}
	ext := a.External(ctx, claude, workspace.TransportMCP, "m1")

	tab := workspace.TabViewer("ses_other", "alice")
	for _, tc := range []struct {
		name string
		v    workspace.Viewer
		sees []string
	}{
		{"admin", admin, []string{mine.ID, bobs.ID, ext}},
		{"alice", alice, []string{mine.ID}},
		{"alice's other tab", tab, []string{mine.ID}},
		{"claude", workspace.ViewerOf(claude), []string{ext}},
		{"an agent allowed agents.list", workspace.ViewerOf(lister), []string{mine.ID, bobs.ID, ext}},
	} {
		var got []string
		for _, s := range a.List(ctx, tc.v, workspace.Filter{}) {
			got = append(got, s.ID)
		}
		if strings.Join(sorted(got), ",") != strings.Join(sorted(tc.sees), ",") {
			t.Errorf("%s sees %v, want %v", tc.name, got, tc.sees)
		}
	}
	if _, err := a.Get(ctx, bobs.ID, alice); switchboard.CodeOf(err) != switchboard.CodeAgentNotFound {
		t.Fatalf("alice reading bob's agent: %v, want AGENT_NOT_FOUND", err)
	}
	if _, err := a.Interrupt(ctx, mine.ID, workspace.ViewerOf(lister)); switchboard.CodeOf(err) != switchboard.CodeForbidden {
		t.Fatalf("an agent interrupting another: %v, want FORBIDDEN", err)
	}
	s, err := a.Interrupt(ctx, mine.ID, tab)
	if err != nil || s.Status != switchboard.AgentCancelled || stopped != 1 || !strings.Contains(s.Reason, "session:ses_other") {
		t.Fatalf("interrupt: %+v %v (stopped %d)", s, err, stopped)
	}
	if _, err := a.Interrupt(ctx, mine.ID, alice); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("interrupting a finished one: %v, want CONFLICT", err)
	}
	if got := a.List(ctx, admin, workspace.Filter{Active: true, Kind: switchboard.AgentExternal}); len(got) != 1 || got[0].ID != ext {
		t.Fatalf("active external: %+v", got)
	}
	a.EndExternal(ctx, claude, workspace.TransportMCP, "m1", "MCP session closed")
	if got, _ := a.Get(ctx, ext, admin); got.Status != switchboard.AgentDone || got.Reason != "MCP session closed" {
		t.Fatalf("closed MCP session: %+v", got)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// A handoff is recorded, lands in the target's inbox, and reaches the
// built-in assistant's tab as a note for its next turn; escalations reach
// the user's next turn in any tab.
func TestHandoffAndNotes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, l, _ := newAgents(t)
	chat, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentChat, Principal: switchboard.Assistant(), User: "alice", SessionID: "ses_a", Status: switchboard.AgentRunning})
	job, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentBackground, Principal: switchboard.Assistant(), User: "alice", Status: switchboard.AgentRunning})
	from := switchboard.WithAgentSession(ctx, job.ID)
	h, err := a.Handoff(from, alice, workspace.HandoffRequest{To: chat.ID, Task: "Review the export",
		Artifacts: []json.RawMessage{json.RawMessage(`{"name":"report","parts":[{"kind":"text","text":"done"}]}`)}})
	if err != nil || h.From != job.ID || h.ReturnTo != job.ID {
		t.Fatalf("handoff: %+v %v", h, err)
	}
	if in := a.Handoffs(chat.ID); len(in) != 1 || in[0].ID != h.ID {
		t.Fatalf("inbox: %+v", in)
	}
	for _, bad := range []workspace.HandoffRequest{
		{To: chat.ID},
		{Task: "x"},
		{To: chat.ID, Task: "x", Artifacts: []json.RawMessage{json.RawMessage(`"text"`)}},
	} {
		if _, err := a.Handoff(from, alice, bad); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("%+v: %v, want INVALID_INPUT", bad, err)
		}
	}
	if _, err := a.Handoff(from, alice, workspace.HandoffRequest{To: "agt_gone", Task: "x"}); switchboard.CodeOf(err) != switchboard.CodeAgentNotFound {
		t.Fatalf("unknown target: %v", err)
	}
	a.ApprovalPending(ctx, job.ID, "apr_9")
	a.Escalate(job.ID, switchboard.ApprovalRequest{ID: "apr_9", Tool: "deck.export"})
	a.Escalate(chat.ID, switchboard.ApprovalRequest{ID: "apr_10"}) // the chat asks by itself: no note
	notes := a.TakeNotes("ses_a", "alice")
	if len(notes) != 2 || notes[0].Kind != "handoff" || notes[1].Kind != "approval" || !strings.Contains(notes[1].Text, "apr_9") {
		t.Fatalf("notes: %+v", notes)
	}
	if again := a.TakeNotes("ses_a", "alice"); len(again) != 0 {
		t.Fatalf("notes are consumed: %+v", again)
	}
	var handoffs int
	for _, e := range l.entries {
		if e.Verb == "agent.handoff" && e.Target == chat.ID {
			handoffs++
		}
	}
	if handoffs != 1 {
		t.Fatalf("%d agent.handoff entries, want 1", handoffs)
	}
}

// Park keeps a session waiting while its approvals are pending, whatever
// the order the approval events and the park arrive in, and ends it done
// when the last is answered; an interrupt cancels the work bound to the
// session and waits for it to end.
func TestParkAndWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, l, _ := newAgents(t)
	run, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentChat, Principal: switchboard.Assistant(), Status: switchboard.AgentRunning})
	a.ApprovalPending(ctx, run.ID, "apr_1")
	a.ApprovalPending(ctx, run.ID, "apr_2")
	a.ApprovalSettled(ctx, run.ID, "apr_2") // answered before the run parks
	a.Park(ctx, run.ID, []string{"apr_1", "apr_2"}, "run waiting")
	if s, _ := a.Get(ctx, run.ID, admin); s.Status != switchboard.AgentWaitingApproval {
		t.Fatalf("parked: %s", s.Status)
	}
	a.ApprovalSettled(ctx, run.ID, "apr_1")
	if s, _ := a.Get(ctx, run.ID, admin); s.Status != switchboard.AgentDone || !strings.Contains(s.Reason, "run waiting") {
		t.Fatalf("answered: %+v", s)
	}
	if got := strings.Join(l.statuses(run.ID), ","); got != "running,waiting_approval,done" {
		t.Fatalf("transitions %s", got)
	}
	empty, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentChat, Principal: switchboard.Assistant(), Status: switchboard.AgentRunning})
	a.Park(ctx, empty.ID, nil, "run waiting")
	if s, _ := a.Get(ctx, empty.ID, admin); s.Status != switchboard.AgentDone {
		t.Fatalf("parked with nothing pending: %s", s.Status)
	}

	claude := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "claude"}
	ext := a.External(ctx, claude, workspace.TransportHTTP, "")
	wctx, done := a.Work(ctx, ext)
	ended := make(chan error, 1)
	go func() {
		<-wctx.Done()
		ended <- context.Cause(wctx)
		done()
	}()
	s, err := a.Interrupt(ctx, ext, admin)
	if err != nil || s.Status != switchboard.AgentCancelled {
		t.Fatalf("interrupt: %+v %v", s, err)
	}
	select {
	case cause := <-ended: // Interrupt returned after done, so this is ready
		if switchboard.CodeOf(cause) != switchboard.CodeCancelled || !strings.Contains(cause.Error(), "interrupted by user:admin") {
			t.Fatalf("cause %v", cause)
		}
	default:
		t.Fatal("Interrupt returned before the work it cancelled ended")
	}
	if wctx2, done2 := a.Work(ctx, ext); wctx2 != ctx {
		t.Fatal("a finished session bound new work")
	} else {
		done2()
	}
}

// An escalation note lives only while its approval waits: deciding (or
// cancelling) the approval withdraws it, an expired one is not told, and
// a resolution that overtakes its request on the bus leaves no note.
func TestEscalationWithdrawnWithItsApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, c, _, _ := newAgents(t)
	job, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentBackground, Principal: switchboard.Assistant(), User: "alice", Status: switchboard.AgentRunning})
	ext, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentExternal, Principal: switchboard.Assistant(), User: "alice", Status: switchboard.AgentRunning})
	expires := c.now().Add(time.Minute)
	escalate := func(id, apr string) {
		a.ApprovalPending(ctx, id, apr)
		a.Escalate(id, switchboard.ApprovalRequest{ID: apr, Tool: "deck.export", ExpiresAt: expires})
	}
	escalate(job.ID, "apr_decided")
	escalate(ext.ID, "apr_cancelled")
	escalate(job.ID, "apr_waiting")
	escalate(ext.ID, "apr_expiring")
	a.ApprovalSettled(ctx, job.ID, "apr_decided")
	a.ApprovalCancelled(ctx, ext.ID, "apr_cancelled")
	// Its resolution first (another replica's event came first), then the
	// request: nothing to tell.
	a.ApprovalSettled(ctx, job.ID, "apr_late")
	a.Escalate(job.ID, switchboard.ApprovalRequest{ID: "apr_late", Tool: "deck.export", ExpiresAt: expires})
	notes := a.TakeNotes("ses_b", "alice")
	var got []string
	for _, n := range notes {
		got = append(got, string(n.Data))
	}
	if len(notes) != 2 || !strings.Contains(got[0], "apr_waiting") || !strings.Contains(got[1], "apr_expiring") {
		t.Fatalf("notes while apr_waiting and apr_expiring wait: %v", got)
	}
	// The next turn comes after expiry, before any sweep settled it.
	escalate(ext.ID, "apr_expired")
	c.add(time.Minute)
	if notes := a.TakeNotes("ses_b", "alice"); len(notes) != 0 {
		t.Fatalf("an expired approval's note reached a turn: %+v", notes)
	}
}

// RELIABILITY row 28: an external agent's session that is opened and
// left idle (an MCP session nobody calls through) leaves no row in the
// ledger; the first call of one records its start, and its end follows.
func TestIdleExternalSessionNotLedgered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, l, _ := newAgents(t)
	claude := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "claude"}
	idle := a.External(ctx, claude, workspace.TransportMCP, "m1")
	busy := a.External(ctx, claude, workspace.TransportMCP, "m2")
	waits := a.External(ctx, claude, workspace.TransportMCP, "m3")
	if got := a.List(ctx, admin, workspace.Filter{Active: true}); len(got) != 3 {
		t.Fatalf("listed %d sessions, want the three (listed while they live)", len(got))
	}
	_, done := a.Work(ctx, busy)
	done()
	_, done = a.Work(ctx, busy) // a second call records nothing more
	done()
	a.ApprovalPending(ctx, waits, "apr_1")
	for _, conn := range []string{"m1", "m2", "m3"} {
		a.EndExternal(ctx, claude, workspace.TransportMCP, conn, "MCP session closed")
	}
	if got := l.statuses(idle); len(got) != 0 {
		t.Fatalf("the idle session's ledger rows: %v, want none", got)
	}
	if got := strings.Join(l.statuses(busy), ","); got != "running,done" {
		t.Fatalf("the working session's ledger rows: %s, want running,done", got)
	}
	if got := strings.Join(l.statuses(waits), ","); got != "running,waiting_approval,done" {
		t.Fatalf("the waiting session's ledger rows: %s, want running,waiting_approval,done", got)
	}
}

// RELIABILITY row 28: one principal holds at most Registered.Max sessions
// registered on its request (POST /agents); past it Start is
// RATE_LIMITED and registers nothing; ending one gives its seat back;
// another principal and the daemon's own sessions are not held up.
func TestRegisteredSessionCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := workspace.NewAgents(&workspace.AgentsOptions{Registered: workspace.SessionLimits{Max: 2, Rate: ratelimit.Rate{PerSecond: -1}}})
	bot := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}
	spec := workspace.Spec{Kind: switchboard.AgentBackground, Principal: bot, Heartbeat: true}
	first, err := a.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(ctx, spec); switchboard.CodeOf(err) != switchboard.CodeRateLimited {
		t.Fatalf("a third registered session: %v; want RATE_LIMITED", err)
	}
	if n := len(a.List(ctx, admin, workspace.Filter{})); n != 2 {
		t.Fatalf("%d sessions listed; a refused one registered something", n)
	}
	other := spec
	other.Principal.ID = "other"
	if _, err := a.Start(ctx, other); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	if _, err := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentChat, Principal: bot}); err != nil {
		t.Fatalf("a session the daemon starts (not registered): %v", err)
	}
	// The same agent name acting for another user holds seats of its own.
	forBob := spec
	forBob.Principal.User = "user:bob"
	if _, err := a.Start(ctx, forBob); err != nil {
		t.Fatalf("the same agent name acting for user:bob: %v", err)
	}
	if _, err := a.End(ctx, first.ID, switchboard.AgentDone, "finished"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(ctx, spec); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}

// Two tokens of one agent name, one for alice and one for bob, are two
// sessions, each recording the user it acts for and seen only by that user
// (and the operator) and by the token acting for the same user.
func TestExternalActsForTokenUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, _, _ := newAgents(t)
	forAlice := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: "user:alice"}
	forBob := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: "user:bob"}
	operators := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}
	ids := map[string]string{}
	for name, p := range map[string]switchboard.Principal{"alice": forAlice, "bob": forBob, "operator": operators} {
		ids[name] = a.External(ctx, p, workspace.TransportMCP, "")
	}
	if ids["alice"] == ids["bob"] || ids["alice"] == ids["operator"] {
		t.Fatalf("one agent name acting for two users shared a session: %v", ids)
	}
	for name, want := range map[string]string{"alice": "user:alice", "bob": "user:bob", "operator": switchboard.Operator} {
		s, err := a.Get(ctx, ids[name], admin)
		if err != nil || s.User != want {
			t.Errorf("%s's session: user %q, %v; want %q", name, s.User, err, want)
		}
	}
	if _, err := a.Get(ctx, ids["alice"], workspace.ViewerOf(forBob)); err == nil {
		t.Error("the planner acting for bob sees the planner acting for alice")
	}
	if _, err := a.Get(ctx, ids["alice"], workspace.TabViewer("ses_b", "user:bob")); err == nil {
		t.Error("bob's tab sees alice's agent")
	}
	if _, err := a.Get(ctx, ids["alice"], workspace.TabViewer("ses_a", "alice")); err != nil {
		t.Errorf("alice's tab cannot see her agent: %v", err)
	}
}
