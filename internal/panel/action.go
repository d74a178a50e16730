package panel

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/panelspec"
)

// statusRunning marks an action whose call has not finished; it appears in
// snapshots only (RunAction answers one of the four statuses).
const statusRunning = "running"

// ActionRequest runs a declared action of an open instance.
type ActionRequest struct {
	InstanceID string `json:"instanceId"`
	Action     string `json:"action"`
}

// ActionResult is the outcome of RunAction. Status is ok, pending_approval
// (the call waits for a human; the panel shows the outcome when it comes),
// rejected_by_user or error.
type ActionResult struct {
	Status       string             `json:"status"`
	InstanceID   string             `json:"instanceId"`
	Action       string             `json:"action"`
	Tool         string             `json:"tool,omitempty"`
	InvocationID string             `json:"invocationId,omitempty"`
	Result       json.RawMessage    `json:"result,omitempty"`
	Error        *switchboard.Error `json:"error,omitempty"`
}

// targetToolLocked is the tool an action calls through the broker: its own tool,
// or the data tool of a mutate action's adapter source. "" means the
// action stays inside the panel (refresh; a mutate of panel state).
// Caller holds s.mu.
func (s *Service) targetToolLocked(spec *panelspec.Spec, a panelspec.Action) (string, error) {
	switch a.Kind {
	case panelspec.ActionTool:
		return a.Tool, nil
	case panelspec.ActionMutate:
		src := s.richLocked(spec.Sources[a.Source])
		switch src.Kind {
		case panelspec.SourceAdapter:
			if !s.offersLocked(src.Adapter, a.Op) {
				return "", switchboard.Errorf(switchboard.CodeForbidden, "adapter %s does not offer %s", src.Adapter, a.Op)
			}
			return AdapterToolName(src.Adapter, a.Op), nil
		case panelspec.SourceTool:
			return "", switchboard.Errorf(switchboard.CodeInvalidInput, "source %s is a read tool's output and cannot be mutated; declare an action of kind tool", a.Source)
		}
	}
	return "", nil
}

// RunAction runs one declared action of an instance as the caller in ctx.
// It is the only way a panel changes anything outside itself: a tool
// action calls its tool and a mutate action on an adapter source calls the
// adapter's data tool, both through the broker, so approvals and the ledger
// apply. A form's values go with the action that submits it; required and
// constrained fields are checked first. RunAction waits for the call until
// ctx ends (or ActionWait passes); a call still waiting then (for an
// approval, typically) goes on, and its outcome reaches the panel.
//
// The caller takes the instance's lease (LEASE_HELD while another agent
// holds it).
func (s *Service) RunAction(ctx context.Context, req ActionRequest) (ActionResult, error) {
	in, err := s.instance(ctx, req.InstanceID)
	if err != nil {
		return ActionResult{}, err
	}
	if in.detached {
		var res ActionResult
		return res, s.away(ctx, in, opAction, req, &res)
	}
	return s.runAction(ctx, in, req, s.actor(ctx))
}

