package daemon

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// EventAgentStatus names the AG-UI CUSTOM event of an agent session's
// transition, on run streams and (as the SSE event kind) on tab streams.
const EventAgentStatus = "switchboard.agent.status"

// agentWiring is the agent registry's background work.
type agentWiring struct {
	stop  context.CancelFunc
	done  chan struct{}
	unsub func()        // the bus subscription and ask handlers (agentsbus.go)
	bus   bus.Bus       // carries status events; nil before relayAgents
	wait  time.Duration // how long a relayed interrupt or handoff waits for the owner
}

// startAgents builds the agent-session registry (docs/agents.md) over the
// ledger and the store — each session stored with this replica as its
// owner, so every replica lists and reaches it — relays its status events
// over the bus and interrupts to the owner (agentsbus.go), and starts its sweep of
// silent sessions and its coalesced writes.
func (d *Daemon) startAgents(opts Options) error {
	ao := opts.AgentSessions
	ao.Ledger, ao.Logger = d.Ledger, d.log
	ao.Store, ao.Replica = opts.Store, d.members.Self()
	ao.Relay = agentRelay{d}
	if len(opts.A2APeers) > 0 {
		ao.External = d.handoffA2A(opts.A2APeers) // agents.handoff to an A2A agent's URL
	}
	ao.Notify = func(ctx context.Context, r switchboard.AgentRecord) {
		if r.Session.Status.Final() && d.Panels != nil {
			d.Panels.ReleaseLeases(r.Session.ID) // an ended agent keeps nobody off a panel
		}
		d.agentStatusEvent(ctx, r)
		d.touchWorkspace() // the digests show the agents at work
		d.publishAgentStatus(ctx, r)
	}
	d.Agents = workspace.NewAgents(&ao)
	if err := d.relayAgents(opts.Bus, ao.InterruptWait); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	d.agents.stop, d.agents.done = stop, make(chan struct{})
	every := d.Agents.HeartbeatInterval() / 3
	go func() {
		defer close(d.agents.done)
		d.Agents.Run(ctx, every)
	}()
	return nil
}

func (d *Daemon) closeAgents() {
	if d.agents.stop != nil {
		d.agents.stop()
		<-d.agents.done
	}
	if d.agents.unsub != nil {
		d.agents.unsub()
	}
}

