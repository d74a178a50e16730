package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Elicitation chooses whether and how an external agent's call that waits
// for approval asks the human behind the MCP client (docs/governance.md,
// "MCP elicitation").
type Elicitation string

const (
	// ElicitURL, the default, sends a client that declared URL-mode
	// elicitation a link to the console's approvals view: the human
	// decides there with the user's own credential, so the client's word
	// approves nothing. A decline or cancel of the link denies the call.
	ElicitURL Elicitation = ""
	// ElicitOff asks no one over MCP: the call waits for the console, the
	// CLI or the user's tab.
	ElicitOff Elicitation = "off"
	// ElicitForm also lets a client that declared form-mode elicitation
	// answer in its own UI: its "approve" counts as the user's decision.
	// Opt-in, because only the client vouches that a human gave it.
	ElicitForm Elicitation = "form"
)

// maxElicitArgs bounds the arguments quoted in a form's message.
const maxElicitArgs = 2000

// Approvals is the approval service as elicitation uses it; the daemon's
// *approval.Service.
type Approvals interface {
	Get(ctx context.Context, id string) (switchboard.ApprovalRequest, error)
	Decide(ctx context.Context, id string, d approval.Decision) (switchboard.ApprovalRequest, error)
	// Wait blocks until the request is decided by any channel.
	Wait(ctx context.Context, id string) (switchboard.ApprovalRequest, error)
}

var _ Approvals = (*approval.Service)(nil)