// runAction runs req on in for who: an agent takes the lease, the user
// ends it (who.user; the call itself runs as the principal in ctx).
func (s *Service) runAction(ctx context.Context, in *instance, req ActionRequest, who actor) (ActionResult, error) {
	res := ActionResult{InstanceID: in.id, Action: req.Action}
	s.mu.Lock()
	spec := in.spec
	a, ok := spec.Actions[req.Action]
	if !ok || in.closed {
		ids := make([]string, 0, len(spec.Actions))
		for id := range spec.Actions {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		s.mu.Unlock()
		return ActionResult{}, switchboard.Errorf(switchboard.CodeNotFound, "panel instance %s has no action %q; its actions: %s", in.id, req.Action, orNone(ids))
	}
	tool, err := s.targetToolLocked(spec, a)
	if err != nil {
		s.mu.Unlock()
		return ActionResult{}, err
	}
	if _, err := s.leases.take(in.id, who); err != nil {
		s.mu.Unlock()
		return ActionResult{}, err
	}
	res.Tool = tool
	bind, input, ferrs := in.actionInput(req.Action, a)
	s.mu.Unlock()
	if len(ferrs) > 0 {
		e := switchboard.Errorf(switchboard.CodeSchemaViolation, "the form is not ready to save: %s: %s", ferrs[0].Path, ferrs[0].Message).WithDetails(map[string]any{"fields": ferrs})
		res.Status, res.Error = StatusError, e
		return res, nil
	}

	if tool == "" { // inside the panel: refresh, or a mutate of panel state
		switch {
		case a.Kind == panelspec.ActionRefresh:
			s.reload(ctx, in, func(src panelspec.Source) bool { return src.Kind != panelspec.SourceState })
		case a.Kind == panelspec.ActionMutate:
			if err := s.commitState(in, a, input); err != nil {
				res.Status, res.Error = StatusError, switchboard.AsError(err)
				return res, nil
			}
		}
		res.Status = StatusOK
		s.record(in, req.Action, ActionState{Status: StatusOK}, "", false)
		return res, nil
	}

	body, err := json.Marshal(input)
	if err != nil {
		return ActionResult{}, switchboard.Errorf(switchboard.CodeInvalidInput, "encode the action's input: %v", err)
	}
	s.record(in, req.Action, ActionState{Status: statusRunning, Tool: tool}, "", true)
	// The call outlives this request if it must (an approval nobody has
	// answered yet): it keeps the caller's principal, not its deadline.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxActionTime)
	stop := context.AfterFunc(s.base, cancel)
	// Submit returns once the call is recorded: at once, with its approval
	// requested, when the approval policy holds it for a person; after a
	// concurrency slot when it runs; or refused.
	// The action's call is made by whoever runs the action (the
	// principal its request carried), within that agent's session if any.
	call := broker.CallRequest{Tool: tool, Input: body, SessionID: in.session}
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		call.Caller = &p
	}
	call.AgentSession, _ = switchboard.AgentSessionFrom(ctx)
	inv, err := s.caller.Submit(cctx, call)
	if err != nil || inv.Status.Terminal() {
		stop()
		cancel()
		return s.actionAnswer(res, s.actionEnded(in, req.Action, bind, tool, inv, err), inv), nil
	}
	if inv.Status == switchboard.StatusAwaitingApproval {
		s.record(in, req.Action, ActionState{Status: StatusPendingApproval, InvocationID: inv.ID, Tool: tool}, "", true)
	}
	type outcome struct {
		inv switchboard.Invocation
		st  ActionState
	}
	done := make(chan outcome, 1)
	go func() {
		defer stop()
		defer cancel()
		got, err := s.caller.Await(cctx, inv.ID, broker.Terminal) // wherever it runs
		done <- outcome{got, s.actionEnded(in, req.Action, bind, tool, got, err)}
	}()
	wctx := ctx
	if _, has := ctx.Deadline(); !has {
		var c context.CancelFunc
		wctx, c = context.WithTimeout(ctx, s.opts.ActionWait)
		defer c()
	}
	select {
	case o := <-done:
		return s.actionAnswer(res, o.st, o.inv), nil
	case <-wctx.Done():
		res.Status, res.InvocationID = StatusPendingApproval, inv.ID
		if inv.Status != switchboard.StatusAwaitingApproval {
			// The policy held it for nobody: it is still running.
			res.Status = StatusError
			res.Error = switchboard.Errorf(switchboard.CodeTimeout, "%s is still running; the panel shows its outcome when it finishes", tool)
		}
		return res, nil
	}
}

// actionEnded shows the outcome of an action's call in the panel: a
// success reloads what is stored, then forgets the unsaved marks of bind.
func (s *Service) actionEnded(in *instance, action, bind, tool string, inv switchboard.Invocation, err error) ActionState {
	st := stateOf(inv, err, tool)
	if st.Status == StatusOK {
		s.reload(s.base, in, func(src panelspec.Source) bool { return src.Kind != panelspec.SourceState })
	}
	s.record(in, action, st, bind, true)
	return st
}

// actionAnswer is RunAction's answer for a call that ended as st.
func (s *Service) actionAnswer(res ActionResult, st ActionState, inv switchboard.Invocation) ActionResult {
	res.Status, res.InvocationID, res.Error = st.Status, st.InvocationID, st.Error
	if st.Status == StatusOK {
		res.Result = inv.Result
	}
	return res
}

// stateOf maps a finished call to an action status.
func stateOf(inv switchboard.Invocation, err error, tool string) ActionState {
	st := ActionState{InvocationID: inv.ID, Tool: tool}
	if err == nil && inv.Status == switchboard.StatusSucceeded {
		st.Status = StatusOK
		return st
	}
	e := inv.Error
	if e == nil {
		e = switchboard.AsError(err)
	}
	if e == nil {
		e = switchboard.Errorf(switchboard.CodeInternal, "%s ended %s", tool, inv.Status)
	}
	st.Error = e
	switch {
	case inv.Status == switchboard.StatusDenied || e.Code == switchboard.CodeUserDenied:
		st.Status = StatusRejectedByUser
	case inv.Status == switchboard.StatusPending || inv.Status == switchboard.StatusAwaitingApproval:
		st.Status = StatusPendingApproval
	default:
		st.Status = StatusError
	}
	return st
}

// record stores an action's state; a successful save clears the unsaved
// marks of the form it saved. push sends the change to the tab.
func (s *Service) record(in *instance, action string, st ActionState, bind string, push bool) {
	s.mu.Lock()
	if in.closed {
		s.mu.Unlock()
		return
	}
	in.actions[action] = st
	if st.Status == StatusOK && bind != "" {
		in.clearPending(bind)
		in.syncValues()
	}
	in.version++
	sn := in.snapshot()
	s.mu.Unlock()
	kind := ""
	if push {
		kind = EventUpdate
	}
	_ = s.changed(in, kind, sn) // a stale copy is dropped and logged; the call's outcome is in its record
}

