package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/canonjson"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/redact"
	"github.com/switchboardhq/switchboard/internal/tracing"
)

// call is one tool call the model made in a step.
type call struct {
	id    string // the run's tool call id (AG-UI toolCallId)
	name  string // the tool's real name
	tool  *offered
	args  string
	index int
}

// runState is what a run carries from step to step.
type runState struct {
	run   *Run
	em    *emitter
	ts    *toolset
	conv  []agui.Message
	dirty bool // conv differs from the saved history
	b     model.Binding
	req   StartRequest
	ws    *workspaceState // the digest in the run's state (internal/agent/workspace.go)
}

// loop runs a run to its end. It always ends with exactly one RUN_FINISHED
// or RUN_ERROR, everything closed before it.
func (rt *Runtime) loop(ctx context.Context, run *Run, req StartRequest, plan *resumePlan) {
	st := &runState{run: run, em: newEmitter(run, rt.now), req: req}
	ctx, span := tracing.StartAgent(ctx, rt.tracer, run.thread)
	defer endSpan(span, run)
	resumed := false
	if plan != nil && plan.intr != nil {
		defer func() {
			if !resumed { // failed before collecting them: the next run does
				rt.mu.Lock()
				if c := rt.chats[run.thread]; c != nil && c.intr == nil {
					c.intr = plan.intr
				}
				rt.mu.Unlock()
			}
		}()
	}
	st.em.emit(&agui.RunStarted{ThreadID: run.thread, RunID: run.id})
	if rt.opts.Sessions != nil {
		ctx = rt.opts.Sessions.RunStarted(ctx, run)
	}
	rt.startState(ctx, st) // STATE_SNAPSHOT (the client's state, the workspace digest), then deltas
	b, err := rt.models.Resolve(ctx, req.Model)
	if err != nil {
		rt.end(ctx, st, switchboard.RunFailed, err, nil, nil)
		return
	}
	st.b = b
	tracing.AgentModel(span, b.Provider, b.Model)
	run.mu.Lock()
	run.binding = &st.b
	run.mu.Unlock()

	if req.Messages != nil {
		st.conv = append([]agui.Message(nil), req.Messages...)
	} else if st.conv, err = rt.loadHistory(ctx, run.thread); err != nil {
		rt.end(ctx, st, switchboard.RunFailed, err, nil, nil)
		return
	}
	if strings.TrimSpace(req.Input) != "" {
		rt.addUser(st, req.Input, nil)
	}
	if st.ts, err = rt.buildToolset(ctx, run, req.Tools); err != nil {
		rt.end(ctx, st, switchboard.RunFailed, err, nil, nil)
		return
	}
	if plan != nil { // the chat's interrupted run continues here
		resumed = true
		rt.resume(ctx, st, plan)
		if plan.cancelled {
			rt.end(ctx, st, switchboard.RunCancelled, nil, nil, nil)
			return
		}
	}
	maxSteps := rt.opts.MaxSteps
	if req.MaxSteps > 0 && req.MaxSteps < maxSteps {
		maxSteps = req.MaxSteps
	}
	for step := 1; ; step++ {
		for _, q := range run.takeQueued() {
			rt.addUser(st, q.Text, map[string]any{"clientSeq": q.ClientSeq, "clientNonce": q.ClientNonce})
		}
		if ctx.Err() != nil {
			rt.end(ctx, st, switchboard.RunCancelled, context.Cause(ctx), nil, nil)
			return
		}
		if step > maxSteps {
			st.em.emit(&agui.Custom{Name: "switchboard.max_steps", Value: map[string]any{"maxSteps": maxSteps}})
			rt.end(ctx, st, switchboard.RunSucceeded, nil, nil, map[string]any{"stopReason": "max_steps", "steps": maxSteps})
			return
		}
		if step > 1 {
			rt.refreshTools(ctx, st) // tools registered or withdrawn while it runs (refresh.go)
		}
		run.mu.Lock()
		run.steps = step
		run.mu.Unlock()
		if err := rt.overBudget(run); err != nil {
			rt.end(ctx, st, switchboard.RunFailed, err, nil, nil)
			return
		}
		if err := rt.opts.Quotas.CheckSpend(ctx, run.principal); err != nil {
			rt.end(ctx, st, switchboard.RunFailed, err, nil, nil)
			return
		}
		st.em.startStep(fmt.Sprintf("step-%d", step))
		calls, err := rt.modelTurn(ctx, st)
		if err != nil {
			rt.end(ctx, st, switchboard.RunFailed, err, nil, nil)
			return
		}
		if len(calls) == 0 {
			st.em.endStep()
			if run.finishUnlessQueued(switchboard.RunSucceeded) {
				rt.end(ctx, st, switchboard.RunSucceeded, nil, nil, nil)
				return
			}
			continue // a follow-up arrived while the model answered
		}
		if err := overCalls(run, calls); err != nil {
			st.em.endStep()
			rt.end(ctx, st, switchboard.RunFailed, err, nil, nil)
			return
		}
		pending, parks := rt.execute(ctx, st, calls)
		st.em.endStep()
		if len(parks) > 0 {
			rt.park(ctx, st, parks)
			return
		}
		if len(pending) > 0 {
			run.dropQueued("the run is waiting for the client's tool results")
			run.finishUnlessQueued(switchboard.RunWaiting)
			rt.end(ctx, st, switchboard.RunWaiting, nil, &agui.Outcome{Type: agui.OutcomeSuccess, PendingToolCallIDs: pending}, nil)
			return
		}
	}
}