// agentStatus is the value of a switchboard.agent.status event.
type agentStatus struct {
	AgentID string                  `json:"agentId"`
	Kind    switchboard.AgentKind   `json:"kind"`
	Label   string                  `json:"label"`
	Status  switchboard.AgentStatus `json:"status"`
	Task    string                  `json:"task,omitempty"`
	// Progress (0..1) of a background session's job.
	Progress *float64 `json:"progress,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

// agentStatusEvent sends a transition to the streams this replica holds
// that can see the session: every live tab of the user it acts for (the
// rule GET /agents applies to a tab, workspace.Viewer), and the event
// streams of that user's assistant runs here. Every other replica does
// the same with what it holds when the transition reaches it over the bus
// (agentsbus.go).
func (d *Daemon) agentStatusEvent(ctx context.Context, r switchboard.AgentRecord) {
	s := r.Session
	ev := &agui.Custom{Name: EventAgentStatus, Value: agentStatus{AgentID: s.ID, Kind: s.Kind, Label: s.Label, Status: s.Status, Task: s.Task, Progress: s.Progress, Reason: s.Reason}}
	ev.SetTimestamp(time.Now())
	data, err := agui.Marshal(ev)
	if err != nil {
		return
	}
	if d.Agent != nil {
		for _, runID := range d.Agents.RunsFor(r.User) {
			if run, err := d.Agent.Get(runID); err == nil {
				run.Emit(ev)
			}
		}
		if s.Kind == switchboard.AgentChat && s.RunID != "" && s.Status.Final() {
			if run, err := d.Agent.Get(s.RunID); err == nil {
				run.Emit(ev) // its own end, before the run's stream closes if it still can
			}
		}
	}
	if d.Sessions == nil {
		return
	}
	for _, sid := range d.Sessions.LiveIDs() {
		tabUser, err := d.Sessions.User(ctx, sid)
		if err != nil || !workspace.TabViewer(sid, tabUser).Sees(r) {
			continue
		}
		_ = d.Sessions.SendHere(ctx, sid, EventAgentStatus, json.RawMessage(data)) // the tab just went away: nothing to tell
	}
}

// runSessions records every assistant run as a chat agent session bound
// to its tab (agent.RunSessions).
type runSessions struct{ d *Daemon }

var _ agent.RunSessions = runSessions{}

func (rs runSessions) RunStarted(ctx context.Context, run *agent.Run) context.Context {
	d := rs.d
	user := ""
	if sid := run.SessionID(); sid != "" {
		user, _ = d.Sessions.User(ctx, sid) // a session without a user is the daemon's user's
	}
	transport := workspace.TransportAGUI
	if run.Info().Harness == agent.HarnessAISDK.Name {
		transport = workspace.TransportAISDK
	}
	s, err := d.Agents.Start(ctx, workspace.Spec{
		Kind: switchboard.AgentChat, Label: "assistant", Principal: switchboard.Assistant(), User: user,
		Transport: transport, SessionID: run.SessionID(), RunID: run.ID(), Status: switchboard.AgentRunning,
		Holder: "chat:" + run.Owner() + "\x00" + run.ThreadID(), // the chat's next run keeps the panels this one leased
		// Stop, not Cancel: a run that ended at an approval (interrupts)
		// has nothing left to cancel but the calls it left waiting.
		Interrupt: func(context.Context, string) error { run.Stop(); return nil },
	})
	if err != nil {
		return ctx
	}
	return switchboard.WithAgentSession(ctx, s.ID)
}

func (rs runSessions) RunEnded(ctx context.Context, run *agent.Run) {
	s, ok := rs.d.Agents.ByRun(run.ID())
	if !ok || s.Status.Final() {
		return
	}
	in := run.Info()
	if in.Status == switchboard.RunWaiting {
		// Ended at an approval: the session waits with its calls until
		// they are answered (a resume, the console) or it is interrupted.
		rs.d.Agents.Park(ctx, s.ID, run.Waiting(), "run "+string(in.Status))
		return
	}
	status, reason := switchboard.AgentDone, "run "+string(in.Status)
	if in.Status == switchboard.RunCancelled {
		status = switchboard.AgentCancelled
	}
	if in.Error != nil {
		reason += ": " + in.Error.Message
	}
	_, _ = rs.d.Agents.End(ctx, s.ID, status, reason)
}

func (rs runSessions) Notes(ctx context.Context, run *agent.Run) []json.RawMessage {
	s, ok := rs.d.Agents.ByRun(run.ID())
	if !ok {
		return nil
	}
	user, _ := rs.d.Agents.UserOf(s.ID)
	var out []json.RawMessage
	for _, n := range rs.d.Agents.TakeNotes(run.SessionID(), user) {
		if b, err := json.Marshal(n); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// approvalEvent runs on each replica for every approval event: the agent
// session whose call it is shows waiting_approval while it waits (derived
// here, from the approval service, not threaded through the loop); a
// background or external agent's approval is escalated (a note for the
// user's assistant); and the event goes to each tab this replica holds
// that may decide it (workspace.TabMayDecide). The registry is per
// replica: an agent on another replica is unknown here.
func (d *Daemon) approvalEvent(ctx context.Context, kind string, data []byte) {
	var ev approval.RequestEvent
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	apr := switchboard.ApprovalRequest{ID: ev.ApprovalID, SessionID: ev.SessionID, Agent: ev.Agent, AgentID: ev.AgentID, User: ev.User,
		Tool: ev.Tool, Summary: ev.Summary, ExpiresAt: ev.ExpiresAt}
	if d.Agents != nil && ev.AgentID != "" {
		switch kind {
		case approval.EventRequest:
			d.Agents.ApprovalPending(ctx, ev.AgentID, ev.ApprovalID)
			d.Agents.Escalate(ev.AgentID, apr)
		case approval.EventResolved:
			var res approval.ResolvedEvent
			if json.Unmarshal(data, &res) == nil && res.Status == switchboard.ApprovalCancelled {
				d.Agents.ApprovalCancelled(ctx, ev.AgentID, ev.ApprovalID)
			} else {
				d.Agents.ApprovalSettled(ctx, ev.AgentID, ev.ApprovalID)
			}
		}
	}
	if d.Sessions == nil {
		return
	}
	for _, sid := range d.Sessions.LiveIDs() {
		user, err := d.Sessions.User(ctx, sid)
		if err != nil || !workspace.TabMayDecide(ctx, d.Agents, apr, sid, user) {
			continue
		}
		_ = d.Sessions.SendHere(ctx, sid, kind, data) // the tab just went away: nothing to tell
	}
}
