package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// Interrupts: a run started with StartRequest.Interrupts does not wait
// inside itself for a call that needs approval. The call keeps waiting —
// it is already recorded, its approval request already exists — but the
// run ends with RUN_FINISHED {outcome: interrupt}, one interrupt per
// waiting call, whose id is the approval's id. The next run of the chat
// answers them (StartRequest.Resume): the answers decide those same
// approval records (so the console, the CLI and the tab race fairly: the
// first decision wins), and the run continues from the waiting calls —
// their results join the conversation and the model takes the next step,
// without planning or running anything again.

// ReasonToolApproval is the reason of an interrupt that asks for a call's
// approval.
const ReasonToolApproval = "tool_approval"

// ApprovalResponseSchema is the responseSchema of a tool_approval
// interrupt: the payload a resolved resume entry carries.
var ApprovalResponseSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"approved":{"type":"boolean","description":"run the call (true) or not (false)"},` +
	`"reason":{"type":"string","maxLength":1000,"description":"why; recorded with the decision"},` +
	`"editedArgs":{"type":"object","description":"replacement arguments, checked against the tool's input schema; the approval binds to them"},` +
	`"toolCallId":{"type":"string","description":"the tool call answered; refused when it is not the interrupt's"}` +
	`},"required":["approved"]}`)

// Approvals is what interrupts need of the approval service
// (*approval.Service): the one place approvals are read and decided.
type Approvals interface {
	Get(ctx context.Context, id string) (switchboard.ApprovalRequest, error)
	Decide(ctx context.Context, id string, d approval.Decision) (switchboard.ApprovalRequest, error)
}

// parked is a call left waiting for its approval when its run ended with an
// interrupt. Its broker call goes on in its own goroutine; the run that
// resumes it collects the result.
type parked struct {
	c        call
	approval switchboard.ApprovalRequest
	// id is the call's invocation: the broker runs the call, and its
	// outcome is awaited by id (Runtime.settle), wherever it runs.
	id string
	// cancel ends the call; nil for a call another replica runs (an
	// interrupt rebuilt from the store, resume.go), which this process
	// cannot cancel.
	cancel context.CancelCauseFunc
	// sink is the emitter of the run that currently owns the call, so a
	// job's progress after the approval reaches the resumed run.
	sink atomic.Pointer[emitter]

	mu      sync.Mutex // held while settling
	settled bool
	inv     switchboard.Invocation
	err     error
}

// interruptState is what a chat's interrupted run left behind.
type interruptState struct {
	runID string
	calls []*parked
	conv  []agui.Message // the conversation when the run stopped
}

func (s *interruptState) find(id string) *parked {
	for _, p := range s.calls {
		if p.approval.ID == id {
			return p
		}
	}
	return nil
}

// approvalAnswer is a resolved resume entry's payload.
type approvalAnswer struct {
	Approved   *bool           `json:"approved"`
	Reason     string          `json:"reason,omitempty"`
	EditedArgs json.RawMessage `json:"editedArgs,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
}

// resumeAction is the answer to one parked call.
type resumeAction struct {
	p       *parked
	cancel  bool // the entry's status was cancelled
	approve bool
	reason  string
	edited  json.RawMessage
}

// resumePlan is how a run picks up its chat's interrupted run: the answers
// of its resume entries, or none (abandon) when it carries none — then
// calls still waiting are cancelled and finished ones are collected.
type resumePlan struct {
	intr      *interruptState
	actions   []resumeAction
	abandon   bool
	cancelled bool // an entry was cancelled: the run ends cancelled
	by        switchboard.Principal
	channel   string
}

// interruptible reports whether a run's waiting calls become interrupts.
func (rt *Runtime) interruptible(st *runState) bool {
	return st.req.Interrupts && rt.approvals != nil
}

// otherChatInterrupt names the chat whose open interrupt id is, if another
// chat than thread has it.
func (rt *Runtime) otherChatInterrupt(id, thread string) string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for t, c := range rt.chats {
		if t != thread && c.intr != nil && c.intr.find(id) != nil {
			return t
		}
	}
	return ""
}