// endSpan ends a run's invoke_agent span with the run's token totals and,
// if it failed, its frozen code.
func endSpan(span trace.Span, run *Run) {
	run.mu.Lock()
	usage, rerr := run.usage, run.err
	run.mu.Unlock()
	tracing.Usage(span, usage.InputTokens, usage.OutputTokens)
	var err error
	if rerr != nil {
		err = rerr
	}
	tracing.End(span, err)
}

// addUser appends a user message to the conversation and the stream (so
// every subscriber, on any page, shows it). A consumed follow-up also gets
// its switchboard.followup.consumed event.
func (rt *Runtime) addUser(st *runState, text string, followUp map[string]any) {
	id := newID()
	st.conv = append(st.conv, agui.Message{ID: id, Role: agui.RoleUser, Content: text})
	st.dirty = true
	st.em.emit(&agui.TextMessageStart{MessageID: id, Role: agui.RoleUser})
	st.em.emit(&agui.TextMessageContent{MessageID: id, Delta: text})
	st.em.emit(&agui.TextMessageEnd{MessageID: id})
	if followUp != nil {
		followUp["messageId"] = id
		st.em.emit(&agui.Custom{Name: "switchboard.followup.consumed", Value: followUp})
	}
}

// modelTurn streams one model answer into the run's events and the
// conversation and returns the tool calls it made.
func (rt *Runtime) modelTurn(ctx context.Context, st *runState) ([]call, error) {
	msgID := newID()
	var (
		calls []call
		byID  = map[string]int{} // provider id → index in calls
	)
	emit := func(e model.Event) {
		switch e.Type {
		case model.EventText:
			st.em.textDelta(msgID, e.Text)
		case model.EventToolStart:
			o := st.ts.lookup(e.ToolName)
			c := call{id: "tc_" + newID()[:24], name: e.ToolName, tool: o, index: len(calls)}
			if o != nil {
				c.name = o.real
			}
			byID[e.ToolCallID] = len(calls)
			calls = append(calls, c)
			st.em.endText()
			st.em.toolStart(c.id, c.name, msgID, uiOf(o))
		case model.EventToolArgs:
			if i, ok := byID[e.ToolCallID]; ok {
				calls[i].args += e.ArgsDelta
				st.em.toolArgs(calls[i].id, e.ArgsDelta)
			}
		case model.EventToolEnd:
			if i, ok := byID[e.ToolCallID]; ok {
				st.em.toolEnd(calls[i].id)
			}
		}
	}
	req := model.Request{
		Model:     st.b.Model,
		System:    rt.withNotes(ctx, st.run, st.ts.systemPrompt(rt.opts.Instructions, st.req.Context)) + rt.digestBlock(ctx, st),
		Messages:  toModel(st.conv, st.ts, st.b.Caps),
		MaxTokens: st.b.MaxTokens,
	}
	if st.b.Caps.Tools {
		req.Tools = st.ts.modelTools()
	}
	sctx, span := tracing.StartChat(ctx, rt.tracer, st.b.Provider, st.b.Model, st.run.thread)
	resp, err := st.b.Client.Stream(sctx, req, emit)
	if err == nil {
		tracing.Usage(span, resp.Usage.InputTokens, resp.Usage.OutputTokens)
		tracing.ChatResponse(span, resp.Model, string(resp.Finish))
	}
	tracing.End(span, err)
	st.em.endText()
	if err != nil {
		return nil, err
	}
	rt.account(ctx, st, resp.Usage)
	// The response's calls are authoritative (the events carried the same
	// calls; a provider that sent none as events still gets them run).
	for i, tc := range resp.Message.ToolCalls {
		if i < len(calls) {
			calls[i].args = tc.Args
			continue
		}
		o := st.ts.lookup(tc.Name)
		c := call{id: "tc_" + newID()[:24], name: tc.Name, tool: o, args: tc.Args, index: i}
		if o != nil {
			c.name = o.real
		}
		st.em.toolStart(c.id, c.name, msgID, uiOf(o))
		if tc.Args != "" {
			st.em.toolArgs(c.id, tc.Args)
		}
		st.em.toolEnd(c.id)
		calls = append(calls, c)
	}
	msg := agui.Message{ID: msgID, Role: agui.RoleAssistant, Content: resp.Message.Content}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, agui.ToolCall{ID: c.id, Type: "function", Function: agui.FunctionCall{Name: c.name, Arguments: argsOrEmpty(c.args)}})
	}
	if msg.Content != "" || len(msg.ToolCalls) > 0 {
		st.conv = append(st.conv, msg)
		st.dirty = true
	}
	return calls, nil
}

