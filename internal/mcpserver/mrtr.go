package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Approvals for the 2026-07-28 revision (multi round-trip requests,
// SEP-2322). That revision has no sessions, so the server cannot ask the
// client mid-call (elicitation/create); instead a call that needs approval
// answers resultType "input_required" with an elicitation for the client
// to show and a requestState to echo, and the client calls again. Any
// replica may take any round: the round carries, signed, which invocation
// and approval it is about and who asked; the invocation, the approval and
// the call's outcome are in the store.
//
// The call itself is the broker's, recorded once by the first round and
// run once, when approved, by the replica that recorded it (or, if that
// replica died, by the survivor that took its calls over). A round only
// reads: it never runs the tool, so two retries — on one replica or on
// two — cannot run it twice.

const (
	// inputKey names switchboard's one input request of a round.
	inputKey = "switchboard/approval"
	// DefaultInputWait is how long a retry waits for a pending approval
	// before it answers input_required again: long enough that a human
	// deciding in the console is seen at once, short enough that no proxy
	// cuts the request.
	DefaultInputWait = 20 * time.Second
	// stateGrace is how long past its approval's expiry a requestState
	// still verifies: a retry then learns the outcome (USER_DENIED,
	// expired) rather than that its state is stale.
	stateGrace = time.Hour
	// stateContext separates requestState MACs from any other use of the
	// key.
	stateContext = "switchboard/mcp-request-state/v1\x00"
)

// errStopping ends the tool calls of MCP requests still open when the
// server closes.
var errStopping = switchboard.Errorf(switchboard.CodeCancelled, "the daemon is stopping")

// stateEncoding decodes a requestState's parts strictly, so that one
// sealed state has exactly one spelling.
var stateEncoding = base64.RawURLEncoding.Strict()

// requestState is what one round tells the next, signed (sealState).
type requestState struct {
	Invocation string `json:"inv"`
	Approval   string `json:"apr"`
	Caller     string `json:"caller"`
	Tool       string `json:"tool"` // catalog name
	Args       string `json:"args"` // approval.ArgsHash of the input
	Mode       string `json:"mode"` // the elicitation mode asked in
	Expires    int64  `json:"exp"`  // unix seconds: the approval's expiry
}

// StateKey derives the key that signs requestState from a secret every
// replica shares (the daemon passes its admin token): a state one replica
// issued verifies on every other, and a state altered, or issued by a
// daemon with another secret, verifies nowhere.
func StateKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(stateContext))
	return m.Sum(nil)
}

func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

func (s *Server) sealState(st requestState) string {
	b, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, s.opts.StateKey)
	m.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openState verifies a requestState and that it was issued to this
// caller for this call.
func (s *Server) openState(raw string, c caller, t switchboard.Tool, input json.RawMessage) (requestState, error) {
	var st requestState
	payload, mac, ok := strings.Cut(raw, ".")
	sum, err := stateEncoding.DecodeString(mac)
	ok = ok && err == nil
	if ok {
		m := hmac.New(sha256.New, s.opts.StateKey)
		m.Write([]byte(payload))
		ok = hmac.Equal(sum, m.Sum(nil))
	}
	if ok {
		b, err := stateEncoding.DecodeString(payload)
		ok = err == nil && json.Unmarshal(b, &st) == nil && st.Invocation != "" && st.Approval != ""
	}
	switch {
	case !ok:
		return st, stateError("requestState was not issued by this server or was altered")
	case st.Caller != c.p.Key():
		return st, stateError("requestState was issued to another caller")
	case st.Tool != t.Name || st.Args != approval.ArgsHash(input):
		return st, stateError("requestState belongs to another call (another tool or other arguments)")
	case time.Now().Add(-stateGrace).Unix() > st.Expires:
		return st, stateError("requestState has expired with its approval")
	}
	return st, nil
}

func stateError(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: "INVALID_INPUT: " + msg + "; call the tool again without requestState to ask for a new approval"}
}

// statelessCall reports whether req comes from a 2026-07-28 client.
func statelessCall(req *mcp.CallToolRequest) bool {
	return req.ProtocolVersion() >= statelessRevision
}

