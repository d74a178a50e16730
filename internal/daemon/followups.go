package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// Follow-ups at any replica (internal/agent/followup.go): a replica with
// no busy run of a chat relays a follow-up to the replica that ran the
// chat's newest run. The request goes on topicFollowUp naming that
// replica, which decides it (agent Runtime.QueueFollowUp) and answers on
// the reply topic the sender subscribed to first, as a browser action's
// result travels back.

// An AI SDK client that reattaches to a chat at another replica reads the
// run's stored events there (internal/httpapi/chatstream.go); that replica tells
// the holder on topicChatReading (the payload is the run id), so the run
// is not cancelled as unread.

// topicFollowUp carries relayed follow-ups; followUpRelayWait bounds the
// wait for the holding replica's answer.
const (
	topicFollowUp     = "runs.followup"
	topicChatReading  = "runs.reading"
	followUpRelayWait = 5 * time.Second
)

type followUpRequest struct {
	Replica  string               `json:"replica"`
	Chat     string               `json:"chat"`
	FollowUp switchboard.FollowUp `json:"followUp"`
	Owner    string               `json:"owner,omitempty"`
	Reply    string               `json:"reply"`
}

type followUpReply struct {
	Result   switchboard.FollowUpResult `json:"result"`
	Answered bool                       `json:"answered"`
	Error    *switchboard.Error         `json:"error,omitempty"`
}

// relayFollowUp is agent.Options.RelayFollowUp on the bus.
func (d *Daemon) relayFollowUp(b bus.Bus) func(ctx context.Context, replica, chat string, f switchboard.FollowUp, owner string) (switchboard.FollowUpResult, bool, error) {
	return func(ctx context.Context, replica, chat string, f switchboard.FollowUp, owner string) (switchboard.FollowUpResult, bool, error) {
		req := followUpRequest{Replica: replica, Chat: chat, FollowUp: f, Owner: owner, Reply: topicFollowUp + ".reply." + broker.NewID()}
		payload, err := json.Marshal(req)
		if err != nil {
			return switchboard.FollowUpResult{}, false, err
		}
		got := make(chan followUpReply, 1)
		unsub, err := b.Subscribe(req.Reply, func(p []byte) {
			var rep followUpReply
			if json.Unmarshal(p, &rep) == nil {
				select {
				case got <- rep:
				default:
				}
			}
		})
		if err != nil {
			return switchboard.FollowUpResult{}, false, err
		}
		defer unsub()
		if err := b.Publish(ctx, topicFollowUp, payload); err != nil {
			return switchboard.FollowUpResult{}, false, err
		}
		wait := time.NewTimer(followUpRelayWait)
		defer wait.Stop()
		select {
		case rep := <-got:
			if rep.Error != nil {
				return rep.Result, false, rep.Error
			}
			return rep.Result, rep.Answered, nil
		case <-wait.C:
			// The holder may have stopped: a survivor ends its run, after
			// which the same follow-up (same clientSeq and nonce) starts one.
			return switchboard.FollowUpResult{}, false, switchboard.Errorf(switchboard.CodeUnavailable,
				"replica %s, which runs chat session %s, did not take the follow-up within %s (it may have stopped); send the same follow-up again shortly", replica, chat, followUpRelayWait)
		case <-ctx.Done():
			return switchboard.FollowUpResult{}, false, context.Cause(ctx)
		}
	}
}

// serveFollowUps answers the follow-ups relayed to this replica; the
// others' are left to theirs.
func (d *Daemon) serveFollowUps(b bus.Bus) (func(), error) {
	return b.Subscribe(topicFollowUp, func(p []byte) {
		var req followUpRequest
		if d.Agent == nil || json.Unmarshal(p, &req) != nil || req.Reply == "" || req.Replica != d.members.Self() {
			return
		}
		go func() { // a handler must not block; a follow-up takes the chat's lock
			ctx, cancel := context.WithTimeout(context.Background(), followUpRelayWait)
			defer cancel()
			res, answered, err := d.Agent.QueueFollowUp(ctx, req.Chat, req.FollowUp, req.Owner)
			rep := followUpReply{Result: res, Answered: answered}
			if err != nil {
				rep.Error = switchboard.AsError(err)
			}
			out, _ := json.Marshal(rep) // plain structs
			if err := b.Publish(ctx, req.Reply, out); err != nil {
				d.log.Warn("could not answer a follow-up relayed from another replica", "chat", req.Chat, "err", err)
			}
		}()
	})
}

// chatReading is httpapi.Options.ChatReading on the bus; a lost message
// costs nothing while the next arrives within the grace period.
func (d *Daemon) chatReading(b bus.Bus) func(runID string) {
	return func(runID string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Publish(ctx, topicChatReading, []byte(runID)); err != nil {
			d.log.Debug("could not tell the replica holding a run that its chat stream is read here", "run", runID, "err", err)
		}
	}
}

// relayChatReads restarts the grace period of this replica's chat runs
// read at another replica.
func (d *Daemon) relayChatReads(b bus.Bus) error {
	unsub, err := b.Subscribe(topicChatReading, func(p []byte) { d.api.ChatRead(string(p)) })
	if err != nil {
		return fmt.Errorf("subscribe to chat stream reads: %w", err)
	}
	stop := d.stopRuns
	d.stopRuns = func() { stop(); unsub() }
	return nil
}
