package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/mcpext"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/strictjson"
	"github.com/switchboardhq/switchboard/internal/tracing"
)

// Keys of _meta that switchboard reads or writes on tools/call.
const (
	// metaIdempotencyKey, set by a client on a call, makes a re-sent call
	// (a new JSON-RPC id after a dropped stream) join or replay the first
	// one instead of running again. It is the broker's idempotency key
	// (CallRequest.IdempotencyKey, kept in the store), and a re-send that
	// arrives while the first call runs waits for it (AwaitInFlight). The
	// JSON-RPC id cannot tell a retry from a new call: it changes on a
	// re-send, which the 2026-07-28 revision requires.
	metaIdempotencyKey = "switchboard/idempotencyKey"
	// metaInvocationID names the invocation record of a result.
	metaInvocationID = "switchboard/invocationId"
	// contentKey marks a tool result made of MCP content blocks.
	contentKey = "mcp/content"
)

func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	if req.Extra != nil && req.Extra.Header.Get("Traceparent") != "" {
		// The handler's context is the session's, not this POST's: the
		// caller's W3C trace context is read from the POST's headers here.
		ctx = tracing.Extract(ctx, req.Extra.Header)
	}
	c := s.callerOf(ctx, req.Extra)
	name := req.Params.Name
	if res := s.guardView(ctx, req); res != nil {
		return res, nil
	}
	c, ctx, err := s.forTask(ctx, c, req)
	if err != nil {
		// Refused before any tool is looked up: as a call the broker
		// refuses before recording it (the task's code, no invocation).
		if _, ok := err.(*jsonrpc.Error); ok {
			return nil, err
		}
		if taskRequested(req) {
			return nil, refusedTask(err)
		}
		return errorResult(err, nil), nil
	}
	defer s.endTask(c.task)
	if taskRequested(req) {
		if _, ok := s.names.catalogName(name); !ok || name == toolSearch || name == toolDescribe || name == toolCall || name == toolPanelView {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s does not run as a task; call it without params.task", name)}
		}
	}
	switch name {
	case toolPanelView:
		if s.opts.Panels != nil {
			return s.panelView(ctx, req)
		}
	case toolSearch:
		// A call is attributed to a search of the same MCP session only
		// (learned search, internal/registry/learn.go). A sessionless
		// (2026-07-28) request's session lives for that request alone, so
		// its run would match no call: its search is narrowed only by the
		// agent session its requests share.
		if req.Session != nil && req.Session.ID() != "" {
			ctx = registry.WithSearchRun(ctx, s.runOf(req.Session))
		}
		return s.search(ctx, req.Params.Arguments)
	case toolDescribe:
		return s.describeTool(ctx, req.Params.Arguments)
	case toolCall:
		return s.metaCall(ctx, c, req)
	}
	// Unknown tools and malformed arguments are protocol errors (MCP's
	// "invalid params"); everything after the tool is found is a tool
	// error the model can read.
	cat, ok := s.names.catalogName(name)
	if !ok {
		return nil, unknownTool(name)
	}
	t, found, err := s.lookup(ctx, cat)
	if err != nil {
		return nil, rpcError(err)
	}
	if !found {
		return nil, unknownTool(name)
	}
	// Checked before objectArgs, whose map would keep the last of two
	// duplicate names and mend invalid UTF-8; the broker checks the same
	// way (schema.Validate) what reaches it by other paths.
	if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) > 0 {
		if err := strictjson.Input(raw); err != nil {
			e := switchboard.AsError(err)
			return errorResult(&switchboard.Error{Code: e.Code, Message: "input of " + t.Name + ": " + e.Message, Details: e.Details}, nil), nil
		}
	}
	args, err := objectArgs(req.Params.Arguments)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call arguments must be a JSON object"}
	}
	sessionID := ""
	if t.Surface == switchboard.SurfaceBrowser && !ownsSessionID(t.InputSchema) {
		if raw, ok := args[sessionIDProp]; ok {
			if err := json.Unmarshal(raw, &sessionID); err != nil {
				return errorResult(switchboard.Errorf(switchboard.CodeInvalidInput, "sessionId must be a string"), nil), nil
			}
			delete(args, sessionIDProp)
		}
	}
	if taskRequested(req) || (statelessCall(req) && req.Params.RequestState == "" && taskCapable(t) && declaresTasks(req)) {
		input, err := json.Marshal(args)
		if err != nil {
			return errorResult(switchboard.Errorf(switchboard.CodeInvalidInput, "arguments: %v", err), nil), nil
		}
		return s.startTask(ctx, c, req, t, input, sessionID)
	}
	return s.invoke(ctx, c, req, t, args, sessionID)
}