// roundMode is the elicitation mode a 2026-07-28 call that needs approval
// asks in ("" when it asks no one and simply waits, as a 2025-11-25 call
// without elicitation does).
func (s *Server) roundMode(c caller, ss *mcp.ServerSession) string {
	if s.opts.Approvals == nil || s.opts.Elicitation == ElicitOff || ss == nil || !c.ok || c.p.Kind != switchboard.PrincipalAgent {
		return ""
	}
	return elicitMode(s.opts.Elicitation, s.opts.ConsoleURL, ss)
}

// firstRound runs a call of a 2026-07-28 client that can be asked: the
// broker's Submit returns once the call is recorded; awaiting approval,
// the round answers input_required and the call waits in the broker,
// detached from the request (the broker's Stop ends it, leaving the
// approval pending for a survivor); otherwise the round answers its
// outcome, and the client giving up cancels it.
func (s *Server) firstRound(ctx context.Context, c caller, t switchboard.Tool, cr broker.CallRequest, mode string) (*mcp.CallToolResult, error) {
	args := approval.ArgsHash(cr.Input)
	// The call follows the request until it awaits approval.
	dctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopReq := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	// A re-sent first round with the client's idempotency key finds its
	// call in flight: it is answered about that call, not made to wait.
	cr.AwaitInFlight = false
	cr.Durable = approval.ErrStopped
	inv, err := s.br.Submit(dctx, cr)
	c.task.saw(inv)
	switch {
	case inv.ID == "" || inv.Status.Terminal():
		stopReq()
		cancel(nil)
		if d, ok := conflictInFlight(err); ok {
			return s.round(ctx, c, t, d, "", args, mode, false)
		}
		return s.result(t, inv, err), nil
	case inv.Status == switchboard.StatusAwaitingApproval && stopReq():
		return s.round(ctx, c, t, inv.ID, inv.ApprovalID, args, mode, false)
	}
	// Running (or the request ended as it was recorded: then the call is
	// cancelled with it): its outcome is the answer.
	out, err := s.br.Await(context.WithoutCancel(ctx), inv.ID, broker.Terminal)
	stopReq()
	cancel(nil)
	if err == nil && out.Error != nil {
		err = out.Error
	}
	return s.result(t, out, err), nil
}

// conflictInFlight returns the invocation of a CONFLICT that names a call
// still in flight under the same idempotency key.
func conflictInFlight(err error) (string, bool) {
	var e *switchboard.Error
	if !errors.As(err, &e) || e.Code != switchboard.CodeConflict {
		return "", false
	}
	d, _ := e.Details.(map[string]any)
	id, ok := d["invocationId"].(string)
	return id, ok && id != ""
}

// retryRound answers a 2026-07-28 retry that echoes a requestState: it
// records the client's answer, if it carries one, and answers with the
// call's outcome once the approval is decided, or input_required again.
func (s *Server) retryRound(ctx context.Context, c caller, req *mcp.CallToolRequest, t switchboard.Tool, input json.RawMessage) (*mcp.CallToolResult, error) {
	if s.opts.Approvals == nil {
		return nil, stateError("this server asks for no approval over MCP")
	}
	st, err := s.openState(req.Params.RequestState, c, t, input)
	if err != nil {
		return nil, err
	}
	if r, ok := req.Params.InputResponses[inputKey].(*mcp.ElicitResult); ok && r != nil {
		s.answered(ctx, c, st, r)
	}
	return s.round(ctx, c, t, st.Invocation, st.Approval, st.Args, st.Mode, true)
}

// answered records a client's answer to a round's elicitation, as the
// session's elicitor does (elicit.go): declining denies; in form mode an
// accepted form decides; accepting a URL only opened the console, where
// the decision is made.
func (s *Server) answered(ctx context.Context, c caller, st requestState, r *mcp.ElicitResult) {
	approve, reason := false, ""
	switch {
	case r.Action != "accept":
		reason = "the user chose " + r.Action + " in the MCP client"
	case st.Mode == "url" || s.opts.Elicitation != ElicitForm:
		return // only the console decides (form answers count only while the operator allows them)
	default:
		approve, _ = r.Content["approve"].(bool)
		reason, _ = r.Content["reason"].(string)
	}
	a, err := s.approvalOf(ctx, st.Invocation, st.Approval)
	if err != nil || a.Status != switchboard.ApprovalPending {
		return // decided already: that decision stands
	}
	_, err = s.opts.Approvals.Decide(context.WithoutCancel(ctx), a.ID, approval.Decision{
		By: workspace.AskedOf(a), Approve: approve, Reason: reason, Channel: approval.ChannelElicitation})
	if err != nil && switchboard.CodeOf(err) != switchboard.CodeConflict {
		s.log.WarnContext(ctx, "decide an approval from an input response", "approval", a.ID, "err", err)
	}
}

