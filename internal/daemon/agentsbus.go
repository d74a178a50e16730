package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Agent sessions across replicas (issue 16). A session is stored with the
// replica that owns its work (internal/workspace/shared.go); what only the owner
// can do travels over the bus:
//
//   - agents.status: every transition, so each replica sends it to the
//     tabs and assistant runs it holds (agentStatusEvent) and refreshes
//     its digests. The publisher has already done so for its own.
//   - agents.interrupt / agents.interrupted: an interrupt that lands on
//     another replica goes to the owner, which cancels the work it holds
//     and answers; the caller gets that answer as if it had asked the
//     owner. Without an answer in time (the owner died, a message was
//     lost) the caller reads the store: a session that ended meanwhile is
//     the answer, otherwise TIMEOUT. A handoff to another replica's
//     session goes the same way: the owner keeps it in the session's
//     inbox (and queues its assistant's note) and answers; the caller
//     writes the ledger entry once it has.
//
// The bus delivers at most once; the store stays the truth: lists and
// reads never depend on a message.

const (
	topicAgentStatus      = "agents.status"
	topicAgentInterrupt   = "agents.interrupt"
	topicAgentInterrupted = "agents.interrupted"
)

// relayGrace is how much longer than the owner's own interrupt wait a
// relayed interrupt waits for the owner's answer.
const relayGrace = 5 * time.Second

// agentStatusMsg is one transition on the bus.
type agentStatusMsg struct {
	Origin string                  `json:"origin"`
	Record switchboard.AgentRecord `json:"record"`
}

// interruptMsg asks Owner to interrupt session ID for Viewer, or (with
// Handoff) to deliver a handoff to it.
type interruptMsg struct {
	Owner   string                    `json:"owner"`
	ID      string                    `json:"id"`
	Viewer  workspace.Viewer          `json:"viewer"`
	Handoff *switchboard.AgentHandoff `json:"handoff,omitempty"`
	Reply   string                    `json:"reply"`
}

// interruptReply is the owner's answer.
type interruptReply struct {
	Reply   string                   `json:"reply"`
	Session switchboard.AgentSession `json:"session"`
	Error   *switchboard.Error       `json:"error,omitempty"`
}

// interruptRelay holds the callers waiting for an owner's answer.
type interruptRelay struct {
	bus  bus.Bus
	wait time.Duration
	mu   sync.Mutex
	reqs map[string]chan interruptReply
}

// relayAgents subscribes this replica to the agent topics. Status events
// of other replicas are sent to tabs and runs by one worker, in order,
// off the bus's delivery goroutine.
func (d *Daemon) relayAgents(b bus.Bus, interruptWait time.Duration) error {
	if interruptWait <= 0 {
		interruptWait = workspace.DefaultInterruptWait
	}
	d.agents.relay = &interruptRelay{bus: b, wait: interruptWait + relayGrace, reqs: map[string]chan interruptReply{}}
	events := make(chan switchboard.AgentRecord, 256)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case r := <-events:
				d.agentStatusEvent(ctx, r)
				d.touchWorkspace()
			}
		}
	})
	var unsubs []func()
	done := func() {
		for _, u := range unsubs {
			u()
		}
		stop()
		wg.Wait()
	}
	sub := func(topic string, h bus.Handler) error {
		u, err := b.Subscribe(topic, h)
		if err != nil {
			done()
			return err
		}
		unsubs = append(unsubs, u)
		return nil
	}
	if err := sub(topicAgentStatus, func(p []byte) {
		var m agentStatusMsg
		if json.Unmarshal(p, &m) != nil || m.Origin == d.members.Self() {
			return // this replica's own, sent already
		}
		select {
		case events <- m.Record:
		default:
			d.log.Warn("agent status events from other replicas are arriving faster than they are sent; dropped one", "agent", m.Record.Session.ID)
		}
	}); err != nil {
		return err
	}
	if err := sub(topicAgentInterrupt, func(p []byte) {
		var m interruptMsg
		if json.Unmarshal(p, &m) != nil || m.Owner != d.members.Self() {
			return
		}
		wg.Go(func() { d.answerInterrupt(ctx, m) })
	}); err != nil {
		return err
	}
	if err := sub(topicAgentInterrupted, d.agents.relay.deliver); err != nil {
		return err
	}
	d.agents.unsub = done
	return nil
}

