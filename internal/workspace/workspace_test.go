package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// agents is a fixed list of agent sessions that counts its reads.
type agents struct {
	list  []switchboard.AgentSession
	reads atomic.Int64
}

func (a *agents) List(context.Context) ([]switchboard.AgentSession, error) {
	a.reads.Add(1)
	return a.list, nil
}

type env struct {
	ws     *Workspace
	reg    *registry.Registry
	ledger *activity.Ledger
	agents *agents
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := activity.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ag := &agents{}
	ws, err := New(Options{Registry: reg, Ledger: l, Agents: ag})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	if _, err := reg.Register(ctx, switchboard.SourceCore, []switchboard.Tool{
		{Name: "tasks.list", Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead, Description: "List tasks.",
			InputSchema: json.RawMessage(`{"type":"object"}`), Binding: &switchboard.Binding{Go: true}},
		{Name: "billing.charge", Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, Description: "Charge a card.",
			InputSchema: json.RawMessage(`{"type":"object"}`), Binding: &switchboard.Binding{Go: true}},
	}); err != nil {
		t.Fatal(err)
	}
	return &env{ws: ws, reg: reg, ledger: l, agents: ag}
}

func page(id string, a switchboard.Attention, panels ...string) switchboard.WorkspaceContext {
	c := switchboard.WorkspaceContext{ID: id, Kind: "page", Label: "Page " + id, Attention: a, Panels: []switchboard.WorkspacePanel{}}
	for _, p := range panels {
		c.Panels = append(c.Panels, switchboard.WorkspacePanel{ID: p, Type: "form", Title: "Panel " + p, Origin: "host"})
	}
	return c
}

func agentCtx(allow ...string) context.Context {
	return switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", Allow: allow})
}

func TestReportRefusesBadInputAndKeepsState(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.ws.Report(ctx, "s1", "", []switchboard.WorkspaceContext{page("home", switchboard.AttentionFocused, "p1")}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", maxLabelLen+1)
	bad := map[string][]switchboard.WorkspaceContext{
		"attention":     {{ID: "a", Kind: "page", Attention: "staring"}},
		"no id":         {{Kind: "page", Attention: "visible"}},
		"no kind":       {{ID: "a", Attention: "visible"}},
		"long label":    {{ID: "a", Kind: "page", Label: long, Attention: "visible"}},
		"duplicate":     {page("a", "visible"), page("a", "background")},
		"panel origin":  {{ID: "a", Kind: "page", Attention: "visible", Panels: []switchboard.WorkspacePanel{{ID: "p", Type: "form", Origin: "site"}}}},
		"panel dup":     {page("a", "visible", "p", "p")},
		"panel no type": {{ID: "a", Kind: "page", Attention: "visible", Panels: []switchboard.WorkspacePanel{{ID: "p", Origin: "host"}}}},
		"selection":     {{ID: "a", Kind: "page", Attention: "focused", Selection: &switchboard.ContextSelection{Text: strings.Repeat("y", maxSelectionLen+1)}}},
		"bad utf8":      {{ID: "a\xff", Kind: "page", Attention: "visible"}},
		"bidi label":    {{ID: "a", Kind: "page", Label: "Invoices \u202egnp.exe", Attention: "visible"}},
		"control kind":  {{ID: "a", Kind: "pa\x00ge", Attention: "visible"}},
		"hidden title":  {{ID: "a", Kind: "page", Attention: "visible", Panels: []switchboard.WorkspacePanel{{ID: "p", Type: "form", Title: "Pay\u200f", Origin: "host"}}}},
	}
	for name, cs := range bad {
		_, err := e.ws.Report(ctx, "s1", "", cs)
		if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("%s: got %v, want INVALID_INPUT", name, err)
		}
	}
	c, err := e.ws.Context(ctx, "home", "")
	if err != nil || len(c.Panels) != 1 {
		t.Fatalf("a refused report changed the tab's contexts: %+v, %v", c, err)
	}
	if c.Provenance == nil || c.Provenance.DerivedFrom != FromSite || c.SessionID != "s1" {
		t.Fatalf("context lacks its provenance or tab: %+v", c)
	}
}