// actionInput builds the input of action id: for a mutate, the key of the
// bound record and the values of the forms bound to its source; for a tool
// action, its fixed input over the values of the form that submits it.
// bind is the source whose unsaved marks a success clears. Caller holds
// s.mu.
func (in *instance) actionInput(id string, a panelspec.Action) (bind string, input map[string]any, errs []FieldError) {
	input = map[string]any{}
	switch a.Kind {
	case panelspec.ActionMutate:
		bind = a.Source
		if a.Op != panelspec.OpDelete {
			vals, ferrs := in.formValues(func(f *form) bool { return f.bind == a.Source })
			if len(ferrs) > 0 {
				return "", nil, ferrs
			}
			input["values"] = nest(vals)
		}
		if a.Op != panelspec.OpCreate && in.spec.Sources[a.Source].Kind != panelspec.SourceState { // panel state is one record
			key := in.spec.Sources[a.Source].Key
			if key == "" {
				key = "id"
			}
			k, ok := walk(recordOf(in.data[a.Source]), key)
			if !ok {
				return "", nil, []FieldError{{Path: key, Code: switchboard.CodeInvalidInput, Message: "the record has no key to " + a.Op + " by"}}
			}
			input["key"] = k
		}
	case panelspec.ActionTool:
		vals, ferrs := in.formValues(func(f *form) bool { return f.submit == id })
		if len(ferrs) > 0 {
			return "", nil, ferrs
		}
		for k, v := range nest(vals) {
			input[k] = v
		}
		var fixed map[string]any
		if len(a.Input) > 0 && json.Unmarshal(a.Input, &fixed) == nil {
			for k, v := range fixed { // what the panel's author fixed wins
				input[k] = v
			}
		}
		for _, f := range in.forms {
			if f.submit == id {
				bind = f.bind
			}
		}
	}
	return bind, input, nil
}

// formValues collects the writable values of the forms keep selects,
// checking each against its field.
func (in *instance) formValues(keep func(*form) bool) (map[string]any, []FieldError) {
	vals := map[string]any{}
	var errs []FieldError
	for i := range in.forms {
		f := &in.forms[i]
		if !keep(f) {
			continue
		}
		for _, fld := range f.fields {
			if fld.ReadOnly {
				continue
			}
			v, ok := in.values[f.bind][fld.Path]
			if fe := checkValue(fld, v, false); fe != nil && (ok || fld.Required) {
				errs = append(errs, *fe)
				continue
			}
			if ok {
				vals[fld.Path] = v
			}
		}
	}
	return vals, errs
}

// commitState applies a mutate action on a state source to the panel's own
// state: nothing outside the panel changes, so no tool is called.
func (s *Service) commitState(in *instance, a panelspec.Action, input map[string]any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := in.spec.Sources[a.Source]
	var state any = map[string]any{}
	if len(in.spec.State) > 0 {
		if err := json.Unmarshal(in.spec.State, &state); err != nil {
			return switchboard.Errorf(switchboard.CodeInternal, "decode panel state: %v", err)
		}
	}
	var next any
	if a.Op != panelspec.OpDelete {
		rec, _ := pointerGet(state, src.Path)
		m, _ := rec.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		merge(m, input["values"].(map[string]any))
		next = m
	}
	state, ok := pointerSet(state, src.Path, next)
	if !ok {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "source %s points at %s, which the panel state does not have", a.Source, src.Path)
	}
	raw, err := json.Marshal(state)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "encode panel state: %v", err)
	}
	spec := *in.spec
	spec.State = raw
	in.spec = &spec
	data, _ := json.Marshal(next)
	in.data[a.Source] = data
	in.clearPending(a.Source)
	in.syncValues()
	return nil
}

// merge writes src into dst, recursing into nested objects.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				merge(d, sub)
				continue
			}
		}
		dst[k] = v
	}
}

// pointerSet replaces the value at an RFC 6901 pointer whose parent exists.
func pointerSet(doc any, ptr string, v any) (any, bool) {
	if ptr == "" {
		return v, true
	}
	i := strings.LastIndex(ptr, "/")
	parent, ok := pointerGet(doc, ptr[:i])
	if !ok {
		return doc, false
	}
	tok := strings.ReplaceAll(strings.ReplaceAll(ptr[i+1:], "~1", "/"), "~0", "~")
	m, ok := parent.(map[string]any)
	if !ok {
		return doc, false
	}
	m[tok] = v
	return doc, true
}

// InstanceOf names the open panel instance whose action made invocation
// id ("" when none did): the workspace digest shows which panel an
// approval waiting for the user belongs to.
func (s *Service) InstanceOf(invocationID string) string {
	if invocationID == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for iid, in := range s.byID { // this replica's tabs only
		for _, st := range in.actions {
			if st.InvocationID == invocationID {
				return iid
			}
		}
	}
	return ""
}