func uiOf(o *offered) *switchboard.UIMeta {
	if o == nil {
		return nil
	}
	return o.ui
}

// overBudget is BUDGET_EXCEEDED when the run has used its token or cost
// ceiling (Options.MaxRunTokens, MaxRunCost); checked before each model
// call, so a run overshoots by at most one turn.
func (rt *Runtime) overBudget(r *Run) error {
	r.mu.Lock()
	tokens, cost := r.usage.Total(), r.cost
	r.mu.Unlock()
	if max := r.limits.MaxTokens; max > 0 && tokens >= max && (rt.opts.MaxRunTokens <= 0 || max < rt.opts.MaxRunTokens) {
		return switchboard.Errorf(switchboard.CodeBudgetExceeded,
			"the run used %d tokens, its budget is %d; it stopped before the next model call", tokens, max).
			WithDetails(map[string]any{"tokens": tokens, "maxTokens": max})
	}
	if max := r.limits.MaxCost; max > 0 && cost >= max && (rt.opts.MaxRunCost <= 0 || max < rt.opts.MaxRunCost) {
		return switchboard.Errorf(switchboard.CodeBudgetExceeded,
			"the run cost $%.4f, its budget is $%.4f; it stopped before the next model call", cost, max).
			WithDetails(map[string]any{"cost": cost, "maxCost": max})
	}
	if max := rt.opts.MaxRunTokens; max > 0 && tokens >= max {
		return switchboard.Errorf(switchboard.CodeBudgetExceeded,
			"the run used %d tokens, its ceiling is %d; it stopped before the next model call (start a new run to go on)", tokens, max).
			WithDetails(map[string]any{"tokens": tokens, "maxTokens": max})
	}
	if max := rt.opts.MaxRunCost; max > 0 && cost >= max {
		return switchboard.Errorf(switchboard.CodeBudgetExceeded,
			"the run cost $%.4f, its ceiling is $%.4f; it stopped before the next model call (start a new run to go on)", cost, max).
			WithDetails(map[string]any{"cost": cost, "maxCost": max})
	}
	return nil
}

// callKey is the idempotency key of a mutate or job call in a run with an
// idempotency scope: its tool and canonical input, so the same mutation
// asked again returns its first outcome. "" for other classes (a read
// asked again reads again).
func (rt *Runtime) callKey(ctx context.Context, tool string, input json.RawMessage) string {
	t, err := rt.reg.Get(ctx, tool)
	if err != nil || (t.Class != switchboard.ClassMutate && t.Class != switchboard.ClassJob) {
		return ""
	}
	canon, err := canonjson.Canonical(input)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(append([]byte(tool+"\n"), canon...))
	return "task-" + hex.EncodeToString(sum[:16])
}

