package mcpserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/task"
)

// metaTask, set by an agent on a tools/call, declares the call made for a
// delegated task assigned to it (docs/tasks.md): the MCP form of the HTTP
// API's Switchboard-Task header. The task service resolves it, as it
// does the header; this file only translates.
const metaTask = "switchboard/task"

// taskCall is a tools/call admitted for a delegated task: the task
// service's Call, and the invocation the call made once it has one.
type taskCall struct {
	call *task.Call
	mu   sync.Mutex
	inv  switchboard.Invocation
}

// saw notes the invocation a call made (nil-safe: most calls are for no
// task).
func (tc *taskCall) saw(inv switchboard.Invocation) {
	if tc == nil || inv.ID == "" {
		return
	}
	tc.mu.Lock()
	tc.inv = inv
	tc.mu.Unlock()
}

// forTask admits a call whose _meta names a delegated task: the caller
// becomes the principal the task service gives it (the agent with the
// task's envelope, which the registry and the broker check), and the call
// is counted against the task's budget. It is done once, before the call
// branches (meta tools, approval rounds, MCP tasks), so every branch runs
// under the same principal and none can skip the envelope. A 2026-07-28
// retry round is not a new call: its first round was admitted.
func (s *Server) forTask(ctx context.Context, c caller, req *mcp.CallToolRequest) (caller, context.Context, error) {
	raw, ok := req.Params.Meta[metaTask]
	if !ok || (statelessCall(req) && req.Params.RequestState != "") {
		return c, ctx, nil
	}
	id, _ := raw.(string)
	if id == "" {
		return c, ctx, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("_meta %q must be a task id (a string)", metaTask)}
	}
	if s.opts.Tasks == nil || !c.ok {
		return c, ctx, switchboard.Errorf(switchboard.CodeNotFound, "no task %q", id)
	}
	p, call, err := s.opts.Tasks.Enter(ctx, c.p, id)
	if err != nil {
		return c, ctx, err
	}
	c.p, c.task = p, &taskCall{call: call}
	return c, switchboard.WithPrincipal(ctx, p), nil
}

// endTask records the call's end as the task's step once its invocation
// is final: at once for a call that ended (or made none, which gives its
// count back), else when the broker records its end (an MCP task, a call
// awaiting approval across rounds).
func (s *Server) endTask(tc *taskCall) {
	if tc == nil {
		return
	}
	tc.mu.Lock()
	inv := tc.inv
	tc.mu.Unlock()
	if inv.ID == "" || inv.Status.Terminal() {
		tc.call.Done(inv)
		return
	}
	go func() {
		end, err := s.br.Await(s.life, inv.ID, broker.Terminal)
		if err != nil || end.ID == "" {
			end = inv
		}
		tc.call.Done(end)
	}()
}
