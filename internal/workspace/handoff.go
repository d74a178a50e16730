package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// Bounds of a handoff.
const (
	maxArtifacts     = 16
	maxArtifactBytes = 32 << 10 // all artifacts together
	maxInbox         = 32       // handoffs kept per receiving session
	maxNotes         = 16       // system notes queued per tab or user
)

// Note is a system note for the built-in assistant's next turn: a handoff
// it received or an approval an agent waits on. It reaches the model as
// tagged data (internal/agent/trust.go), never as instructions.
type Note struct {
	Kind string          `json:"kind"` // "handoff" or "approval"
	Text string          `json:"text"`
	Data json.RawMessage `json:"data,omitempty"`
	// approval and expires tie an approval note to the request it
	// surfaces: the note is withdrawn once that request is decided,
	// cancelled or expired, so a later turn never hears of it.
	approval string
	expires  time.Time
}

// HandoffRequest is the input of agents.handoff.
type HandoffRequest struct {
	To        string                  `json:"to"`
	Task      string                  `json:"task"`
	Scope     *switchboard.AgentScope `json:"scope,omitempty"`
	Artifacts []json.RawMessage       `json:"artifacts,omitempty"`
	ReturnTo  string                  `json:"returnTo,omitempty"`
}

// Handoff delivers a handoff from the session acting in ctx (or the
// caller itself) to session req.To: it is recorded in the ledger
// (agent.handoff, the record as details), kept in the target's inbox
// (Handoffs, which the digest reads) and, when the target is the built-in
// assistant, queued as a system note for its tab's next turn. The target
// must be a live session the caller may see (else AGENT_NOT_FOUND /
// CONFLICT); a chat session in a tab, one the caller may also control or
// whose user the caller's session acts for (else FORBIDDEN). The scope is what the task should be confined to: it grants
// nothing (the target acts with its own credential and scope).
func (a *Agents) Handoff(ctx context.Context, v Viewer, req HandoffRequest) (switchboard.AgentHandoff, error) {
	req.Task = strings.TrimSpace(req.Task)
	switch {
	case req.To == "":
		return switchboard.AgentHandoff{}, switchboard.Errorf(switchboard.CodeInvalidInput, "to is required: the agent session id to hand off to (see agents.list)")
	case req.Task == "" || len(req.Task) > maxTask:
		return switchboard.AgentHandoff{}, switchboard.Errorf(switchboard.CodeInvalidInput, "task is required and at most %d bytes", maxTask)
	case len(req.Artifacts) > maxArtifacts:
		return switchboard.AgentHandoff{}, switchboard.Errorf(switchboard.CodeInvalidInput, "at most %d artifacts per handoff", maxArtifacts)
	}
	size := 0
	for i, art := range req.Artifacts {
		size += len(art)
		var obj map[string]json.RawMessage
		if json.Unmarshal(art, &obj) != nil {
			return switchboard.AgentHandoff{}, switchboard.Errorf(switchboard.CodeInvalidInput, "artifacts[%d] must be an object (an A2A artifact: {name, parts: [...]})", i)
		}
	}
	if size > maxArtifactBytes {
		return switchboard.AgentHandoff{}, switchboard.Errorf(switchboard.CodePayloadTooLarge, "artifacts are %d bytes; the limit is %d (hand over ids, not contents)", size, maxArtifactBytes)
	}
	from, _ := switchboard.AgentSessionFrom(ctx)
	actor := v.Principal.String()
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		actor = p.String() // the assistant hands off as itself, though it sees as its user
	}
	h := switchboard.AgentHandoff{
		ID: "hof_" + randomHex(12), From: from, FromActor: actor, To: req.To, Task: req.Task,
		Scope: req.Scope, Artifacts: req.Artifacts, ReturnTo: req.ReturnTo, CreatedAt: a.now().UTC(),
	}
	if h.ReturnTo == "" {
		h.ReturnTo = from
	}
	if strings.HasPrefix(req.To, "https://") || strings.HasPrefix(req.To, "http://") {
		return a.handoffExternal(ctx, v, req, h)
	}
	a.mu.Lock()
	st, ok := a.sessions[req.To]
	if !ok {
		a.mu.Unlock()
		return a.handoffStored(ctx, v, req, h)
	}
	if !v.canSee(st) {
		a.mu.Unlock()
		return h, notFound(req.To)
	}
	if st.s.Status.Final() {
		s := st.s
		a.mu.Unlock()
		return h, finished(s)
	}
	if st.s.Kind == switchboard.AgentChat && st.s.SessionID != "" && !v.canControl(st) && !a.actsForLocked(from, st.user) {
		// Its note reaches a user's assistant in that tab: seeing the
		// session (agents.list) is not enough to put a task there.
		a.mu.Unlock()
		return h, handoffForbidden(req.To)
	}
	a.mu.Unlock()
	if err := a.returnVisible(ctx, req.ReturnTo, v); err != nil {
		return h, err
	}
	if err := a.DeliverLocal(h); err != nil {
		return h, err
	}
	return h, a.recordHandoff(ctx, h)
}

