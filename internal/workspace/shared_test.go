package workspace_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/workspace"
	"github.com/switchboardhq/switchboard/sqlite"
)

// replicas are registries of several replicas over one real store (a
// SQLite file: the shared behaviour is the store's, proven on both drivers
// by storetest), on one injected clock. An interrupt relayed to its owner
// calls the owner's InterruptLocal, as the daemon's bus relay does.
type replicas struct {
	st    *sqlite.Store
	clock *clock
	reg   map[string]*workspace.Agents
	led   *ledger
}

func newReplicas(t *testing.T, ids ...string) *replicas {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &replicas{st: st, clock: &clock{t: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, reg: map[string]*workspace.Agents{}, led: &ledger{}}
	for _, id := range ids {
		r.reg[id] = workspace.NewAgents(&workspace.AgentsOptions{Ledger: r.led, Now: r.clock.now, HeartbeatInterval: 10 * time.Second,
			Store: st, Replica: id, Relay: inProcess{r}})
	}
	return r
}

// inProcess relays to the owner's registry directly, as the daemon's bus
// relay does between processes.
type inProcess struct{ r *replicas }

func (p inProcess) Interrupt(ctx context.Context, rec switchboard.AgentRecord, v workspace.Viewer) (switchboard.AgentSession, error) {
	return p.r.reg[rec.Replica].InterruptLocal(ctx, rec.Session.ID, v)
}

func (p inProcess) Handoff(_ context.Context, rec switchboard.AgentRecord, h switchboard.AgentHandoff) error {
	return p.r.reg[rec.Replica].DeliverLocal(h)
}

// A session registered on one replica is listed, read and kept alive on
// another; its owner's sweep honours a heartbeat that landed elsewhere.
func TestSharedListGetHeartbeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicas(t, "rep_a", "rep_b")
	a, b := r.reg["rep_a"], r.reg["rep_b"]
	bot, err := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentBackground, Label: "indexer", Principal: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "alice"},
		User: "user:alice", Transport: workspace.TransportHost, Heartbeat: true, Task: "indexing"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, bot.ID, alice)
	if err != nil || got.Task != "indexing" || got.Status != switchboard.AgentIdle || got.Transport != workspace.TransportHost {
		t.Fatalf("B reads %+v, %v", got, err)
	}
	if l := b.List(ctx, alice, workspace.Filter{Active: true}); len(l) != 1 || l[0].ID != bot.ID {
		t.Fatalf("B lists %+v", l)
	}
	bob := workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "bob"})
	if _, err := b.Get(ctx, bot.ID, bob); switchboard.CodeOf(err) != switchboard.CodeAgentNotFound {
		t.Fatalf("another user reads alice's agent on B: %v", err)
	}
	if l := b.List(ctx, bob, workspace.Filter{}); len(l) != 0 {
		t.Fatalf("bob lists %+v", l)
	}
	if _, err := b.Heartbeat(ctx, bot.ID, bob); switchboard.CodeOf(err) != switchboard.CodeAgentNotFound {
		t.Fatalf("bob's heartbeat on B: %v", err)
	}

	// Heartbeats land on B only; A's sweep keeps the session alive.
	for range 5 {
		r.clock.add(10 * time.Second)
		if _, err := b.Heartbeat(ctx, bot.ID, alice); err != nil {
			t.Fatal(err)
		}
		if n := a.Sweep(ctx); n != 0 {
			t.Fatalf("A ended %d sessions heartbeating through B", n)
		}
	}
	// Then silence: A ends it, and B sees the end.
	r.clock.add(31 * time.Second)
	if n := a.Sweep(ctx); n != 1 {
		t.Fatalf("A's sweep ended %d, want the silent session", n)
	}
	got, _ = b.Get(ctx, bot.ID, alice)
	if got.Status != switchboard.AgentDone || !strings.HasPrefix(got.Reason, "missed heartbeats") {
		t.Fatalf("B reads %+v after its end", got)
	}
	if _, err := b.Heartbeat(ctx, bot.ID, alice); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("a heartbeat of an ended session on B: %v", err)
	}
}