// overCalls counts the step's calls that go to the broker against the
// run's call budget (Limits.MaxCalls): BUDGET_EXCEEDED, and none of them
// runs, when they would take the run past it.
func overCalls(r *Run, calls []call) error {
	n := 0
	for _, c := range calls {
		if c.tool == nil || (c.tool.kind != kindFrontend && c.tool.kind != kindMeta) {
			n++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if max := r.limits.MaxCalls; max > 0 && r.calls+n > max {
		return switchboard.Errorf(switchboard.CodeBudgetExceeded,
			"the run made %d tool calls and asked for %d more; its budget is %d calls, so none of them ran", r.calls, n, max).
			WithDetails(map[string]any{"calls": r.calls, "maxCalls": max})
	}
	r.calls += n
	return nil
}

// account adds a turn's usage (and cost, when the model has prices) to
// the run and reports the totals.
func (rt *Runtime) account(ctx context.Context, st *runState, u model.Usage) {
	r := st.run
	r.mu.Lock()
	r.usage = r.usage.Add(u)
	turnCost := -1.0
	if st.b.Price != nil {
		turnCost = st.b.Price.Cost(u)
		r.cost += turnCost
	}
	v := map[string]any{
		"step": r.steps, "inputTokens": r.usage.InputTokens, "outputTokens": r.usage.OutputTokens,
		"totalTokens": r.usage.Total(), "stepInputTokens": u.InputTokens, "stepOutputTokens": u.OutputTokens,
	}
	if st.b.Price != nil {
		v["cost"] = r.cost
	}
	r.mu.Unlock()
	if rt.opts.OnUsage != nil {
		rt.opts.OnUsage(st.b.Model, u, turnCost)
	}
	if err := rt.opts.Quotas.Spend(context.WithoutCancel(ctx), st.run.principal, u.Total(), max(turnCost, 0)); err != nil {
		rt.log.Warn("counting a model call against the daily quota", "err", err)
	}
	st.em.emit(&agui.Custom{Name: "switchboard.usage", Value: v})
}

// execute runs a step's tool calls, in parallel, each through the broker
// (one invocation record each), and adds their results to the conversation
// in call order. Frontend calls are not run: their ids are returned for the
// client to answer. In a run with interrupts, calls that wait for approval
// are returned parked, still waiting.
func (rt *Runtime) execute(ctx context.Context, st *runState, calls []call) (pending []string, parks []*parked) {
	results := make([]*agui.Message, len(calls))
	parkedAt := make([]*parked, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		if c.tool != nil && c.tool.kind == kindFrontend {
			pending = append(pending, c.id)
			continue
		}
		wg.Go(func() { results[i], parkedAt[i] = rt.runCall(ctx, st, c, nil, nil) })
	}
	wg.Wait()
	for i, m := range results {
		if m != nil {
			st.conv = append(st.conv, *m)
		}
		if parkedAt[i] != nil {
			parks = append(parks, parkedAt[i])
		}
	}
	return pending, parks
}

// runCall executes one call and emits its TOOL_CALL_RESULT — or, in a run
// with interrupts, returns it parked once it waits for approval (then no
// result yet). auto, when set, decides the call's approval as it is
// requested (an approve-with-edits); meta joins the result's metadata.
func (rt *Runtime) runCall(ctx context.Context, st *runState, c call, auto *autoApprove, meta map[string]any) (*agui.Message, *parked) {
	if meta == nil {
		meta = map[string]any{}
	}
	meta["tool"] = c.name
	switch {
	case !json.Valid([]byte(argsOrEmpty(c.args))):
		err := switchboard.Errorf(switchboard.CodeInvalidInput, "the arguments of %s are not valid JSON: %.200s", c.name, c.args)
		return rt.callResult(st, c, nil, switchboard.Invocation{}, err, meta), nil
	case c.tool != nil && c.tool.kind == kindMeta:
		out, err := rt.answerMeta(ctx, st.ts, c.tool, c.args)
		return rt.callResult(st, c, json.RawMessage(out), switchboard.Invocation{}, err, meta), nil
	}
	if c.tool != nil && c.tool.kind == kindBrowser {
		st.em.emit(&agui.Custom{Name: "switchboard.browser.dispatch", Value: map[string]any{
			"toolCallId": c.id, "tool": c.name, "sessionId": st.run.session,
		}})
	}
	p := &parked{c: c}
	p.sink.Store(st.em)
	// Progress (a job's, an approval wait's) streams on the events of the
	// run that owns the call now.
	pctx := switchboard.WithProgress(switchboard.WithPrincipal(ctx, st.run.principal), func(pr switchboard.Progress) {
		p.sink.Load().emit(&agui.Custom{Name: "switchboard.tool.progress", Value: map[string]any{
			"toolCallId": c.id, "tool": c.name, "progress": pr.Progress, "total": pr.Total, "message": pr.Message,
		}})
	})
	// The run names its caller: the assistant acting for the run's owner,
	// and the agent session the run is recorded as.
	caller := st.run.principal
	req := broker.CallRequest{Tool: c.name, Input: json.RawMessage(argsOrEmpty(c.args)), SessionID: st.run.session, RunID: st.run.id, Caller: &caller}
	req.AgentSession, _ = switchboard.AgentSessionFrom(ctx)
	if st.run.idemScope != "" && c.tool != nil && c.tool.kind == kindCatalog {
		req.IdempotencyKey, req.IdempotencyScope = rt.callKey(ctx, c.name, req.Input), st.run.idemScope
		req.AwaitInFlight = req.IdempotencyKey != ""
	}
	// The call's invocation id ties what the tab hears about it (an
	// approval card names the invocation) to its tool call in the run.
	recorded := func(inv switchboard.Invocation) {
		p.sink.Load().emit(&agui.Custom{Name: "switchboard.tool.invocation", Value: map[string]any{
			"toolCallId": c.id, "tool": c.name, "invocationId": inv.ID, "status": inv.Status,
		}})
	}
	if !rt.interruptible(st) && auto == nil {
		req.OnRecord = recorded
		p.inv, p.err = rt.call.Call(pctx, req)
		return rt.callResult(st, c, p.inv.Result, p.inv, p.err, meta), nil
	}
	// The call may outlive this run (parked: the broker keeps it, and the
	// run keeps its invocation id), so it runs on a context of its own,
	// cancelled with the run's until it parks.
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(pctx))
	p.cancel = cancel
	inv, err := rt.call.Submit(cctx, req)
	if inv.ID != "" {
		recorded(inv)
	}
	if inv.ID == "" || inv.Status.Terminal() {
		cancel(nil)
		return rt.callResult(st, c, inv.Result, inv, err, meta), nil
	}
	p.id = inv.ID
	if inv.Status == switchboard.StatusAwaitingApproval {
		if a, ok := rt.approvalOf(ctx, inv); ok && a.Status == switchboard.ApprovalPending {
			if auto == nil {
				p.approval = a
				return nil, p
			}
			if _, err := rt.approvals.Decide(ctx, a.ID, approval.Decision{By: auto.by, Approve: true, Channel: auto.channel,
				Reason: "approved with edited arguments in the resume of the run"}); err != nil {
				cancel(err)
			}
			meta["approvalId"] = a.ID
		}
		// No pending request to name (decided already, or none): its
		// outcome is awaited here, as without interrupts.
	}
	rt.settle(ctx, p)
	return rt.callResult(st, c, p.inv.Result, p.inv, p.err, meta), nil
}

// settle waits for the outcome of p's call, wherever it runs, and keeps
// it in p: ctx ending first cancels a call this process started (its
// recorded end is then the outcome); another replica's call (no cancel)
// ends p with ctx's cause. Settling twice returns at once.
func (rt *Runtime) settle(ctx context.Context, p *parked) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settled {
		return
	}
	inv, err := rt.call.Await(ctx, p.id, broker.Terminal)
	if err != nil && ctx.Err() != nil && p.cancel != nil {
		p.cancel(context.Cause(ctx))
		inv, err = rt.call.Await(context.WithoutCancel(ctx), p.id, broker.Terminal)
	}
	if err == nil && inv.Error != nil {
		err = inv.Error
	}
	p.inv, p.err, p.settled = inv, err, true
}

