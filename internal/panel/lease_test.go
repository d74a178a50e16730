package panel_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/panel"
)

// clock is a settable clock for leases.
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

var plannerP = switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}

// leaseErr asserts err is LEASE_HELD naming holder and returns its details.
func leaseErr(t *testing.T, err error, agentID, principal string, expires time.Time) {
	t.Helper()
	e := switchboard.AsError(err)
	if e == nil || e.Code != switchboard.CodeLeaseHeld {
		t.Fatalf("got %v, want LEASE_HELD", err)
	}
	b, _ := json.Marshal(e.Details)
	var d struct {
		InstanceID string    `json:"instanceId"`
		AgentID    string    `json:"agentId"`
		Principal  string    `json:"principal"`
		ExpiresAt  time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal(b, &d); err != nil || d.AgentID != agentID || d.Principal != principal || !d.ExpiresAt.Equal(expires) || d.InstanceID == "" {
		t.Fatalf("LEASE_HELD details %s, want holder %s (%s) until %v", b, agentID, principal, expires)
	}
	if !strings.Contains(e.Message, agentID) || !strings.Contains(e.Message, "their edits always win") {
		t.Errorf("message %q does not name the holder and the way out", e.Message)
	}
}

func TestLeases(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)}
	e := newEnvWith(t, nil, func(o *panel.Options) { o.Now = clk.now; o.LeaseTTL = time.Minute })
	sid, _ := e.tab(t)
	tab := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sid})
	chat := as(agentP, "ag_chat") // the assistant in its agent session
	ext := as(plannerP, "ag_ext") // an external agent in its session
	bare := as(plannerP, "")      // the same principal with no agent session
	form := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	fill := func(ctx context.Context, v map[string]any) (panel.FillResult, error) {
		inv, err := e.callIn(t, ctx, panel.ToolFill, map[string]any{"instanceId": form.InstanceID, "values": v})
		if err != nil {
			return panel.FillResult{}, err
		}
		return result[panel.FillResult](t, inv, nil), nil
	}
	state := func() panel.State {
		return do[panel.State](t, e, agentP, panel.ToolReadState, map[string]any{"panelId": form.InstanceID})
	}

	t0 := clk.now()
	res, err := fill(chat, map[string]any{"name": "Apollo II"})
	if err != nil || res.Lease == nil || res.Lease.AgentID != "ag_chat" || res.Lease.Principal != "agent:assistant" || !res.Lease.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("the first fill takes the lease: %+v %v", res.Lease, err)
	}

	t.Run("another agent's fill, action and close are LEASE_HELD, naming the holder", func(t *testing.T) {
		_, err := fill(ext, map[string]any{"budget": 7})
		leaseErr(t, err, "ag_chat", "agent:assistant", t0.Add(time.Minute))
		_, err = e.callIn(t, ext, panel.ToolRunAction, map[string]any{"instanceId": form.InstanceID, "action": "save"})
		leaseErr(t, err, "ag_chat", "agent:assistant", t0.Add(time.Minute))
		_, err = e.callIn(t, ext, panel.ToolClose, map[string]any{"instanceId": form.InstanceID})
		leaseErr(t, err, "ag_chat", "agent:assistant", t0.Add(time.Minute))
		if st := state(); st.Values["project"]["budget"] != float64(1200) || st.Filled["project"][0] != "name" || len(st.Filled["project"]) != 1 {
			t.Fatalf("a refused fill changed the panel: %+v", st)
		}
	})

	t.Run("the holder's next edit renews it; reads show it", func(t *testing.T) {
		clk.add(40 * time.Second)
		res, err := fill(chat, map[string]any{"budget": 1300})
		if err != nil || !res.Lease.ExpiresAt.Equal(clk.now().Add(time.Minute)) || !res.Lease.Since.Equal(t0) {
			t.Fatalf("renewal: %+v %v", res.Lease, err)
		}
		if st := state(); st.Lease == nil || st.Lease.AgentID != "ag_chat" || !st.Lease.ExpiresAt.Equal(res.Lease.ExpiresAt) {
			t.Fatalf("read_state lease: %+v", st.Lease)
		}
		list := do[panel.ListResult](t, e, agentP, panel.ToolList, map[string]any{})
		if len(list.Instances) != 1 || list.Instances[0].Lease == nil || list.Instances[0].Lease.AgentID != "ag_chat" {
			t.Fatalf("panel.list instances: %+v", list.Instances)
		}
		if sn, _ := e.svc.Snapshot(tab, form.InstanceID); sn.Lease == nil || sn.Lease.Principal != "agent:assistant" {
			t.Fatalf("the tab's snapshot: %+v", sn.Lease)
		}
	})

	t.Run("a lapsed lease passes to the next agent; without a session the principal holds it", func(t *testing.T) {
		clk.add(61 * time.Second)
		if st := state(); st.Lease != nil {
			t.Fatalf("a lapsed lease is still shown: %+v", st.Lease)
		}
		res, err := fill(bare, map[string]any{"budget": 1400})
		if err != nil || res.Lease.AgentID != "agent:planner" || res.Lease.Principal != "agent:planner" {
			t.Fatalf("fill after lapse: %+v %v", res.Lease, err)
		}
		// The same principal in an agent session is another agent.
		_, err = fill(ext, map[string]any{"budget": 1500})
		leaseErr(t, err, "agent:planner", "agent:planner", clk.now().Add(time.Minute))
	})

	t.Run("the user's edit wins and ends the lease", func(t *testing.T) {
		ed, err := e.svc.Edit(tab, form.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"budget": json.RawMessage(`999`)}})
		if err != nil || len(ed.Applied) != 1 {
			t.Fatalf("the user's edit was not kept: %+v %v", ed, err)
		}
		if st := state(); st.Lease != nil || st.Values["project"]["budget"] != float64(999) || st.Dirty["project"][0] != "budget" {
			t.Fatalf("after the user's edit: %+v", st)
		}
		res, err := fill(chat, map[string]any{"budget": 1, "name": "Apollo III"})
		if err != nil || len(res.Skipped) != 1 || res.Lease.AgentID != "ag_chat" {
			t.Fatalf("another agent may edit once the user ended the lease: %+v %v", res, err)
		}
	})

	t.Run("the user's click wins too", func(t *testing.T) {
		if _, err := e.svc.UserAction(tab, form.InstanceID, "save"); err != nil {
			t.Fatal(err)
		}
		if st := state(); st.Lease != nil {
			t.Fatalf("the user's action left the lease: %+v", st.Lease)
		}
	})

	t.Run("the user's token is the user: it wins over a lease", func(t *testing.T) {
		if _, err := fill(chat, map[string]any{"name": "Apollo IV"}); err != nil {
			t.Fatal(err)
		}
		user := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
		if _, err := fill(as(user, ""), map[string]any{"name": "Apollo V"}); err != nil {
			t.Fatalf("a user's fill: %v", err)
		}
		if st := state(); st.Lease != nil || st.Values["project"]["name"] != "Apollo V" {
			t.Fatalf("after the user's fill: %+v", st)
		}
	})

	t.Run("patch takes the lease on a composed panel", func(t *testing.T) {
		v, err := e.callIn(t, chat, panel.ToolCompose, map[string]any{"spec": json.RawMessage(tableSpec)})
		composed := result[view](t, v, err)
		patch := []map[string]any{{"op": "replace", "path": "/nodes/body/props/title", "value": "Mine"}}
		if _, err := e.callIn(t, chat, panel.ToolPatch, map[string]any{"instanceId": composed.InstanceID, "patch": patch}); err != nil {
			t.Fatal(err)
		}
		_, err = e.callIn(t, ext, panel.ToolPatch, map[string]any{"instanceId": composed.InstanceID, "patch": patch})
		leaseErr(t, err, "ag_chat", "agent:assistant", clk.now().Add(time.Minute))
		// The tab closes it whatever the lease; the lease goes with it.
		if err := e.svc.CloseInstance(tab, composed.InstanceID); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	sid, _ := e.tab(t)
	form := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "borealis"}})
	do[panel.FillResult](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": form.InstanceID, "values": map[string]any{"budget": 900}})
	tab := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sid})
	if _, err := e.svc.Edit(tab, form.InstanceID, panel.EditRequest{Values: map[string]json.RawMessage{"name": json.RawMessage(`"B (user)"`)}}); err != nil {
		t.Fatal(err)
	}
	do[panel.FillResult](t, e, agentP, panel.ToolFill, map[string]any{"instanceId": form.InstanceID, "values": map[string]any{"status": "active"}})

	st := do[panel.State](t, e, agentP, panel.ToolReadState, map[string]any{"panelId": form.InstanceID})
	if st.PanelID != form.InstanceID || st.SessionID != sid || st.Panel != "project.settings" || st.Slot != panel.DefaultSlot || st.Origin != "host" {
		t.Fatalf("identity: %+v", st)
	}
	if st.Values["project"]["name"] != "B (user)" || st.Values["project"]["budget"] != float64(900) || st.Values["project"]["status"] != "active" {
		t.Fatalf("values: %v", st.Values)
	}
	if len(st.Dirty["project"]) != 1 || st.Dirty["project"][0] != "name" || strings.Join(st.Filled["project"], ",") != "budget,status" {
		t.Fatalf("dirty %v filled %v", st.Dirty, st.Filled)
	}
	if st.Lease == nil || st.Lease.AgentID != "agent:assistant" {
		t.Fatalf("lease: %+v", st.Lease)
	}
	if alias := do[panel.State](t, e, agentP, panel.ToolReadState, map[string]any{"instanceId": form.InstanceID}); alias.Version != st.Version {
		t.Fatalf("instanceId alias: %+v", alias)
	}
	// A read is not an edit: it takes no lease.
	if _, err := e.callIn(t, as(plannerP, "ag_x"), panel.ToolReadState, map[string]any{"panelId": form.InstanceID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.callIn(t, as(plannerP, "ag_x"), panel.ToolFill, map[string]any{"instanceId": form.InstanceID, "values": map[string]any{"budget": 1}}); switchboard.CodeOf(err) != switchboard.CodeLeaseHeld {
		t.Fatalf("the assistant's lease: %v", err)
	}
	for _, bad := range []map[string]any{{"panelId": "pi_nope"}, {}, {"panelId": form.InstanceID, "extra": 1}} {
		_, err := e.call(t, agentP, panel.ToolReadState, bad)
		if c := switchboard.CodeOf(err); c != switchboard.CodeNotFound && c != switchboard.CodeSchemaViolation {
			t.Errorf("read_state %v: %v", bad, err)
		}
	}
	tool, err := e.reg.Get(context.Background(), panel.ToolReadState)
	if err != nil || tool.Class != switchboard.ClassRead || tool.Approval != "" && tool.Approval != switchboard.ApprovalNone {
		t.Fatalf("panel.read_state is %+v %v; want read class, no approval", tool, err)
	}
}

// The built-in assistant's runs of one chat are one holder (Options.Holder):
// the chat's next run renews its previous run's lease instead of meeting
// LEASE_HELD, and others still do. A lease ends when its holding session
// ends (ReleaseLeases), not only when it expires.
func TestLeaseHolderAndRelease(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)}
	e := newEnvWith(t, nil, func(o *panel.Options) {
		o.Now = clk.now
		o.Holder = func(id string) string {
			if strings.HasPrefix(id, "ag_run") {
				return "chat:c1"
			}
			return ""
		}
	})
	e.tab(t)
	form := do[view](t, e, agentP, panel.ToolOpen, map[string]any{"panel": "project.settings", "params": map[string]any{"projectId": "apollo"}})
	fill := func(ctx context.Context, v map[string]any) (panel.FillResult, error) {
		inv, err := e.callIn(t, ctx, panel.ToolFill, map[string]any{"instanceId": form.InstanceID, "values": v})
		if err != nil {
			return panel.FillResult{}, err
		}
		return result[panel.FillResult](t, inv, nil), nil
	}
	if _, err := fill(as(agentP, "ag_run1"), map[string]any{"name": "Apollo II"}); err != nil {
		t.Fatal(err)
	}
	clk.add(10 * time.Second)
	res, err := fill(as(agentP, "ag_run2"), map[string]any{"name": "Apollo III"})
	if err != nil || res.Lease == nil || res.Lease.AgentID != "ag_run2" || !res.Lease.Since.Equal(clk.now().Add(-10*time.Second)) {
		t.Fatalf("the chat's next run: %+v %v, want the lease renewed to it", res.Lease, err)
	}
	_, err = fill(as(plannerP, "ag_ext"), map[string]any{"budget": 7})
	leaseErr(t, err, "ag_run2", "agent:assistant", clk.now().Add(panel.DefaultLeaseTTL))
	if n := e.svc.ReleaseLeases("ag_run1"); n != 0 {
		t.Fatalf("the previous run released %d leases; the chat's newest run holds it", n)
	}
	if n := e.svc.ReleaseLeases("ag_run2"); n != 1 {
		t.Fatalf("released %d leases, want 1", n)
	}
	if res, err := fill(as(plannerP, "ag_ext"), map[string]any{"budget": 7}); err != nil || res.Lease == nil || res.Lease.AgentID != "ag_ext" {
		t.Fatalf("after the holder ended: %+v %v", res.Lease, err)
	}
}