// round answers for call inv awaiting approval apr ("" finds it), made
// with arguments of hash args: its outcome once decided, else
// input_required. wait lets it wait up to InputWait for a decision first.
func (s *Server) round(ctx context.Context, c caller, t switchboard.Tool, inv, apr, args, mode string, wait bool) (*mcp.CallToolResult, error) {
	a, err := s.approvalOf(ctx, inv, apr)
	if err != nil {
		return s.outcome(ctx, t, inv)
	}
	st := requestState{Invocation: inv, Approval: a.ID, Caller: c.p.Key(), Tool: t.Name,
		Args: args, Mode: mode, Expires: a.ExpiresAt.Unix()}
	if a.Status == switchboard.ApprovalPending && wait {
		wctx, cancel := context.WithTimeout(ctx, s.opts.InputWait)
		if d, err := s.opts.Approvals.Wait(wctx, a.ID); err == nil {
			a = d
		}
		cancel()
	}
	if a.Status != switchboard.ApprovalPending {
		res, err := s.outcome(ctx, t, inv)
		if err != nil && errors.Is(context.Cause(ctx), errStopping) {
			// This replica is stopping while the call runs elsewhere (or
			// will run on a survivor): an empty round tells the client to
			// retry, which the balancer sends to another replica.
			return inputRequired(mcp.InputRequestMap{}, s.sealState(st), inv)
		}
		return res, err
	}
	if errors.Is(context.Cause(ctx), errStopping) {
		return inputRequired(mcp.InputRequestMap{}, s.sealState(st), inv) // ask again elsewhere
	}
	params := &mcp.ElicitParams{Mode: mode, Message: elicitMessage(a, mode)}
	if mode == "url" {
		params.URL, params.ElicitationID = s.opts.ConsoleURL, a.ID
	} else {
		params.RequestedSchema = approveSchema
	}
	return inputRequired(mcp.InputRequestMap{inputKey: params}, s.sealState(st), inv)
}

// approvalOf returns approval id of invocation inv, or, when id is "",
// the one the invocation's record names.
func (s *Server) approvalOf(ctx context.Context, inv, id string) (switchboard.ApprovalRequest, error) {
	if id == "" {
		rec, err := s.br.Get(ctx, inv)
		if err != nil {
			return switchboard.ApprovalRequest{}, err
		}
		id = rec.ApprovalID
	}
	if id == "" {
		return switchboard.ApprovalRequest{}, switchboard.Errorf(switchboard.CodeNotFound, "invocation %s has no approval", inv)
	}
	a, err := s.opts.Approvals.Get(ctx, id)
	if err == nil && a.InvocationID != inv {
		err = switchboard.Errorf(switchboard.CodeNotFound, "invocation %s has no approval %q", inv, id)
	}
	return a, err
}

// outcome waits for call inv to end — it runs wherever it is owned — and
// renders it; ctx ending first is an error.
func (s *Server) outcome(ctx context.Context, t switchboard.Tool, id string) (*mcp.CallToolResult, error) {
	inv, err := s.br.Await(ctx, id, broker.Terminal)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return s.result(t, inv, err), nil
	case inv.Status != switchboard.StatusSucceeded:
		ierr := error(inv.Error)
		if inv.Error == nil {
			ierr = switchboard.Errorf(switchboard.CodeInternal, "invocation %s ended %s without an error", inv.ID, inv.Status)
		}
		return s.result(t, inv, ierr), nil
	}
	return s.result(t, inv, nil), nil
}

// inputRequired builds an input_required result (with no input request:
// "retry", which SEP-2322 calls load shedding). The SDK sets a result's
// type only for handlers it dispatches itself, and tools/call is answered
// by switchboard's middleware, so the result is decoded from its wire
// form, where the type is a field.
func inputRequired(requests mcp.InputRequestMap, state, inv string) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(struct {
		Meta          mcp.Meta            `json:"_meta"`
		ResultType    string              `json:"resultType"`
		InputRequests mcp.InputRequestMap `json:"inputRequests"`
		RequestState  string              `json:"requestState"`
	}{mcp.Meta{metaInvocationID: inv}, "input_required", requests, state})
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
