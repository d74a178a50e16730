package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
)

// Follow-ups at any replica (internal/agent/followup.go): a replica with
// no busy run of a chat asks the replica that ran the chat's newest run
// (cluster.Asker, kind askFollowUp), which decides it (agent
// Runtime.QueueFollowUp) and answers.

// An AI SDK client that reattaches to a chat at another replica reads the
// run's stored events there (internal/httpapi/chatstream.go); that replica tells
// the holder on topicChatReading (the payload is the run id), so the run
// is not cancelled as unread.

// askFollowUp is the kind of a relayed follow-up; followUpRelayWait
// bounds the wait for the holding replica's answer.
const (
	askFollowUp       = "runs.followup"
	topicChatReading  = "runs.reading"
	followUpRelayWait = 5 * time.Second
)

type followUpRequest struct {
	Chat     string               `json:"chat"`
	FollowUp switchboard.FollowUp `json:"followUp"`
	Owner    string               `json:"owner,omitempty"`
}

type followUpReply struct {
	Result   switchboard.FollowUpResult `json:"result"`
	Answered bool                       `json:"answered"`
}

// relayFollowUp is agent.Options.RelayFollowUp over cluster asks.
func (d *Daemon) relayFollowUp(ctx context.Context, replica, chat string, f switchboard.FollowUp, owner string) (switchboard.FollowUpResult, bool, error) {
	req, err := json.Marshal(followUpRequest{Chat: chat, FollowUp: f, Owner: owner})
	if err != nil {
		return switchboard.FollowUpResult{}, false, err
	}
	actx, cancel := context.WithTimeout(ctx, followUpRelayWait)
	defer cancel()
	res, err := d.asker.Ask(actx, replica, askFollowUp, req)
	if err != nil {
		if ctx.Err() == nil && cluster.NoAnswer(err) && switchboard.CodeOf(err) == switchboard.CodeTimeout {
			// The holder may have stopped: a survivor ends its run, after
			// which the same follow-up (same clientSeq and nonce) starts one.
			err = switchboard.Errorf(switchboard.CodeUnavailable,
				"replica %s, which runs chat session %s, did not take the follow-up within %s (it may have stopped); send the same follow-up again shortly", replica, chat, followUpRelayWait)
		}
		return switchboard.FollowUpResult{}, false, err
	}
	var rep followUpReply
	if err := json.Unmarshal(res, &rep); err != nil {
		return switchboard.FollowUpResult{}, false, switchboard.Errorf(switchboard.CodeInternal, "decode the answer to a relayed follow-up: %v", err)
	}
	return rep.Result, rep.Answered, nil
}

// serveFollowUps answers the follow-ups relayed to this replica.
func (d *Daemon) serveFollowUps() func() {
	return d.asker.Handle(askFollowUp, func(ctx context.Context, p []byte) ([]byte, error) {
		var req followUpRequest
		if err := json.Unmarshal(p, &req); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode a relayed follow-up: %v", err)
		}
		if d.Agent == nil {
			return nil, switchboard.Errorf(switchboard.CodeUnavailable, "replica %s runs no agent runtime; send the follow-up again shortly", d.members.Self())
		}
		res, answered, err := d.Agent.QueueFollowUp(ctx, req.Chat, req.FollowUp, req.Owner)
		if err != nil {
			return nil, err
		}
		return json.Marshal(followUpReply{Result: res, Answered: answered})
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
