package daemon

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Agent sessions across replicas (issue 16). A session is stored with the
// replica that owns its work (internal/workspace/shared.go):
//
//   - agents.status (bus): every transition, so each replica sends it to
//     the tabs and assistant runs it holds (agentStatusEvent), refreshes
//     its digests and, for an end, releases the session's panel leases
//     on the tabs it holds. The publisher has already done so for its
//     own.
//   - What only the owner can do is asked of it (cluster.Asker): an
//     interrupt that lands on another replica (askInterrupt: the owner
//     cancels the work it holds and answers with the session), and a
//     handoff to another replica's session (askHandoff: the owner keeps it
//     in the session's inbox and queues its assistant's note; the caller
//     writes the ledger entry once it has). An interrupt without an answer
//     (the owner is gone, a message was lost) reads the store: a session
//     that ended meanwhile is the answer.
//
// The bus delivers at most once; the store stays the truth: lists and
// reads never depend on a message.

const (
	topicAgentStatus = "agents.status"
	askInterrupt     = "agents.interrupt"
	askHandoff       = "agents.handoff"
)

// relayGrace is how much longer than the owner's own interrupt wait a
// relayed interrupt waits for the owner's answer.
const relayGrace = 5 * time.Second

// agentStatusMsg is one transition on the bus.
type agentStatusMsg struct {
	Origin string                  `json:"origin"`
	Record switchboard.AgentRecord `json:"record"`
}

// interruptMsg asks the owner to interrupt session ID for Viewer.
type interruptMsg struct {
	ID     string           `json:"id"`
	Viewer workspace.Viewer `json:"viewer"`
}

// relayAgents subscribes this replica to the agents' status events and
// answers the interrupts and handoffs asked of it. Status events of other
// replicas are sent to tabs and runs by one worker, in order, off the
// bus's delivery goroutine.
func (d *Daemon) relayAgents(b bus.Bus, interruptWait time.Duration) error {
	if interruptWait <= 0 {
		interruptWait = workspace.DefaultInterruptWait
	}
	d.agents.wait = interruptWait + relayGrace
	events := make(chan switchboard.AgentRecord, 256)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		select { // the runs and tabs it reaches are set up after this
		case <-ctx.Done():
			return
		case <-d.ready:
		}
		for {
			select {
			case <-ctx.Done():
				return
			case r := <-events:
				if r.Session.Status.Final() {
					// A copy adopted here ends too, and the lease may
					// live here, with the tab it is on.
					d.Agents.EndedElsewhere(r.Session)
					if d.Panels != nil {
						d.Panels.ReleaseLeases(r.Session.ID)
					}
				}
				d.agentStatusEvent(ctx, r)
				d.touchWorkspace()
			}
		}
	})
	unsub, err := b.Subscribe(topicAgentStatus, func(p []byte) {
		var m agentStatusMsg
		if json.Unmarshal(p, &m) != nil || m.Origin == d.members.Self() {
			return // this replica's own, sent already
		}
		select {
		case events <- m.Record:
		default:
			d.log.Warn("agent status events from other replicas are arriving faster than they are sent; dropped one", "agent", m.Record.Session.ID)
		}
	})
	if err != nil {
		stop()
		wg.Wait()
		return err
	}
	unInterrupt := d.asker.Handle(askInterrupt, func(ctx context.Context, req []byte) ([]byte, error) {
		var m interruptMsg
		if err := json.Unmarshal(req, &m); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode a relayed interrupt: %v", err)
		}
		s, err := d.Agents.InterruptLocal(ctx, m.ID, m.Viewer)
		if err != nil {
			return nil, err
		}
		return json.Marshal(s)
	})
	unHandoff := d.asker.Handle(askHandoff, func(ctx context.Context, req []byte) ([]byte, error) {
		var h switchboard.AgentHandoff
		if err := json.Unmarshal(req, &h); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode a relayed handoff: %v", err)
		}
		return nil, d.Agents.DeliverLocal(h)
	})
	d.agents.bus = b
	d.agents.unsub = func() {
		unsub()
		unInterrupt()
		unHandoff()
		stop()
		wg.Wait()
	}
	return nil
}

// publishAgentStatus tells the other replicas of a transition.
func (d *Daemon) publishAgentStatus(ctx context.Context, r switchboard.AgentRecord) {
	b := d.agents.bus
	if b == nil {
		return
	}
	p, err := json.Marshal(agentStatusMsg{Origin: d.members.Self(), Record: r})
	if err != nil {
		return
	}
	if err := b.Publish(context.WithoutCancel(ctx), topicAgentStatus, p); err != nil {
		d.log.WarnContext(ctx, "other replicas' tabs miss this agent status event (lists still show it)", "agent", r.Session.ID, "err", err)
	}
}

// agentRelay is workspace.AgentsOptions.Relay over cluster asks.
type agentRelay struct{ d *Daemon }

var _ workspace.Relay = agentRelay{}

// Interrupt asks rec's owner to interrupt it and waits for the answer.
func (ar agentRelay) Interrupt(ctx context.Context, rec switchboard.AgentRecord, v workspace.Viewer) (switchboard.AgentSession, error) {
	d, id := ar.d, rec.Session.ID
	req, err := json.Marshal(interruptMsg{ID: id, Viewer: v})
	if err != nil {
		return switchboard.AgentSession{}, err
	}
	actx, cancel := context.WithTimeout(ctx, d.agents.wait)
	defer cancel()
	res, err := d.asker.Ask(actx, rec.Replica, askInterrupt, req)
	if err == nil {
		var s switchboard.AgentSession
		if err := json.Unmarshal(res, &s); err != nil {
			return s, switchboard.Errorf(switchboard.CodeInternal, "decode the owner's answer to an interrupt: %v", err)
		}
		return s, nil
	}
	if ctx.Err() != nil || !cluster.NoAnswer(err) {
		return switchboard.AgentSession{}, err // the owner's answer, or the caller gave up
	}
	// No answer: the owner is gone or a message was lost. A session that
	// ended meanwhile (its own end, or a survivor's takeover) is the
	// definite state; otherwise say so.
	if s, gerr := d.Agents.Get(ctx, id, v); gerr == nil && s.Status.Final() {
		return s, nil
	}
	if switchboard.CodeOf(err) == switchboard.CodeTimeout {
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeTimeout,
			"agent %s runs on replica %s, which did not answer within %s; it is ended when that replica is taken over — check GET /api/v1/agents/%s",
			id, rec.Replica, d.agents.wait, id)
	}
	return switchboard.AgentSession{}, err
}

// Handoff asks rec's owner to deliver h and waits for the answer.
func (ar agentRelay) Handoff(ctx context.Context, rec switchboard.AgentRecord, h switchboard.AgentHandoff) error {
	d := ar.d
	req, err := json.Marshal(h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.agents.wait)
	defer cancel()
	_, err = d.asker.Ask(ctx, rec.Replica, askHandoff, req)
	return err
}
