package agent

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
)

var (
	// HarnessLoop is the built-in loop driven by /runs or /agui.
	HarnessLoop = switchboard.Harness{Name: "loop", NativeFollowUp: true}
	// HarnessAISDK is the loop driven by an AI SDK useChat client through
	// /agent/chat: the client sends the whole history each turn, so a
	// follow-up cannot be slipped into a busy run.
	HarnessAISDK = switchboard.Harness{Name: "aisdk", AISDKOwnsHistory: true}
)

// chatState is what the runtime remembers of one chat session.
type chatState struct {
	run     *Run
	harness switchboard.Harness
	owner   string
	ownerOK bool // owner has been read from the history store

	smu  sync.Mutex      // serializes starts of this chat (resumes check, then decide)
	intr *interruptState // what the chat's interrupted run left waiting

	fmu  sync.Mutex // serializes follow-ups of this chat
	seqs map[int64]followUpEntry
}

type followUpEntry struct {
	nonce  string
	result switchboard.FollowUpResult
}

func (rt *Runtime) chatLocked(id string) *chatState {
	c := rt.chats[id]
	if c == nil {
		c = &chatState{seqs: map[int64]followUpEntry{}}
		rt.chats[id] = c
	}
	return c
}

// Capabilities resolves the harness bound to a chat session from the same
// binding its runs use: the host's Options.Harness, else the transport
// that last ran the chat, else the built-in loop.
func (rt *Runtime) Capabilities(ctx context.Context, chatSessionID string) switchboard.Harness {
	if rt.opts.Harness != nil {
		if h, ok := rt.opts.Harness(ctx, chatSessionID); ok {
			return h
		}
	}
	// The transport that last ran the chat, on whichever replica: this
	// process's run in progress, else the newest stored run (another
	// replica's, or this process's previous start's), else this process's
	// memory (a chat whose runs the retention deleted).
	rt.mu.Lock()
	c := rt.chats[chatSessionID]
	if c != nil && c.run != nil && c.run.busy() && c.harness.Name != "" {
		h := c.harness
		rt.mu.Unlock()
		return h
	}
	rt.mu.Unlock()
	if rt.opts.Runs != nil {
		recs, err := rt.opts.Runs.RunList(ctx, switchboard.RunFilter{ThreadID: chatSessionID, Limit: 1})
		if err == nil && len(recs) == 1 {
			switch recs[0].Harness {
			case HarnessAISDK.Name:
				return HarnessAISDK
			case HarnessLoop.Name:
				return HarnessLoop
			}
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if c := rt.chats[chatSessionID]; c != nil && c.harness.Name != "" {
		return c.harness
	}
	return HarnessLoop
}

type queuedFollowUp struct {
	switchboard.FollowUp
}

// FollowUp queues f on the chat's busy run, or starts a run for it when the
// chat is idle (tmpl supplies the browser session, model and owner). The
// same (clientSeq, clientNonce) sent again answers as the first time did;
// the same clientSeq with another nonce is FOLLOWUP_SEQUENCE_CONFLICT. A
// chat whose harness has no native follow-up gets FOLLOWUP_UNSUPPORTED
// before anything changes.
func (rt *Runtime) FollowUp(ctx context.Context, chatSessionID string, f switchboard.FollowUp, tmpl StartRequest) (switchboard.FollowUpResult, error) {
	// A tab's follow-up names a chat it must own; whether the chat is
	// another tab's or does not exist reads the same (NOT_FOUND), and is
	// decided before anything that depends on the chat (its harness).
	if tmpl.Owner != "" {
		if !rt.chatExists(ctx, chatSessionID) {
			return switchboard.FollowUpResult{}, errNoChat(chatSessionID)
		}
		if err := rt.checkOwner(ctx, chatSessionID, tmpl.Owner, false); err != nil {
			return switchboard.FollowUpResult{}, err
		}
	}
	if h := rt.Capabilities(ctx, chatSessionID); !h.NativeFollowUp {
		return switchboard.FollowUpResult{}, switchboard.Errorf(switchboard.CodeFollowupUnsupported,
			"chat session %s is bound to the %s runtime, which has no native follow-up; wait for the run to finish", chatSessionID, h.Name)
	}
	if strings.TrimSpace(f.Text) == "" || f.ClientNonce == "" || f.ClientSeq < 0 {
		return switchboard.FollowUpResult{}, switchboard.Errorf(switchboard.CodeInvalidInput, "a follow-up needs text, a clientSeq ≥ 0 and a clientNonce")
	}
	if err := rt.checkOwner(ctx, chatSessionID, tmpl.Owner, true); err != nil {
		return switchboard.FollowUpResult{}, err
	}
	rt.mu.Lock()
	chat := rt.chatLocked(chatSessionID)
	rt.mu.Unlock()
	chat.fmu.Lock()
	defer chat.fmu.Unlock()
	if res, ok, err := chat.replay(chatSessionID, f); ok || err != nil {
		return res, err
	}
	for attempt := 0; ; attempt++ {
		if res, ok := chat.queueLocal(rt, f); ok {
			return res, nil
		}
		if res, ok, err := rt.relayFollowUp(ctx, chatSessionID, f, tmpl.Owner); ok || err != nil {
			if ok { // remembered here too: a retry here answers the same
				first := res
				first.Replayed = false
				chat.seqs[f.ClientSeq] = followUpEntry{nonce: f.ClientNonce, result: first}
			}
			return res, err
		}
		req := tmpl
		req.ThreadID, req.RunID, req.Messages, req.Input, req.Harness = chatSessionID, "", nil, f.Text, HarnessLoop
		run, err := rt.Start(ctx, req)
		if err != nil {
			// Another run started between our look and our start: queue on it.
			if switchboard.CodeOf(err) == switchboard.CodeConflict && attempt < 3 {
				continue
			}
			return switchboard.FollowUpResult{}, err
		}
		res := switchboard.FollowUpResult{Status: "started", RunID: run.id, ClientSeq: f.ClientSeq}
		chat.seqs[f.ClientSeq] = followUpEntry{nonce: f.ClientNonce, result: res}
		return res, nil
	}
}

// replay answers a follow-up whose clientSeq this process has seen: as
// the first time for the same nonce, FOLLOWUP_SEQUENCE_CONFLICT for
// another; ok false when the clientSeq is new. Called with c.fmu held.
func (c *chatState) replay(chatSessionID string, f switchboard.FollowUp) (switchboard.FollowUpResult, bool, error) {
	prev, ok := c.seqs[f.ClientSeq]
	if !ok {
		return switchboard.FollowUpResult{}, false, nil
	}
	if prev.nonce != f.ClientNonce {
		return switchboard.FollowUpResult{}, true, switchboard.Errorf(switchboard.CodeFollowupSequenceConflict,
			"clientSeq %d of chat session %s was already used by another follow-up", f.ClientSeq, chatSessionID).
			WithDetails(map[string]any{"clientSeq": f.ClientSeq, "runId": prev.result.RunID})
	}
	res := prev.result
	res.Replayed = true
	return res, true, nil
}

// queueLocal queues f on the chat's busy run in this process; ok false
// when it has none. Called with c.fmu held.
func (c *chatState) queueLocal(rt *Runtime, f switchboard.FollowUp) (switchboard.FollowUpResult, bool) {
	rt.mu.Lock()
	run := c.run
	rt.mu.Unlock()
	if run == nil || !run.enqueue(f) {
		return switchboard.FollowUpResult{}, false
	}
	res := switchboard.FollowUpResult{Status: "queued", RunID: run.id, ClientSeq: f.ClientSeq}
	c.seqs[f.ClientSeq] = followUpEntry{nonce: f.ClientNonce, result: res}
	return res, true
}

// Follow-ups at any replica: a chat's busy run is one
// replica's memory, and so is the record of the chat's clientSeqs; a
// follow-up that lands elsewhere must join that run, and be answered from
// that record, not start a second run beside it. A replica with no busy
// run of the chat reads the chat's newest run in the store and, when
// another replica ran it, relays the follow-up there (Options.
// RelayFollowUp, on the bus); that replica decides it with QueueFollowUp:
// a replay or FOLLOWUP_SEQUENCE_CONFLICT from its record, else queued on
// its busy run. So the same follow-up sent to two replicas is queued once
// and answered the same, also when it is retried after the run ended.
// When that replica has no busy run and has not seen the clientSeq, the
// follow-up starts a run here as on an idle chat.

// idleRelayWait bounds the wait for the replica that ran an idle chat's
// last run: if it is gone, its record went with it and the follow-up
// starts a run here.
const idleRelayWait = 2 * time.Second

// relayFollowUp hands f to the replica that ran the chat's newest run;
// ok false when this replica ran it, or that replica neither knows the
// clientSeq nor has a busy run to queue f on.
func (rt *Runtime) relayFollowUp(ctx context.Context, chatSessionID string, f switchboard.FollowUp, owner string) (switchboard.FollowUpResult, bool, error) {
	if rt.opts.Runs == nil || rt.opts.RelayFollowUp == nil {
		return switchboard.FollowUpResult{}, false, nil
	}
	recs, err := rt.opts.Runs.RunList(ctx, switchboard.RunFilter{ThreadID: chatSessionID, Limit: 1})
	if err != nil || len(recs) == 0 || recs[0].Replica == rt.opts.Replica {
		// This replica's own stored run is not busy in its memory: it is
		// ending (or a previous start's, which the sweep ends).
		return switchboard.FollowUpResult{}, false, err
	}
	rec := recs[0]
	if rec.Status == switchboard.RunRunning {
		// Its holder must answer: a run beside it would answer the chat twice.
		res, answered, err := rt.opts.RelayFollowUp(ctx, rec.Replica, chatSessionID, f, owner)
		return res, answered && err == nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, idleRelayWait)
	defer cancel()
	res, answered, err := rt.opts.RelayFollowUp(rctx, rec.Replica, chatSessionID, f, owner)
	if err != nil && ctx.Err() == nil && (rctx.Err() != nil || switchboard.CodeOf(err) == switchboard.CodeUnavailable) {
		rt.log.Info("the replica that ran a chat's last run did not answer a follow-up; starting a run here", "chat", chatSessionID, "replica", rec.Replica)
		return switchboard.FollowUpResult{}, false, nil
	}
	return res, answered && err == nil, err
}

// StoredActive is the chat's run in progress on another replica, from
// the store; ok false when there is none (or no run store).
func (rt *Runtime) StoredActive(ctx context.Context, chatSessionID string) (switchboard.RunRecord, bool, error) {
	if rt.opts.Runs == nil {
		return switchboard.RunRecord{}, false, nil
	}
	recs, err := rt.opts.Runs.RunList(ctx, switchboard.RunFilter{ThreadID: chatSessionID, Status: switchboard.RunRunning, Limit: 1})
	if err != nil || len(recs) == 0 || recs[0].Replica == rt.opts.Replica {
		// This replica's own stored run is not in its memory: it is
		// ending (or a previous start's, which the sweep ends).
		return switchboard.RunRecord{}, false, err
	}
	return recs[0], true, nil
}

// QueueFollowUp decides a follow-up another replica relayed to this one
// (relayFollowUp), for a caller that is owner there (the chat's owner may
// be known only to this replica): answered from this replica's record of
// the chat's clientSeqs (a replay, FOLLOWUP_SEQUENCE_CONFLICT), else
// queued on the chat's busy run here; answered false when neither (the
// sender then starts a run), or FOLLOWUP_UNSUPPORTED.
func (rt *Runtime) QueueFollowUp(ctx context.Context, chatSessionID string, f switchboard.FollowUp, owner string) (res switchboard.FollowUpResult, answered bool, err error) {
	if err := rt.checkOwner(ctx, chatSessionID, owner, true); err != nil {
		return res, false, err
	}
	if h := rt.Capabilities(ctx, chatSessionID); !h.NativeFollowUp {
		return res, false, switchboard.Errorf(switchboard.CodeFollowupUnsupported,
			"chat session %s is bound to the %s runtime, which has no native follow-up; wait for the run to finish", chatSessionID, h.Name)
	}
	rt.mu.Lock()
	chat := rt.chatLocked(chatSessionID)
	rt.mu.Unlock()
	chat.fmu.Lock()
	defer chat.fmu.Unlock()
	if res, ok, err := chat.replay(chatSessionID, f); ok || err != nil {
		return res, ok, err
	}
	res, answered = chat.queueLocal(rt, f)
	return res, answered, nil
}

// enqueue adds f to a running run's queue; false when the run is no longer
// taking follow-ups.
func (r *Run) enqueue(f switchboard.FollowUp) bool {
	r.mu.Lock()
	if r.status != switchboard.RunRunning || r.closed {
		r.mu.Unlock()
		return false
	}
	r.queue = append(r.queue, queuedFollowUp{f})
	r.mu.Unlock()
	r.append(&agui.Custom{Name: "switchboard.followup.queued", Value: map[string]any{"clientSeq": f.ClientSeq, "clientNonce": f.ClientNonce}})
	return true
}

// takeQueued removes and returns the queued follow-ups.
func (r *Run) takeQueued() []queuedFollowUp {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queue
	r.queue = nil
	return q
}

// dropQueued cancels stale queued follow-ups, telling subscribers.
func (r *Run) dropQueued(reason string) {
	for _, q := range r.takeQueued() {
		r.append(&agui.Custom{Name: "switchboard.followup.cancelled", Value: map[string]any{
			"clientSeq": q.ClientSeq, "clientNonce": q.ClientNonce, "reason": reason,
		}})
	}
}

// finishUnlessQueued marks the run finished with status st unless
// follow-ups are waiting (then the loop takes another step): after this
// returns true no follow-up can join the run.
func (r *Run) finishUnlessQueued(st switchboard.RunStatus) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) > 0 {
		return false
	}
	r.status = st
	return true
}