// Progress is coalesced: a report changes nothing in the store until the
// owner flushes; transitions are written at once.
func TestSharedReportIsCoalesced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicas(t, "rep_a", "rep_b")
	a, b := r.reg["rep_a"], r.reg["rep_b"]
	job, err := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentBackground, Label: "export", Principal: switchboard.Assistant(),
		Transport: workspace.TransportJob, Status: switchboard.AgentRunning, Task: "starting"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		a.Report(ctx, job.ID, "page "+string(rune('0'+i%10)), float64(i)/50)
	}
	if got, _ := b.Get(ctx, job.ID, admin); got.Task != "starting" || got.Progress != nil {
		t.Fatalf("reports reached the store before a flush: %+v", got)
	}
	a.Flush(ctx)
	got, _ := b.Get(ctx, job.ID, admin)
	if got.Progress == nil || *got.Progress != 49.0/50 || got.Task != "page 9" {
		t.Fatalf("after a flush B reads %+v", got)
	}
	if _, err := a.SetStatus(ctx, job.ID, switchboard.AgentIdle, "paused"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Get(ctx, job.ID, admin); got.Status != switchboard.AgentIdle || got.Task != "paused" {
		t.Fatalf("a transition is not in the store at once: %+v", got)
	}
}

// An interrupt sent to B reaches the owner A, which cancels the work it
// holds; the caller gets A's answer and every replica reads the end.
func TestSharedInterruptReachesOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicas(t, "rep_a", "rep_b", "rep_c")
	a, b, c := r.reg["rep_a"], r.reg["rep_b"], r.reg["rep_c"]
	ext := a.External(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}, workspace.TransportHTTP, "")
	wctx, done := a.Work(ctx, ext)
	stopped := make(chan error, 1)
	go func() {
		<-wctx.Done()
		stopped <- context.Cause(wctx)
		done()
	}()
	got, err := b.Interrupt(ctx, ext, admin)
	if err != nil || got.Status != switchboard.AgentCancelled || !strings.Contains(got.Reason, "interrupted by user:admin") {
		t.Fatalf("interrupt through B: %+v, %v", got, err)
	}
	if cause := <-stopped; switchboard.CodeOf(cause) != switchboard.CodeCancelled {
		t.Fatalf("the work on A ended with %v", cause)
	}
	for name, reg := range map[string]*workspace.Agents{"A": a, "B": b, "C": c} {
		if s, _ := reg.Get(ctx, ext, admin); s.Status != switchboard.AgentCancelled {
			t.Fatalf("%s reads %+v", name, s)
		}
	}
	if _, err := c.Interrupt(ctx, ext, admin); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("a second interrupt through C: %v", err)
	}
	// The access rules are the owner's: an agent that may list agents
	// sees it and may not stop it; one that may not list them is told it
	// does not exist.
	lister := workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "other"})
	if _, err := c.Interrupt(ctx, ext, lister); switchboard.CodeOf(err) != switchboard.CodeForbidden {
		t.Fatalf("another agent's interrupt through C: %v", err)
	}
	narrow := workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "narrow", Allow: []string{"deck.*"}})
	if _, err := c.Interrupt(ctx, ext, narrow); switchboard.CodeOf(err) != switchboard.CodeAgentNotFound {
		t.Fatalf("a narrow agent's interrupt through C: %v", err)
	}
}