// invoke runs one call through the broker and renders its outcome.
func (s *Server) invoke(ctx context.Context, c caller, req *mcp.CallToolRequest, t switchboard.Tool, args map[string]json.RawMessage, sessionID string) (*mcp.CallToolResult, error) {
	input, err := json.Marshal(args)
	if err != nil {
		return errorResult(switchboard.Errorf(switchboard.CodeInvalidInput, "arguments: %v", err), nil), nil
	}
	key, _ := req.Params.Meta[metaIdempotencyKey].(string)
	cr := broker.CallRequest{Tool: t.Name, Input: input, SessionID: sessionID, RunID: s.runOf(req.Session),
		IdempotencyKey: key, AwaitInFlight: true}
	if c.ok {
		cr.Caller = &c.p
	}

	// A 2026-07-28 client has no session to be asked through: its
	// approvals cross rounds (mrtr.go).
	rounds := ""
	if statelessCall(req) {
		if req.Params.RequestState != "" {
			return s.retryRound(ctx, c, req, t, input)
		}
		rounds = s.roundMode(c, req.Session)
	} else if el := s.approvalElicitor(ctx, c, req.Session); el != nil {
		cr.OnRecord = el.recorded
		defer el.stop()
	}
	var p *progress
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		p = &progress{ss: req.Session, token: token, reqCtx: context.WithoutCancel(ctx)}
		ctx = switchboard.WithProgress(ctx, p.report)
		if t.Surface == switchboard.SurfaceBrowser {
			p.note(ctx, fmt.Sprintf("sending %s to the user's browser tab", t.Name))
		}
		stop := p.heartbeat(ctx, s.opts.ProgressInterval, t)
		defer stop()
	}
	ctx = mcpext.WithRequest(ctx, req) // for the conformance fixtures
	if c.ok {
		ctx = switchboard.WithPrincipal(ctx, c.p)
	}
	if id, ok := switchboard.AgentSessionFrom(ctx); ok && s.opts.Agents != nil {
		var done func()
		ctx, done = s.opts.Agents.Work(ctx, id) // an interrupt of the agent cancels the call
		defer done()
	}
	cr.AgentSession, _ = switchboard.AgentSessionFrom(ctx)

	if rounds != "" {
		// Progress reaches the client while this round's request is open.
		res, err := s.firstRound(ctx, c, t, cr, rounds)
		if p != nil {
			p.finish()
		}
		return res, err
	}
	inv, err := s.br.Call(ctx, cr)
	c.task.saw(inv)
	if p != nil {
		p.finish()
	}
	res := s.result(t, inv, err)
	if err == nil {
		s.linkPanel(t, inv, res)
	}
	return res, nil
}

// result renders an outcome: the tool's result, or an isError result
// carrying the code in its text and in structured form.
func (s *Server) result(t switchboard.Tool, inv switchboard.Invocation, err error) *mcp.CallToolResult {
	if err != nil {
		e := switchboard.AsError(err)
		if e.Code == switchboard.CodeInternal && !errors.As(err, new(*switchboard.Error)) {
			s.log.Error("tool call failed", "tool", t.Name, "invocation", inv.ID, "err", err)
			e = switchboard.Errorf(switchboard.CodeInternal, "internal error; see the daemon log")
		}
		return errorResult(e, &inv)
	}
	res := &mcp.CallToolResult{Meta: mcp.Meta{metaInvocationID: inv.ID}}
	if blocks, ok := contentBlocks(inv.Result); ok {
		res.Content = blocks
	} else {
		res.Content = []mcp.Content{&mcp.TextContent{Text: resultText(inv.Result)}}
	}
	// A job's call answers {jobId, status}, not the tool's declared output,
	// so it carries no structured content that a client would check.
	if len(t.OutputSchema) > 0 && t.Class != switchboard.ClassJob {
		res.StructuredContent = json.RawMessage(inv.Result)
	}
	return res
}

// toolError is the structured form of a failed call.
type toolError struct {
	Error        *switchboard.Error `json:"error"`
	InvocationID string             `json:"invocationId,omitempty"`
	Status       switchboard.Status `json:"status,omitempty"`
}

func errorResult(err error, inv *switchboard.Invocation) *mcp.CallToolResult {
	e := switchboard.AsError(err)
	te := toolError{Error: e}
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(e.Code) + ": " + e.Message}}}
	if inv != nil && inv.ID != "" {
		te.InvocationID, te.Status = inv.ID, inv.Status
		res.Meta = mcp.Meta{metaInvocationID: inv.ID}
	}
	res.StructuredContent = te
	return res
}