// approvalOf reads the approval request a call awaiting approval names.
func (rt *Runtime) approvalOf(ctx context.Context, inv switchboard.Invocation) (switchboard.ApprovalRequest, bool) {
	if inv.ApprovalID == "" {
		rt.log.WarnContext(ctx, "a call awaiting approval names no approval request", "invocation", inv.ID)
		return switchboard.ApprovalRequest{}, false
	}
	a, err := rt.approvals.Get(context.WithoutCancel(ctx), inv.ApprovalID)
	if err != nil {
		rt.log.WarnContext(ctx, "no approval request for a call awaiting approval", "invocation", inv.ID, "approval", inv.ApprovalID, "err", err)
		return switchboard.ApprovalRequest{}, false
	}
	return a, true
}

// callResult turns a call's outcome into its tool message and emits its
// TOOL_CALL_RESULT.
func (rt *Runtime) callResult(st *runState, c call, result json.RawMessage, inv switchboard.Invocation, err error, meta map[string]any) *agui.Message {
	if inv.ID != "" {
		meta["invocationId"], meta["status"] = inv.ID, inv.Status
	}
	msg := &agui.Message{ID: newID(), Role: agui.RoleTool, ToolCallID: c.id}
	// The same redaction as the ledger and the logs (internal/redact), once,
	// here: what a tool returns reaches the run's event stream (AG-UI, AI
	// SDK, /runs/{id}/events), the saved history and the model only
	// through this message, so a cookie or key one tool returns cannot be
	// read from the stream nor repeated by the model into another call.
	if err != nil {
		e := switchboard.AsError(err)
		b, _ := json.Marshal(switchboard.ErrorEnvelope{Error: e})
		msg.Content, msg.Error = string(redact.JSON(b)), redact.String(string(e.Code)+": "+e.Message)
		meta["code"] = e.Code
	} else {
		msg.Content = "null"
		if len(result) > 0 {
			msg.Content = string(redact.JSON(result))
		}
	}
	if len(msg.Content) > rt.opts.MaxToolResultBytes {
		meta["truncatedFrom"] = len(msg.Content)
		msg.Content = msg.Content[:rt.opts.MaxToolResultBytes] + "\n[truncated: the result was longer; ask for less]"
	}
	st.em.emit(&agui.ToolCallResult{
		Base:      agui.Base{Metadata: map[string]any{"switchboard": meta}},
		MessageID: msg.ID, ToolCallID: c.id, Content: msg.Content, Role: agui.RoleTool, IsError: err != nil,
	})
	return msg
}