// When a replica is taken over, its live sessions end on every list, each
// with its ledger entry; a late write of the dead owner does not revive
// them.
func TestSharedEndOwned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicas(t, "rep_a", "rep_b")
	a, b := r.reg["rep_a"], r.reg["rep_b"]
	live, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentVoice, Label: "voice", Principal: switchboard.Assistant(), Status: switchboard.AgentRunning})
	done, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentVoice, Label: "old", Principal: switchboard.Assistant()})
	if _, err := a.End(ctx, done.ID, switchboard.AgentDone, "finished"); err != nil {
		t.Fatal(err)
	}
	mine, _ := b.Start(ctx, workspace.Spec{Kind: switchboard.AgentVoice, Label: "b's own", Principal: switchboard.Assistant()})
	n, err := b.EndOwned(ctx, []string{"rep_a"}, "its replica stopped")
	if err != nil || n != 1 {
		t.Fatalf("EndOwned: %d, %v", n, err)
	}
	if got, _ := b.Get(ctx, live.ID, admin); got.Status != switchboard.AgentCancelled || got.Reason != "its replica stopped" {
		t.Fatalf("B reads %+v", got)
	}
	if got, _ := b.Get(ctx, done.ID, admin); got.Status != switchboard.AgentDone || got.Reason != "finished" {
		t.Fatalf("an ended session was ended again: %+v", got)
	}
	if got, _ := b.Get(ctx, mine.ID, admin); got.Status.Final() {
		t.Fatalf("B's own session ended: %+v", got)
	}
	if st := r.led.statuses(live.ID); len(st) != 2 || st[1] != "cancelled" {
		t.Fatalf("ledger statuses %v", st)
	}
	// A was alive after all (a long pause): its late transition is refused
	// by the store, and A's own list shows the stored end.
	if _, err := a.SetStatus(ctx, live.ID, switchboard.AgentIdle, "late"); err != nil {
		t.Fatal(err) // A's memory takes it; the store keeps the end
	}
	if got, _ := b.Get(ctx, live.ID, admin); got.Status != switchboard.AgentCancelled {
		t.Fatalf("a late write revived it: %+v", got)
	}
	for _, s := range a.List(ctx, admin, workspace.Filter{Active: true}) {
		if s.ID == live.ID {
			t.Fatalf("A lists the ended session as live: %+v", s)
		}
	}
	if n, _ := b.EndOwned(ctx, []string{"rep_a"}, "again"); n != 0 {
		t.Fatalf("a second EndOwned ended %d", n)
	}
}

// A handoff made on B to the assistant whose chat runs on A is kept in
// A's inbox and queued for that tab's next turn, with one ledger entry;
// the checks are the same as for a local target.
func TestSharedHandoffReachesOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicas(t, "rep_a", "rep_b")
	a, b := r.reg["rep_a"], r.reg["rep_b"]
	chat, _ := a.Start(ctx, workspace.Spec{Kind: switchboard.AgentChat, Principal: switchboard.Assistant(), User: "alice", SessionID: "ses_a", Status: switchboard.AgentRunning})
	job, _ := b.Start(ctx, workspace.Spec{Kind: switchboard.AgentBackground, Principal: switchboard.Assistant(), User: "alice", Status: switchboard.AgentRunning})
	from := switchboard.WithAgentSession(ctx, job.ID)
	h, err := b.Handoff(from, alice, workspace.HandoffRequest{To: chat.ID, Task: "Review the export"})
	if err != nil || h.From != job.ID || h.ReturnTo != job.ID {
		t.Fatalf("handoff through B: %+v %v", h, err)
	}
	if in := a.Handoffs(chat.ID); len(in) != 1 || in[0].ID != h.ID {
		t.Fatalf("A's inbox: %+v", in)
	}
	if notes := a.TakeNotes("ses_a", "alice"); len(notes) != 1 || notes[0].Kind != "handoff" {
		t.Fatalf("A's notes for the tab: %+v", notes)
	}
	n := 0
	for _, e := range r.led.entries {
		if e.Verb == "agent.handoff" && e.Target == chat.ID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d agent.handoff entries, want 1", n)
	}
	// An agent that may only list agents may not put a task in alice's
	// tab; an ended target is CONFLICT; nothing is delivered either way.
	lister := workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "lister"})
	if _, err := b.Handoff(ctx, lister, workspace.HandoffRequest{To: chat.ID, Task: "x"}); switchboard.CodeOf(err) != switchboard.CodeForbidden {
		t.Fatalf("a lister's handoff through B: %v", err)
	}
	if _, err := a.End(ctx, chat.ID, switchboard.AgentDone, "run finished"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Handoff(from, alice, workspace.HandoffRequest{To: chat.ID, Task: "late"}); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("a handoff to an ended session through B: %v", err)
	}
	if in := a.Handoffs(chat.ID); len(in) != 1 {
		t.Fatalf("A's inbox after refused handoffs: %+v", in)
	}
}