func structuredResult(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(switchboard.Errorf(switchboard.CodeInternal, "encode result: %v", err), nil)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// resultText renders a JSON result for a model: a string as itself,
// anything else as compact JSON.
func resultText(r json.RawMessage) string {
	if len(r) == 0 {
		return "null"
	}
	var str string
	if r[0] == '"' && json.Unmarshal(r, &str) == nil {
		return str
	}
	var b bytes.Buffer
	if json.Compact(&b, r) != nil {
		return string(r)
	}
	return b.String()
}

// contentBlocks recognizes a result of the form {"mcp/content": [blocks]}:
// a tool that returns images, audio or resources says so this way, and
// its blocks are sent as MCP content.
func contentBlocks(r json.RawMessage) ([]mcp.Content, bool) {
	if len(r) == 0 || r[0] != '{' || !bytes.Contains(r, []byte(`"`+contentKey+`"`)) {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(r, &m) != nil || len(m) != 1 {
		return nil, false
	}
	blocks, ok := m[contentKey]
	if !ok {
		return nil, false
	}
	// The SDK decodes content only as part of a result.
	var res mcp.CallToolResult
	if json.Unmarshal([]byte(`{"content":`+string(blocks)+`}`), &res) != nil {
		return nil, false
	}
	return res.Content, true
}

// objectArgs decodes tools/call arguments, which must be an object.
func objectArgs(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	if raw[0] != '{' {
		return nil, errors.New("not an object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// rpcError maps a failure outside any tool call (listing, lookup) to a
// JSON-RPC error.
func rpcError(err error) error {
	e := switchboard.AsError(err)
	code := int64(jsonrpc.CodeInternalError)
	if e.Code == switchboard.CodeInvalidInput || e.Code == switchboard.CodeConflict {
		code = jsonrpc.CodeInvalidParams
	}
	msg := string(e.Code) + ": " + e.Message
	if e.Code == switchboard.CodeInternal && !errors.As(err, new(*switchboard.Error)) {
		msg = "INTERNAL: internal error; see the daemon log"
	}
	return &jsonrpc.Error{Code: code, Message: msg}
}

// progress relays a call's progress to the client's progress token,
// keeping the values strictly increasing as MCP requires even when the
// tool's own reports and the waiting notes interleave.
type progress struct {
	ss    *mcp.ServerSession
	token any
	// reqCtx is the request's context (without its cancellation): the SDK
	// finds the request's own response stream through it. A notification
	// sent with an unrelated context goes to the standalone stream, which a
	// client need not have open, so the tool's reports were sometimes lost.
	reqCtx context.Context

	mu       sync.Mutex
	last     float64
	sent     bool
	reported bool // the tool reported progress itself
	done     bool
}

func (p *progress) report(r switchboard.Progress) {
	p.mu.Lock()
	p.reported = true
	p.mu.Unlock()
	p.send(p.reqCtx, r)
}

// note sends a message without claiming any progress.
func (p *progress) note(ctx context.Context, msg string) {
	p.mu.Lock()
	v := p.last
	p.mu.Unlock()
	p.send(ctx, switchboard.Progress{Progress: v, Message: msg})
}

func (p *progress) send(ctx context.Context, r switchboard.Progress) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	if p.sent && r.Progress <= p.last {
		r.Progress = math.Nextafter(p.last, math.Inf(1))
	}
	p.last, p.sent = r.Progress, true
	p.mu.Unlock()
	// Sent outside the lock: a slow client must not stall the tool.
	_ = p.ss.NotifyProgress(context.WithoutCancel(ctx), &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: r.Progress, Total: r.Total, Message: r.Message,
	})
}

// heartbeat notes every interval that the call is still waiting, until the
// tool reports progress itself or the call ends.
func (p *progress) heartbeat(ctx context.Context, every time.Duration, t switchboard.Tool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			p.mu.Lock()
			quiet := !p.reported
			p.mu.Unlock()
			if !quiet {
				continue
			}
			what := "still running"
			if t.Surface == switchboard.SurfaceBrowser {
				what = "waiting for the browser tab to answer"
			} else if t.Approval != "" && t.Approval != switchboard.ApprovalNone {
				what = "waiting (approval may be pending)"
			}
			p.note(ctx, fmt.Sprintf("%s: %s (%s)", t.Name, what, time.Since(start).Round(time.Second)))
		}
	}()
	return cancel
}

func (p *progress) finish() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}