// planResume checks req.Resume against the chat's open interrupts before
// anything changes: every open interrupt answered once, each still
// pending and unexpired, each payload well formed, edited arguments valid
// for the tool. Any failure refuses the run with nothing decided.
func (rt *Runtime) planResume(ctx context.Context, intr *interruptState, req StartRequest, who switchboard.Principal) (*resumePlan, error) {
	if intr == nil && len(req.Resume) == 0 {
		return nil, nil
	}
	plan := &resumePlan{intr: intr, channel: approval.ChannelAGUI}
	if req.Harness.Name == HarnessAISDK.Name {
		plan.channel = approval.ChannelAISDK
	}
	plan.by, _ = switchboard.PrincipalFrom(ctx)
	if len(req.Resume) == 0 {
		plan.abandon = true
		return plan, nil
	}
	seen := map[string]bool{}
	for i, e := range req.Resume {
		at := fmt.Sprintf("resume[%d]", i)
		if seen[e.InterruptID] {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s answers interrupt %s a second time", at, e.InterruptID)
		}
		seen[e.InterruptID] = true
		var p *parked
		if intr != nil {
			p = intr.find(e.InterruptID)
		}
		if p == nil {
			return nil, rt.unknownInterrupt(ctx, at, e.InterruptID, req.ThreadID)
		}
		a, err := rt.approvals.Get(ctx, p.approval.ID)
		if err != nil {
			return nil, err
		}
		if a.Status != switchboard.ApprovalPending {
			return nil, decidedError(at, a)
		}
		if !rt.now().Before(a.ExpiresAt) {
			return nil, switchboard.Errorf(switchboard.CodeConflict,
				"%s: interrupt %s expired at %s; the call of %s was not run and cannot be approved now",
				at, a.ID, a.ExpiresAt.Format(time.RFC3339), a.Tool).WithDetails(map[string]any{"interruptId": a.ID, "status": switchboard.ApprovalExpired})
		}
		act := resumeAction{p: p}
		if e.Status == "cancelled" {
			act.cancel, act.reason = true, "the user cancelled the run at this approval"
			plan.cancelled = true
			plan.actions = append(plan.actions, act)
			continue
		}
		var ans approvalAnswer
		if len(e.Payload) == 0 || json.Unmarshal(e.Payload, &ans) != nil || ans.Approved == nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput,
				`%s.payload must be {"approved": true|false, "reason"?: string, "editedArgs"?: object}`, at).
				WithDetails(map[string]any{"pointer": fmt.Sprintf("/resume/%d/payload/approved", i)})
		}
		if ans.ToolCallID != "" && ans.ToolCallID != p.c.id {
			return nil, switchboard.Errorf(switchboard.CodeForbidden,
				"%s answers tool call %s, but interrupt %s is the approval of tool call %s; nothing was decided",
				at, ans.ToolCallID, p.approval.ID, p.c.id)
		}
		if len(ans.Reason) > 1000 {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s.payload.reason is longer than 1000 characters", at)
		}
		act.approve, act.reason = *ans.Approved, ans.Reason
		if edited := strings.TrimSpace(string(ans.EditedArgs)); edited != "" && edited != "null" {
			if !act.approve {
				return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s.payload has editedArgs but approved is false; edits come with an approval", at)
			}
			if err := rt.checkArgs(ctx, who, p.c, ans.EditedArgs); err != nil {
				e := switchboard.AsError(err)
				d, _ := e.Details.(map[string]any)
				ptr, _ := d["pointer"].(string)
				return nil, switchboard.Errorf(e.Code, "%s.payload.editedArgs do not fit %s: %s", at, p.c.name, e.Message).
					WithDetails(map[string]any{"pointer": fmt.Sprintf("/resume/%d/payload/editedArgs", i) + ptr, "interruptId": p.approval.ID, "violations": d["violations"]})
			}
			act.edited = json.RawMessage(edited)
		}
		plan.actions = append(plan.actions, act)
	}
	var missing []string
	for _, p := range intr.calls {
		if !seen[p.approval.ID] {
			missing = append(missing, p.approval.ID)
		}
	}
	if len(missing) > 0 {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput,
			"resume must answer every open interrupt of run %s; missing: %s", intr.runID, strings.Join(missing, ", ")).
			WithDetails(map[string]any{"missing": missing})
	}
	return plan, nil
}