// end closes everything open and emits the run's terminal event.
func (rt *Runtime) end(ctx context.Context, st *runState, status switchboard.RunStatus, err error, outcome *agui.Outcome, result any) {
	run, em := st.run, st.em
	st.stopState()
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
		if switchboard.CodeOf(err) == switchboard.CodeCancelled {
			status = switchboard.RunCancelled
		}
	}
	if status == switchboard.RunCancelled {
		outcome, err = &agui.Outcome{Type: agui.OutcomeCancelled}, nil
	}
	em.closeAll()
	run.dropQueued("the run ended")
	run.mu.Lock()
	run.status, run.finished = status, rt.now()
	usage := []agui.TokenUsage(nil)
	if run.binding != nil {
		usage = []agui.TokenUsage{{Provider: run.binding.Provider, Model: run.binding.Model,
			InputTokens: run.usage.InputTokens, OutputTokens: run.usage.OutputTokens,
			TotalTokens: run.usage.Total(), CachedInputTokens: run.usage.CachedInputTokens}}
	}
	if err != nil {
		run.err = switchboard.AsError(err)
	}
	run.mu.Unlock()
	if st.dirty {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		rt.saveHistory(sctx, run, st.conv)
		cancel()
	}
	if err != nil {
		e := switchboard.AsError(err)
		rt.log.InfoContext(ctx, "run failed", "run", run.id, "chat", run.thread, "code", e.Code, "err", e.Message)
		em.emit(&agui.RunError{Message: e.Message, Code: string(e.Code), Usage: usage})
	} else {
		if st.conv != nil {
			em.emit(&agui.MessagesSnapshot{Messages: st.conv})
		}
		em.emit(&agui.RunFinished{ThreadID: run.thread, RunID: run.id, Outcome: outcome, Result: result, Usage: usage})
	}
	run.close()
}