// handoffStored hands off to a session another replica owns: the same
// checks on its stored record, then its owner keeps the handoff in the
// target's inbox (AgentsOptions.Relay); the ledger entry is written here.
func (a *Agents) handoffStored(ctx context.Context, v Viewer, req HandoffRequest, h switchboard.AgentHandoff) (switchboard.AgentHandoff, error) {
	r, err := a.stored(ctx, req.To)
	if err != nil {
		return h, err
	}
	st := stateOf(r)
	if !v.canSee(st) {
		return h, notFound(req.To)
	}
	if r.Session.Status.Final() {
		return h, finished(r.Session)
	}
	if r.Session.Kind == switchboard.AgentChat && r.Session.SessionID != "" && !v.canControl(st) && !a.actsFor(ctx, h.From, r.User) {
		return h, handoffForbidden(req.To)
	}
	if err := a.returnVisible(ctx, req.ReturnTo, v); err != nil {
		return h, err
	}
	if a.opts.Relay == nil || r.Replica == a.opts.Replica {
		return h, switchboard.Errorf(switchboard.CodeUnavailable,
			"agent %s runs on replica %s, which this replica cannot reach (no cross-replica bus)", req.To, r.Replica)
	}
	if err := a.opts.Relay.Handoff(ctx, r, h); err != nil {
		return h, err
	}
	return h, a.recordHandoff(ctx, h)
}

// handoffExternal hands h to the external A2A agent at req.To (a peer
// the operator configured) and records it with the task that agent made.
func (a *Agents) handoffExternal(ctx context.Context, v Viewer, req HandoffRequest, h switchboard.AgentHandoff) (switchboard.AgentHandoff, error) {
	if a.opts.External == nil {
		return h, switchboard.Errorf(switchboard.CodeInvalidInput, "to %q: this daemon hands tasks to no external A2A agents", req.To)
	}
	if err := a.returnVisible(ctx, req.ReturnTo, v); err != nil {
		return h, err
	}
	h, err := a.opts.External(ctx, h)
	if err != nil {
		return h, err
	}
	return h, a.recordHandoff(ctx, h)
}

// DeliverLocal keeps handoff h in the inbox of its target, a session this
// replica owns, and queues the note for an assistant in a tab. The target
// must still be live (CONFLICT) and held here (AGENT_NOT_FOUND).
func (a *Agents) DeliverLocal(h switchboard.AgentHandoff) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[h.To]
	if !ok {
		return notFound(h.To)
	}
	if st.s.Status.Final() {
		return finished(st.s)
	}
	st.handoffs = append(st.handoffs, h)
	if len(st.handoffs) > maxInbox {
		st.handoffs = st.handoffs[len(st.handoffs)-maxInbox:]
	}
	if st.s.Kind == switchboard.AgentChat && st.s.SessionID != "" {
		data, _ := json.Marshal(h)
		a.noteLocked("tab:"+st.s.SessionID, Note{Kind: "handoff",
			Text: fmt.Sprintf("%s handed you a task (handoff %s); report back to %s.", h.FromActor, h.ID, orNone(h.ReturnTo)), Data: data})
	}
	return nil
}

// recordHandoff writes a delivered handoff's ledger entry.
func (a *Agents) recordHandoff(ctx context.Context, h switchboard.AgentHandoff) error {
	if a.opts.Ledger == nil {
		return nil
	}
	details, _ := json.Marshal(h)
	e := &switchboard.ActivityEntry{Ts: h.CreatedAt, Actor: h.FromActor, Verb: activity.VerbAgentHandoff, Target: h.To, Details: details}
	return a.opts.Ledger.Append(context.WithoutCancel(ctx), e)
}