// unknownInterrupt explains a resume entry naming no open interrupt of the
// chat: another chat's (FORBIDDEN), an approval already settled
// (CONFLICT, with how), or nothing known (NOT_FOUND).
func (rt *Runtime) unknownInterrupt(ctx context.Context, at, id, thread string) error {
	if other := rt.otherChatInterrupt(id, thread); other != "" {
		return switchboard.Errorf(switchboard.CodeForbidden,
			"%s: interrupt %s belongs to another chat's run; a run answers only its own chat's interrupts", at, id)
	}
	if a, err := rt.approvals.Get(ctx, id); err == nil {
		if a.Status != switchboard.ApprovalPending {
			return decidedError(at, a)
		}
		return switchboard.Errorf(switchboard.CodeForbidden,
			"%s: approval %s is not an open interrupt of chat %s (it is the approval of another call); decide it in the console or with `switchboard approvals`", at, id, thread)
	}
	return switchboard.Errorf(switchboard.CodeNotFound,
		"%s: no open interrupt %s in chat %s (interrupts live until the chat's next run)", at, id, thread).
		WithDetails(map[string]any{"interruptId": id})
}

func decidedError(at string, a switchboard.ApprovalRequest) error {
	msg := fmt.Sprintf("%s: interrupt %s is already %s", at, a.ID, a.Status)
	if a.DecidedBy != "" {
		msg += fmt.Sprintf(" (by %s via %s)", a.DecidedBy, a.Channel)
	}
	if a.Status == switchboard.ApprovalCancelled && a.Reason != "" {
		msg += ": " + a.Reason // who stopped it: an interrupted agent, a cancelled run
	}
	return switchboard.Errorf(switchboard.CodeConflict, "%s; start a run without resume to continue with that outcome", msg).
		WithDetails(map[string]any{"interruptId": a.ID, "status": a.Status, "decidedBy": a.DecidedBy, "channel": a.Channel})
}

// checkArgs validates edited arguments with the same schema the broker
// validates the call with, read as the run's assistant (who) reads it.
func (rt *Runtime) checkArgs(ctx context.Context, who switchboard.Principal, c call, args json.RawMessage) error {
	if t := strings.TrimSpace(string(args)); !strings.HasPrefix(t, "{") {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "the arguments must be a JSON object")
	}
	var (
		in  *schema.Schema
		err error
	)
	if c.tool != nil && c.tool.kind == kindCatalog {
		in, _, err = rt.reg.Schemas(switchboard.WithPrincipal(ctx, who), c.name)
	} else if c.tool != nil {
		in, err = schema.Compile(c.tool.schema)
	}
	if err != nil {
		return err
	}
	if in == nil {
		return nil
	}
	return in.Validate(args)
}

// decide records the plan's answers on the approval records. A decision
// that loses a race (the console decided first) stops here with its
// CONFLICT; answers decided before it stand.
func (rt *Runtime) decide(ctx context.Context, plan *resumePlan) error {
	if plan == nil || plan.abandon {
		return nil
	}
	for _, a := range plan.actions {
		d := approval.Decision{By: plan.by, Approve: a.approve && a.edited == nil, Reason: a.reason, Channel: plan.channel}
		if a.edited != nil {
			// The edited call runs under an approval of its own, bound to
			// the edited arguments; this one never runs.
			d.Reason = strings.TrimSpace("approved with edited arguments, which run as a new call under their own approval. " + a.reason)
		}
		if _, err := rt.approvals.Decide(ctx, a.p.approval.ID, d); err != nil {
			return err
		}
	}
	return nil
}