// switchTabLocked records that the browser session now talks to chat and
// returns the runs of the chat it left, whose queued work is stale.
func (rt *Runtime) switchTabLocked(session, chat string) []*Run {
	if session == "" {
		return nil
	}
	prev := rt.tabs[session]
	rt.tabs[session] = chat
	if prev == "" || prev == chat {
		return nil
	}
	if c := rt.chats[prev]; c != nil && c.run != nil && c.run.busy() {
		return []*Run{c.run}
	}
	return nil
}

// checkOwner refuses a caller whose owner differs from the chat's
// (NOT_FOUND). An
// empty owner (the admin) is never refused; a chat nobody owns yet becomes
// the caller's when claim is set (a write: a run, a follow-up, a PUT), and
// stays unowned on a read.
func (rt *Runtime) checkOwner(ctx context.Context, chatSessionID, owner string, claim bool) error {
	rt.mu.Lock()
	chat := rt.chatLocked(chatSessionID)
	known, cur := chat.ownerOK, chat.owner
	rt.mu.Unlock()
	if !known && rt.history != nil {
		h, err := rt.history.ChatGet(ctx, chatSessionID)
		switch {
		case err == nil:
			cur = h.Owner
		case switchboard.CodeOf(err) != switchboard.CodeNotFound:
			return err
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if !chat.ownerOK || chat.owner == "" {
		if cur == "" && claim {
			cur = owner
		}
		chat.owner, chat.ownerOK = cur, true
	}
	if owner == "" || chat.owner == "" || chat.owner == owner {
		return nil
	}
	// Another user's chat is one this caller does not know: NOT_FOUND, not
	// FORBIDDEN, so chat ids cannot be probed (History reads it as unknown).
	return errNoChat(chatSessionID)
}

func errNoChat(id string) error {
	return switchboard.Errorf(switchboard.CodeNotFound, "no chat session %s", id)
}

// chatExists reports whether anything knows chat id: this process (a run
// or an owner), the history store, or a stored run (another replica's).
func (rt *Runtime) chatExists(ctx context.Context, id string) bool {
	rt.mu.Lock()
	c := rt.chats[id]
	known := c != nil && (c.run != nil || c.owner != "")
	rt.mu.Unlock()
	if known {
		return true
	}
	if rt.history != nil {
		if _, err := rt.history.ChatGet(ctx, id); err == nil {
			return true
		}
	}
	if rt.opts.Runs != nil {
		if recs, err := rt.opts.Runs.RunList(ctx, switchboard.RunFilter{ThreadID: id, Limit: 1}); err == nil && len(recs) > 0 {
			return true
		}
	}
	return false
}

// CapabilitiesFor is Capabilities as a caller acting as owner sees it: a
// chat another owner holds answers exactly as a chat nobody knows, so the
// answer tells nothing about other tabs' chats. (Not NOT_FOUND: the SDK
// asks before a new chat's first turn, and must get the default then.)
func (rt *Runtime) CapabilitiesFor(ctx context.Context, chatSessionID, owner string) switchboard.Harness {
	if owner != "" && switchboard.CodeOf(rt.checkOwner(ctx, chatSessionID, owner, false)) == switchboard.CodeNotFound {
		if rt.opts.Harness != nil {
			if h, ok := rt.opts.Harness(ctx, ""); ok {
				return h
			}
		}
		return HarnessLoop
	}
	return rt.Capabilities(ctx, chatSessionID)
}