// publishAgentStatus tells the other replicas of a transition.
func (d *Daemon) publishAgentStatus(ctx context.Context, r switchboard.AgentRecord) {
	b := d.agents.relay
	if b == nil {
		return
	}
	p, err := json.Marshal(agentStatusMsg{Origin: d.members.Self(), Record: r})
	if err != nil {
		return
	}
	if err := b.bus.Publish(context.WithoutCancel(ctx), topicAgentStatus, p); err != nil {
		d.log.WarnContext(ctx, "other replicas' tabs miss this agent status event (lists still show it)", "agent", r.Session.ID, "err", err)
	}
}

// answerInterrupt interrupts a session this replica owns for a caller on
// another replica, or delivers a handoff to it, and publishes the answer.
func (d *Daemon) answerInterrupt(ctx context.Context, m interruptMsg) {
	var (
		s   switchboard.AgentSession
		err error
	)
	if m.Handoff != nil {
		err = d.Agents.DeliverLocal(*m.Handoff)
	} else {
		s, err = d.Agents.InterruptLocal(ctx, m.ID, m.Viewer)
	}
	rep := interruptReply{Reply: m.Reply, Session: s}
	if err != nil {
		rep.Error = switchboard.AsError(err)
	}
	p, err := json.Marshal(rep)
	if err == nil {
		err = d.agents.relay.bus.Publish(context.WithoutCancel(ctx), topicAgentInterrupted, p)
	}
	if err != nil {
		d.log.Warn("could not answer a relayed interrupt; its caller reads the store", "agent", m.ID, "err", err)
	}
}

// agentRelay is workspace.AgentsOptions.Relay over the bus.
type agentRelay struct{ d *Daemon }

var _ workspace.Relay = agentRelay{}

// Interrupt asks rec's owner to interrupt it and waits for the answer.
func (ar agentRelay) Interrupt(ctx context.Context, rec switchboard.AgentRecord, v workspace.Viewer) (switchboard.AgentSession, error) {
	d, id := ar.d, rec.Session.ID
	rep, err := ar.ask(ctx, interruptMsg{Owner: rec.Replica, ID: id, Viewer: v})
	if err == nil {
		if rep.Error != nil {
			return rep.Session, rep.Error
		}
		return rep.Session, nil
	}
	if switchboard.CodeOf(err) != switchboard.CodeTimeout {
		return switchboard.AgentSession{}, err
	}
	// No answer: the owner died or a message was lost. A session that
	// ended meanwhile (its own end, or a survivor's takeover) is the
	// definite state; otherwise say so.
	if s, gerr := d.Agents.Get(ctx, id, v); gerr == nil && s.Status.Final() {
		return s, nil
	}
	return switchboard.AgentSession{}, err
}

// Handoff asks rec's owner to deliver h and waits for the answer.
func (ar agentRelay) Handoff(ctx context.Context, rec switchboard.AgentRecord, h switchboard.AgentHandoff) error {
	rep, err := ar.ask(ctx, interruptMsg{Owner: rec.Replica, ID: rec.Session.ID, Handoff: &h})
	if err != nil {
		return err
	}
	if rep.Error != nil {
		return rep.Error
	}
	return nil
}

// ask publishes m to its owner and waits for the answer; TIMEOUT when
// none comes within the relay's wait.
func (ar agentRelay) ask(ctx context.Context, m interruptMsg) (interruptReply, error) {
	r := ar.d.agents.relay
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	m.Reply = hex.EncodeToString(b)
	ch := make(chan interruptReply, 1)
	r.mu.Lock()
	r.reqs[m.Reply] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.reqs, m.Reply)
		r.mu.Unlock()
	}()
	p, err := json.Marshal(m)
	if err != nil {
		return interruptReply{}, err
	}
	if err := r.bus.Publish(ctx, topicAgentInterrupt, p); err != nil {
		return interruptReply{}, err
	}
	t := time.NewTimer(r.wait)
	defer t.Stop()
	select {
	case rep := <-ch:
		return rep, nil
	case <-ctx.Done():
		return interruptReply{}, ctx.Err()
	case <-t.C:
		return interruptReply{}, switchboard.Errorf(switchboard.CodeTimeout,
			"agent %s runs on replica %s, which did not answer within %s; it is ended when that replica is taken over — check GET /api/v1/agents/%s",
			m.ID, m.Owner, r.wait, m.ID)
	}
}

// deliver hands an owner's answer to its waiting caller, if it is here.
func (r *interruptRelay) deliver(p []byte) {
	var rep interruptReply
	if json.Unmarshal(p, &rep) != nil {
		return
	}
	r.mu.Lock()
	ch := r.reqs[rep.Reply]
	r.mu.Unlock()
	if ch != nil {
		select {
		case ch <- rep:
		default:
		}
	}
}