// park stops the run at its waiting calls: it ends with the interrupt
// outcome, and the calls wait on in the chat's interrupt state.
func (rt *Runtime) park(ctx context.Context, st *runState, calls []*parked) {
	intr := &interruptState{runID: st.run.id, calls: calls, conv: slices.Clone(st.conv)}
	rt.mu.Lock()
	rt.chatLocked(st.run.thread).intr = intr
	rt.mu.Unlock()
	st.run.mu.Lock()
	st.run.stop = func() { rt.stopParked(ctx, st.run, intr) }
	st.run.waiting = st.run.waiting[:0]
	for _, p := range calls {
		st.run.waiting = append(st.run.waiting, p.approval.ID)
	}
	st.run.mu.Unlock()
	out := &agui.Outcome{Type: agui.OutcomeInterrupt}
	for _, p := range calls {
		meta := map[string]any{
			"tool": p.c.name, "arguments": json.RawMessage(argsOrEmpty(p.c.args)),
			"invocationId": p.approval.InvocationID, "class": p.approval.Class, "agent": p.approval.Agent,
		}
		if p.c.tool != nil && p.c.tool.ui != nil {
			meta["ui"] = p.c.tool.ui
		}
		out.Interrupts = append(out.Interrupts, agui.Interrupt{
			ID: p.approval.ID, Reason: ReasonToolApproval, ToolCallID: p.c.id, Message: p.approval.Summary,
			ResponseSchema: ApprovalResponseSchema, ExpiresAt: p.approval.ExpiresAt.UTC().Format(time.RFC3339),
			Metadata: map[string]any{"switchboard": meta},
		})
	}
	st.run.dropQueued("the run is waiting for approval")
	st.run.finishUnlessQueued(switchboard.RunWaiting)
	rt.end(ctx, st, switchboard.RunWaiting, nil, out, nil)
}

// stopParked cancels an interrupted run: its calls still waiting for
// approval are cancelled (their approvals too) and it returns once they
// have recorded their end; a call already approved and running is left to
// finish. The chat's next run collects them.
func (rt *Runtime) stopParked(ctx context.Context, run *Run, intr *interruptState) {
	for _, p := range rt.cancelWaiting(ctx, intr, switchboard.Errorf(switchboard.CodeCancelled, "run %s was cancelled while waiting for approval", run.id)) {
		rt.settle(context.WithoutCancel(ctx), p) // returns once its cancelled approval is recorded
	}
	run.mu.Lock()
	if run.status == switchboard.RunWaiting {
		run.status = switchboard.RunCancelled
	}
	run.mu.Unlock()
	run.changed()
}

// cancelWaiting cancels the parked calls whose approval is still pending
// and returns them.
func (rt *Runtime) cancelWaiting(ctx context.Context, intr *interruptState, cause error) []*parked {
	var out []*parked
	for _, p := range intr.calls {
		if p.cancel == nil {
			continue // another replica's call: its approval stays for a decision or its expiry
		}
		a, err := rt.approvals.Get(context.WithoutCancel(ctx), p.approval.ID)
		if err == nil && a.Status == switchboard.ApprovalPending {
			p.cancel(cause)
			out = append(out, p)
		}
	}
	return out
}