// returnVisible checks that the session a handoff reports back to (if
// any) is one v may see, on any replica.
func (a *Agents) returnVisible(ctx context.Context, id string, v Viewer) error {
	if id == "" {
		return nil
	}
	if _, err := a.Get(ctx, id, v); err != nil {
		return notFound(id)
	}
	return nil
}

func handoffForbidden(id string) error {
	return switchboard.Errorf(switchboard.CodeForbidden, "agent session %s is the assistant in a tab of another user: only that user, or an agent acting for them, may hand it a task", id)
}

// actsFor reports whether agent session id acts for user, on any replica.
func (a *Agents) actsFor(ctx context.Context, id, user string) bool {
	if id == "" {
		return false
	}
	a.mu.Lock()
	ok := a.actsForLocked(id, user)
	_, local := a.sessions[id]
	a.mu.Unlock()
	if ok || local {
		return ok
	}
	r, err := a.stored(ctx, id)
	return err == nil && r.User == user
}

// actsForLocked reports whether agent session id acts for user.
func (a *Agents) actsForLocked(id, user string) bool {
	st, ok := a.sessions[id]
	return ok && id != "" && st.user == user
}

func orNone(s string) string {
	if s == "" {
		return "nobody (no returnTo)"
	}
	return s
}

// Handoffs returns the handoffs delivered to session id, oldest first
// (the digest shows them; the inbox keeps the last 32).
func (a *Agents) Handoffs(id string) []switchboard.AgentHandoff {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[id]
	if !ok {
		return nil
	}
	return append([]switchboard.AgentHandoff(nil), st.handoffs...)
}

// noteLocked queues a system note under key ("tab:<sid>" or
// "user:<name>"), keeping the newest maxNotes.
func (a *Agents) noteLocked(key string, n Note) {
	q := append(a.notes[key], n)
	if len(q) > maxNotes {
		q = q[len(q)-maxNotes:]
	}
	a.notes[key] = q
}

// Escalate queues a system note for the user's assistant about approval
// apr that agent session id waits on (a background or external agent's):
// the next assistant turn of that user, in whichever tab, surfaces it.
func (a *Agents) Escalate(id string, apr switchboard.ApprovalRequest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[id]
	if !ok || !escalates(st.s.Kind) || st.settled[apr.ID] {
		return // settled already: its resolution overtook the request on the bus
	}
	data, _ := json.Marshal(map[string]any{"approvalId": apr.ID, "agentId": id, "agent": st.s.Label, "tool": apr.Tool,
		"summary": apr.Summary, "expiresAt": apr.ExpiresAt})
	a.noteLocked(st.user, Note{Kind: "approval",
		Text: fmt.Sprintf("%s agent %s waits for the user's approval %s (%s). Tell the user; they decide it on its card, not you.", st.s.Kind, st.s.Label, apr.ID, apr.Tool),
		Data: data, approval: apr.ID, expires: apr.ExpiresAt})
}

// withdrawLocked drops the approval notes that surface approval apr.
func (a *Agents) withdrawLocked(apr string) {
	for k, q := range a.notes {
		kept := q[:0:0]
		for _, n := range q {
			if n.approval != apr {
				kept = append(kept, n)
			}
		}
		if len(kept) == 0 {
			delete(a.notes, k)
		} else if len(kept) != len(q) {
			a.notes[k] = kept
		}
	}
}

// TakeNotes returns and clears the notes for the assistant's next turn in
// tab sid opened for user: the tab's own, then its user's.
func (a *Agents) TakeNotes(sid, user string) []Note {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Note
	for _, k := range []string{"tab:" + sid, userOf(user)} {
		if sid == "" && strings.HasPrefix(k, "tab:") {
			continue
		}
		for _, n := range a.notes[k] {
			if n.approval != "" && !n.expires.IsZero() && !a.now().Before(n.expires) {
				continue // expired, though its expiry may not have been swept yet
			}
			out = append(out, n)
		}
		delete(a.notes, k)
	}
	return out
}