func TestReportKeepsBoundedAndCountsTheRest(t *testing.T) {
	e := newEnv(t)
	var cs []switchboard.WorkspaceContext
	for i := range 40 {
		var ps []string
		for j := range 100 {
			ps = append(ps, fmt.Sprintf("p%d-%d", i, j))
		}
		a := switchboard.AttentionBackground
		if i == 39 {
			a = switchboard.AttentionFocused // reported last, kept first
		}
		cs = append(cs, page(fmt.Sprintf("c%d", i), a, ps...))
	}
	res, err := e.ws.Report(context.Background(), "s1", "", cs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Contexts != MaxContextsPerTab || res.Panels != MaxPanelsPerTab {
		t.Fatalf("kept %d contexts, %d panels; want %d, %d", res.Contexts, res.Panels, MaxContextsPerTab, MaxPanelsPerTab)
	}
	if res.Dropped.Contexts != 40-MaxContextsPerTab || res.Dropped.Panels != 4000-MaxPanelsPerTab {
		t.Fatalf("dropped %+v", res.Dropped)
	}
	if _, err := e.ws.Context(context.Background(), "c39", "s1"); err != nil {
		t.Fatalf("the focused context was not kept: %v", err)
	}
	e.ws.DropSession("s1")
	if _, err := e.ws.Context(context.Background(), "c39", "s1"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("a closed tab's context is still there: %v", err)
	}
}

func TestDigestIsScopedAndBoundToTheUser(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.ws.Report(ctx, "alice-tab", "user:alice", []switchboard.WorkspaceContext{page("a", switchboard.AttentionFocused, "pa")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ws.Report(ctx, "bob-tab", "bob", []switchboard.WorkspaceContext{page("b", switchboard.AttentionVisible)}); err != nil {
		t.Fatal(err)
	}
	for _, entry := range []switchboard.ActivityEntry{
		{Actor: "agent:bot", Verb: activity.VerbToolCall, Target: "tasks.list", Details: json.RawMessage(`{"user":"user:admin"}`)},
		{Actor: "user:admin", Verb: activity.VerbToolCall, Target: "billing.charge"},
		// The same agent name acting for bob, and another agent: records
		// the bot (acting for the operator) does not read.
		{Actor: "agent:bot", Verb: activity.VerbToolCall, Target: "tasks.list", Details: json.RawMessage(`{"user":"user:bob"}`)},
		{Actor: "agent:other", Verb: activity.VerbToolCall, Target: "tasks.list", Details: json.RawMessage(`{"user":"user:admin"}`)},
	} {
		if err := e.ledger.Append(ctx, &entry); err != nil {
			t.Fatal(err)
		}
	}
	e.agents.list = []switchboard.AgentSession{{ID: "ag1", Kind: switchboard.AgentExternal, Label: "Claude Code", Status: switchboard.AgentRunning},
		{ID: "ag0", Kind: switchboard.AgentChat, Label: "old", Status: switchboard.AgentDone}}
	e.ws.Touch()

	all, err := e.ws.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Contexts) != 2 || all.Contexts[0].ID != "a" || len(all.RecentActivity) != 4 || len(all.Agents) != 1 || all.User != "user:admin" {
		t.Fatalf("admin digest: %+v", all)
	}
	alice, _ := e.ws.Digest(WithUser(ctx, "alice"))
	if len(alice.Contexts) != 1 || alice.Contexts[0].ID != "a" || alice.User != "user:alice" {
		t.Fatalf("alice's digest shows another user's tab: %+v", alice.Contexts)
	}
	if _, err := e.ws.Context(WithUser(ctx, "alice"), "b", ""); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("alice can describe bob's context: %v", err)
	}
	narrow, _ := e.ws.Digest(agentCtx("tasks.*", ToolActivityGet))
	if len(narrow.Contexts) != 0 || len(narrow.Agents) != 0 {
		t.Fatalf("an agent outside workspace.* and agents.list sees contexts or agents: %+v", narrow)
	}
	if len(narrow.RecentActivity) != 1 || narrow.RecentActivity[0].Target != "tasks.list" || narrow.RecentActivity[0].Actor != "agent:bot" {
		t.Fatalf("scoped activity (its own calls only, for its own user): %+v", narrow.RecentActivity)
	}
	wide, _ := e.ws.Digest(agentCtx("workspace.*", "agents.*"))
	if len(wide.Contexts) != 2 || len(wide.Agents) != 1 || len(wide.RecentActivity) != 0 {
		t.Fatalf("agent with workspace.* and agents.*: %+v", wide)
	}
	for _, c := range wide.Contexts {
		if c.Provenance == nil || c.Provenance.DerivedFrom != FromSite {
			t.Fatalf("digest context without site-html provenance: %+v", c)
		}
	}
}

func TestDigestIsCachedPerChangeBatch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first, err := e.ws.DigestJSON(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := e.ws.DigestJSON(ctx)
	if e.agents.reads.Load() != 1 || string(first) != string(second) {
		t.Fatalf("a second read with no change recompiled (%d agent reads)", e.agents.reads.Load())
	}
	if _, err := e.ws.Report(ctx, "s1", "", []switchboard.WorkspaceContext{page("home", switchboard.AttentionFocused)}); err != nil {
		t.Fatal(err)
	}
	third, _ := e.ws.DigestJSON(ctx)
	if e.agents.reads.Load() != 2 || string(third) == string(first) {
		t.Fatal("a context report did not invalidate the digest")
	}
	ch, _ := e.ws.Changed()
	if err := e.ledger.Append(ctx, &switchboard.ActivityEntry{Actor: "user:admin", Verb: "x", Target: "tasks.list"}); err != nil {
		t.Fatal(err)
	}
	<-ch // the ledger's new entry is a change batch
	fourth, _ := e.ws.Digest(ctx)
	if len(fourth.RecentActivity) != 1 {
		t.Fatalf("a new ledger entry did not reach the digest: %+v", fourth.RecentActivity)
	}
}

// TestDigestBudgetProperty: whatever the workspace holds, the digest never
// exceeds the hard cap, drops in the stated order, and a small workspace
// loses nothing.
func TestDigestBudgetProperty(t *testing.T) {
	rnd := rand.New(rand.NewPCG(12, 2026))
	// Words from a small vocabulary (Latin, accented, CJK) so items repeat
	// the way a real workspace's do, and the count memo is exercised.
	vocab := strings.Fields("project settings Apollo launch budget report Ärger Übersicht 漢字 設定 dashboard invoice draft review deck export pdf chart metric queue owner status")
	word := func(n int) string {
		var b strings.Builder
		for b.Len() < n/2 || b.Len() == 0 {
			b.WriteString(vocab[rnd.IntN(len(vocab))])
			b.WriteByte(' ')
		}
		return clip(strings.TrimSpace(b.String()), n)
	}
	atts := []switchboard.Attention{switchboard.AttentionFocused, switchboard.AttentionVisible, switchboard.AttentionBackground}
	var memo tokenMemo
	iterations := 40
	if testing.Short() {
		iterations = 10
	}
	for it := range iterations {
		scale := []int{0, 1, 10, 100}[rnd.IntN(4)]
		d := switchboard.WorkspaceDigest{User: "user:" + word(20)}
		for i := range rnd.IntN(2*scale + 1) {
			c := switchboard.WorkspaceContext{ID: fmt.Sprintf("c%d", i), Kind: "page", Label: word(digestLabel), Attention: atts[rnd.IntN(3)],
				SessionID: word(20), Provenance: &switchboard.Provenance{DerivedFrom: FromSite}}
			for j := range rnd.IntN(scale/4 + 1) {
				c.Panels = append(c.Panels, switchboard.WorkspacePanel{ID: fmt.Sprintf("p%d", j), Type: "form", Title: word(digestLabel), Origin: "host", Dirty: rnd.IntN(2) == 0})
			}
			d.Contexts = append(d.Contexts, c)
		}
		// Contexts come to the budget in attention order.
		sortByAttention(d.Contexts)
		for i := range rnd.IntN(3*scale + 1) {
			d.Agents = append(d.Agents, switchboard.DigestAgent{ID: fmt.Sprintf("ag%d", i), Kind: switchboard.AgentExternal, Label: word(digestLabel), Status: switchboard.AgentRunning, Task: word(digestText)})
		}
		for range rnd.IntN(scale + 1) {
			p := rnd.Float64()
			d.Jobs = append(d.Jobs, switchboard.DigestJob{ID: word(20), Capability: word(30), Status: "running", Progress: &p})
		}
		for range rnd.IntN(scale/2 + 1) {
			d.PendingApprovals = append(d.PendingApprovals, switchboard.DigestApproval{ID: word(20), AgentID: word(20), Summary: word(digestText)})
		}
		for range rnd.IntN(RecentActivity + 1) {
			d.RecentActivity = append(d.RecentActivity, switchboard.DigestActivity{Ts: time.Unix(rnd.Int64N(1e9), 0).UTC(), Actor: word(20), Verb: "tool.call", Target: word(40)})
		}
		in, _ := json.Marshal(d)
		out, trace := trim(&memo, d, switchboard.DigestDropped{}, DefaultTargetTokens, DefaultMaxTokens)
		body, _ := json.Marshal(out)
		n := Tokens(string(body))
		if n > DefaultMaxTokens {
			t.Fatalf("iteration %d: digest is %d tokens, over the cap", it, n)
		}
		if out.Tokens < n-1 || out.Tokens > n+1 {
			t.Fatalf("iteration %d: tokens says %d, the digest is %d", it, out.Tokens, n)
		}
		for i := 1; i < len(trace); i++ {
			if trace[i] < trace[i-1] {
				t.Fatalf("iteration %d: dropped out of order: %v", it, trace)
			}
		}
		dropped := len(trace) > 0
		if !dropped && Tokens(string(in)) < DefaultTargetTokens-50 && out.Dropped != nil {
			t.Fatalf("iteration %d: a small digest lost something: %+v", it, out.Dropped)
		}
		for _, l := range trace {
			if l >= dropBackground && len(out.RecentActivity) > 0 {
				t.Fatalf("iteration %d: background contexts dropped while activity remains", it)
			}
			if l >= dropVisiblePanel {
				for _, c := range out.Contexts {
					if c.Attention == switchboard.AttentionBackground {
						t.Fatalf("iteration %d: hard-cap drops while a background context remains", it)
					}
				}
			}
		}
		if dropped && out.Dropped == nil {
			t.Fatalf("iteration %d: dropped %v without saying so", it, trace)
		}
	}
}

func sortByAttention(cs []switchboard.WorkspaceContext) {
	var out []switchboard.WorkspaceContext
	for r := range 3 {
		for _, c := range cs {
			if rank(c.Attention) == r {
				out = append(out, c)
			}
		}
	}
	copy(cs, out)
}

// TestDigestOfAHugeWorkspace: thousands of panels in several tabs and
// hundreds of agents, through reports, stay under the cap.
func TestDigestOfAHugeWorkspace(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	atts := []switchboard.Attention{switchboard.AttentionFocused, switchboard.AttentionVisible, switchboard.AttentionBackground}
	for tab := range 4 {
		var cs []switchboard.WorkspaceContext
		for i := range 40 {
			var ps []string
			for j := range 100 {
				ps = append(ps, fmt.Sprintf("t%d-c%d-p%d", tab, i, j))
			}
			cs = append(cs, page(fmt.Sprintf("t%d-c%d", tab, i), atts[(i+tab)%3], ps...))
		}
		if _, err := e.ws.Report(ctx, fmt.Sprintf("tab%d", tab), "", cs); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		e.agents.list = append(e.agents.list, switchboard.AgentSession{ID: fmt.Sprintf("ag%d", i), Kind: switchboard.AgentBackground,
			Label: fmt.Sprintf("worker %d", i), Status: switchboard.AgentRunning, Task: "reindex the project archive"})
	}
	for range 20 {
		if err := e.ledger.Append(ctx, &switchboard.ActivityEntry{Actor: "agent:assistant", Verb: activity.VerbToolCall, Target: "tasks.list"}); err != nil {
			t.Fatal(err)
		}
	}
	e.ws.Touch()
	d, err := e.ws.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(d)
	if n := Tokens(string(body)); n > DefaultMaxTokens || d.Tokens > DefaultMaxTokens {
		t.Fatalf("digest of a huge workspace is %d tokens (says %d)", n, d.Tokens)
	}
	if d.Dropped == nil || d.Dropped.BackgroundContexts == 0 || d.Dropped.RecentActivity != RecentActivity || len(d.RecentActivity) != 0 {
		t.Fatalf("dropped: %+v, activity left %d", d.Dropped, len(d.RecentActivity))
	}
	if len(d.Contexts) == 0 || d.Contexts[0].Attention != switchboard.AttentionFocused {
		t.Fatalf("the focused contexts did not survive: %d contexts", len(d.Contexts))
	}
}

// TestDigestAgentsShowThePrincipal: a label is whatever the
// registrant chose ("Assistant"), so the digest shows who acts beside it.
func TestDigestAgentsShowThePrincipal(t *testing.T) {
	t.Parallel()
	got := digestAgents([]switchboard.AgentSession{
		{ID: "a1", Kind: switchboard.AgentVoice, Label: "Assistant", Principal: "agent:mallory", Status: switchboard.AgentRunning},
	})
	if len(got) != 1 || got[0].Principal != "agent:mallory" || got[0].Label != "Assistant" {
		t.Fatalf("digest agents = %+v, want the principal beside the label", got)
	}
}