// resume collects the parked calls of the chat's interrupted run into this
// run: each result is emitted and joins the conversation after the
// assistant message that made the call. Approved calls ran (once, in
// their own goroutine); an approval with edits runs the edited call now,
// approved as it is recorded.
func (rt *Runtime) resume(ctx context.Context, st *runState, plan *resumePlan) {
	intr := plan.intr
	if intr == nil {
		return
	}
	if !hasCalls(st.conv, intr.calls) {
		st.conv = append(slices.Clone(intr.conv), st.conv...)
	}
	edits := map[*parked]json.RawMessage{}
	for _, a := range plan.actions {
		if a.edited != nil {
			edits[a.p] = a.edited
		}
	}
	if plan.abandon {
		rt.cancelWaiting(ctx, intr, switchboard.Errorf(switchboard.CodeCancelled,
			"the chat moved on without answering the approval"))
	}
	var results []agui.Message
	for _, p := range intr.calls {
		p.sink.Store(st.em)
		if edited, ok := edits[p]; ok {
			rt.settle(ctx, p) // denied in favour of the edit: returns at once
			c := p.c
			c.args = string(edited)
			setCallArgs(st.conv, c.id, c.args)
			msg, _ := rt.runCall(ctx, st, c, &autoApprove{by: plan.by, channel: plan.channel},
				map[string]any{"editedFrom": p.approval.ID, "editedArgs": json.RawMessage(edited)})
			results = append(results, *msg)
			continue
		}
		rt.settle(ctx, p)
		results = append(results, *rt.callResult(st, p.c, p.inv.Result, p.inv, p.err, map[string]any{"tool": p.c.name, "approvalId": p.approval.ID}))
	}
	st.conv = insertResults(st.conv, results)
	st.dirty = true
}

// hasCalls reports whether conv holds the assistant message of the calls.
func hasCalls(conv []agui.Message, calls []*parked) bool {
	for _, m := range conv {
		for _, tc := range m.ToolCalls {
			if len(calls) > 0 && tc.ID == calls[0].c.id {
				return true
			}
		}
	}
	return false
}

func setCallArgs(conv []agui.Message, id, args string) {
	for i := range conv {
		for j := range conv[i].ToolCalls {
			if conv[i].ToolCalls[j].ID == id {
				conv[i].ToolCalls[j].Function.Arguments = args
			}
		}
	}
}

// insertResults places each tool result after the assistant message that
// made its call and the results already following it (replacing a result
// the client sent for the same call), so providers see every call
// answered before the next turn.
func insertResults(conv []agui.Message, results []agui.Message) []agui.Message {
	for _, r := range results {
		conv = slices.DeleteFunc(conv, func(m agui.Message) bool { return m.Role == agui.RoleTool && m.ToolCallID == r.ToolCallID })
		at := len(conv)
		for i, m := range conv {
			if m.Role == agui.RoleAssistant && slices.ContainsFunc(m.ToolCalls, func(tc agui.ToolCall) bool { return tc.ID == r.ToolCallID }) {
				at = i + 1
				for at < len(conv) && conv[at].Role == agui.RoleTool {
					at++
				}
				break
			}
		}
		conv = slices.Insert(conv, at, r)
	}
	return conv
}

// autoApprove decides the approval of a call as it is requested: the
// edited call of an approve-with-edits, whose human decision was already
// given in the resume entry.
type autoApprove struct {
	by      switchboard.Principal
	channel string
}

// AGUICapabilities is the AG-UI capability declaration of the runtime's
// AG-UI endpoint (GET /api/v1/agui/capabilities): tools (parallel, and the
// client's own), state snapshots, streamed runs and — with approvals
// configured — human-in-the-loop approvals as interrupts, edits accepted.
func (rt *Runtime) AGUICapabilities() agui.Capabilities {
	c := agui.Capabilities{
		Identity:  &agui.IdentityCapabilities{Name: "switchboard", Type: "switchboard", Description: "The assistant built into this web application; it acts through the app's tools."},
		Transport: &agui.TransportCapabilities{Streaming: true},
		Tools:     &agui.ToolsCapabilities{Supported: true, ParallelCalls: true, ClientProvided: true},
		State:     &agui.StateCapabilities{Snapshots: true},
	}
	if rt.approvals != nil {
		c.HumanInTheLoop = &agui.HumanInTheLoopCapabilities{Supported: true, Approvals: true, Interrupts: true, ApproveWithEdits: true}
	}
	return c
}