// approveSchema is the form a client shows: approve (a missing answer is
// no) and an optional reason.
var approveSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"approve":{"type":"boolean","title":"Approve this call?","description":"Yes runs the call once; no denies it.","default":false},` +
	`"reason":{"type":"string","title":"Reason (optional)","maxLength":1000}},` +
	`"required":["approve"]}`)

// elicitor asks about one call's approval while the broker waits for it.
type elicitor struct {
	s      *Server
	ss     *mcp.ServerSession
	reqCtx context.Context
	c      caller

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// approvalElicitor returns the elicitor of a call, or nil when elicitation
// is off, the call is not an agent's, or the client declared none.
func (s *Server) approvalElicitor(ctx context.Context, c caller, ss *mcp.ServerSession) *elicitor {
	if s.opts.Approvals == nil || s.opts.Elicitation == ElicitOff || ss == nil || !c.ok || c.p.Kind != switchboard.PrincipalAgent {
		return nil
	}
	if elicitMode(s.opts.Elicitation, s.opts.ConsoleURL, ss) == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	return &elicitor{s: s, ss: ss, reqCtx: ctx, c: c, cancel: cancel}
}

// elicitMode is the mode to ask in: what the operator allows and the
// client declared ("" for none). Form wins where allowed: the human
// answers without leaving the client.
func elicitMode(allow Elicitation, consoleURL string, ss *mcp.ServerSession) string {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return ""
	}
	caps := ip.Capabilities.Elicitation
	// A client declaring neither mode supports form (the 2025-06-18 shape).
	form := caps.Form != nil || caps.URL == nil
	switch {
	case allow == ElicitForm && form:
		return "form"
	case (allow == ElicitForm || allow == ElicitURL) && caps.URL != nil && consoleURL != "":
		return "url"
	}
	return ""
}

// recorded is the broker's OnRecord: for a call awaiting approval, it
// starts asking. It must not block.
func (e *elicitor) recorded(inv switchboard.Invocation) {
	if inv.Status != switchboard.StatusAwaitingApproval {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.ask(inv)
	}()
}

// stop ends any question still open (the call was decided elsewhere or
// ended) and waits for it.
func (e *elicitor) stop() {
	e.cancel()
	e.wg.Wait()
}

// complete tells the client elicitation id is complete: on the call's
// stream while the call is open, else on the session's own stream, as the
// transport refuses a message about a request it has already answered
// (the call may end, once decided, before the client's answer to the
// link came back).
func (e *elicitor) complete(ctx context.Context, id string) {
	p := &mcp.ElicitationCompleteParams{ElicitationID: id}
	if err := e.ss.NotifyElicitationComplete(context.WithoutCancel(ctx), p); err != nil {
		_ = e.ss.NotifyElicitationComplete(context.Background(), p)
	}
}

// decidedNow reports whether approval id is no longer pending.
func (e *elicitor) decidedNow(ctx context.Context, id string) bool {
	a, err := e.s.opts.Approvals.Get(ctx, id)
	return err == nil && a.Status != switchboard.ApprovalPending
}

func (e *elicitor) ask(inv switchboard.Invocation) {
	ctx, log := e.reqCtx, e.s.log
	if inv.ApprovalID == "" {
		return // nothing to ask: the record names no approval
	}
	a, err := e.s.opts.Approvals.Get(ctx, inv.ApprovalID)
	if err != nil || a.Status != switchboard.ApprovalPending {
		return // decided already, or the store failed: the other channels still decide
	}
	// Once any channel decides, the question is withdrawn: cancelling its
	// context sends the client notifications/cancelled.
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	decided := make(chan switchboard.ApprovalRequest, 1)
	go func() {
		defer cancel()
		if d, err := e.s.opts.Approvals.Wait(qctx, a.ID); err == nil {
			decided <- d
		}
	}()
	mode := elicitMode(e.s.opts.Elicitation, e.s.opts.ConsoleURL, e.ss)
	params := &mcp.ElicitParams{Mode: mode, Message: elicitMessage(a, mode)}
	if mode == "url" {
		params.URL, params.ElicitationID = e.s.opts.ConsoleURL, a.ID
	} else {
		params.RequestedSchema = approveSchema
	}
	res, err := e.ss.Elicit(qctx, params)
	if err != nil {
		if qctx.Err() == nil {
			log.InfoContext(ctx, "elicitation failed; the approval stays pending for the console, CLI and tab", "approval", a.ID, "err", err)
			return
		}
		// Withdrawn because the console decided (or the call ended) before
		// the client's answer to the link came back: a client that was
		// shown the link is still owed its completion.
		if mode == "url" && e.decidedNow(context.WithoutCancel(ctx), a.ID) {
			e.complete(ctx, a.ID)
		}
		return
	}
	approve, reason := false, ""
	switch {
	case res.Action != "accept":
		reason = "the user chose " + res.Action + " in the MCP client"
	case mode == "url":
		// Accepting the link only opened the console, where the decision
		// is made; tell the client when it is.
		<-qctx.Done() // ends when decided (decided is then filled) or when the call ends
		select {
		case <-decided:
		default:
			// The call can end — cancelling the wait — before the waiter
			// saw the decision that let it run: ask the store.
			if !e.decidedNow(context.WithoutCancel(ctx), a.ID) {
				return
			}
		}
		e.complete(ctx, a.ID)
		return
	default:
		approve, _ = res.Content["approve"].(bool)
		reason, _ = res.Content["reason"].(string)
	}
	_, err = e.s.opts.Approvals.Decide(context.WithoutCancel(ctx), a.ID, approval.Decision{
		By: workspace.AskedOf(a), Approve: approve, Reason: reason, Channel: approval.ChannelElicitation})
	if err != nil && switchboard.CodeOf(err) != switchboard.CodeConflict {
		log.WarnContext(ctx, "decide an approval from an elicitation answer", "approval", a.ID, "err", err)
	}
	// CONFLICT: another channel decided first; its decision stands and the
	// call proceeds by it.
}

// elicitMessage says once who wants to do what, with the arguments.
func elicitMessage(a switchboard.ApprovalRequest, mode string) string {
	var b strings.Builder
	summary := a.Summary
	if summary == "" {
		summary = a.Agent + " wants to call " + a.Tool
	}
	fmt.Fprintf(&b, "Approval needed: %s\n", summary)
	args := bytes.Buffer{}
	if len(a.Input) == 0 || json.Indent(&args, a.Input, "", "  ") != nil {
		args.Reset()
		args.Write(a.Input)
	}
	if args.Len() > maxElicitArgs {
		args.Truncate(maxElicitArgs)
		args.WriteString(" … (truncated; the console shows all)")
	}
	if args.Len() > 0 {
		fmt.Fprintf(&b, "Arguments:\n%s\n", args.String())
	}
	fmt.Fprintf(&b, "Approval %s expires at %s.", a.ID, a.ExpiresAt.UTC().Format(time.RFC3339))
	if mode == "url" {
		b.WriteString(" Open the console to approve or deny it.")
	}
	return b.String()
}
