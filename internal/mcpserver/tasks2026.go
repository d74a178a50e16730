package mcpserver

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// The Tasks extension of the 2026-07-28 revision (SEP-2663) over the same
// tasks as tasks.go: a call of a task tool by a client that declares the
// extension on its request answers resultType "task"; tasks/get returns
// the task with its result (or the approval it waits for, as
// inputRequests), tasks/update answers that approval, tasks/cancel asks
// for the cancel. Both revisions read the same records, so one task can be
// followed from either.

// TasksExtension is the Tasks extension's id in capabilities.extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// withTasksExtension advertises the extension in a server/discover
// answer: only there, since only 2026-07-28 clients can use it (a
// 2025-11-25 client sees capabilities.tasks instead, tasks.go).
func withTasksExtension(res mcp.Result) mcp.Result {
	r, ok := res.(*mcp.DiscoverResult)
	if !ok || r.Capabilities == nil {
		return res
	}
	caps := *r.Capabilities
	caps.Extensions = maps.Clone(caps.Extensions)
	caps.AddExtension(TasksExtension, nil)
	cp := *r
	cp.Capabilities = &caps
	return &cp
}

// declaresTasks reports whether a 2026-07-28 request's client declared
// the extension on it (the only place it can).
func declaresTasks(req interface {
	ClientCapabilities() *mcp.ClientCapabilities
}) bool {
	caps := req.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[TasksExtension]
	return ok
}

// detailedTask is the extension's Task with what its status carries.
type detailedTask struct {
	TaskID        string              `json:"taskId"`
	Status        string              `json:"status"`
	StatusMessage string              `json:"statusMessage,omitempty"`
	CreatedAt     string              `json:"createdAt"`
	LastUpdatedAt string              `json:"lastUpdatedAt"`
	TTLSeconds    *int64              `json:"ttlSeconds"`
	PollInterval  int64               `json:"pollIntervalMilliseconds,omitempty"`
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitzero"` // {} when nothing can be asked
	Result        *mcp.CallToolResult `json:"result,omitempty"`
}

type taskResult2026 struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	detailedTask
}

// ack is the empty answer of tasks/update and tasks/cancel.
type ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// detailed renders a task for the extension. Unlike 2025-11-25, a call
// that ended with a tool error is completed (its result has isError):
// failed is for JSON-RPC errors, which a recorded call never ends with.
func (s *Server) detailed(ctx context.Context, c caller, ss *mcp.ServerSession, tk mcpTaskState, withResult bool) detailedTask {
	w := s.wire(tk)
	d := detailedTask{TaskID: w.TaskID, Status: w.Status, StatusMessage: w.StatusMessage, CreatedAt: w.CreatedAt,
		LastUpdatedAt: w.LastUpdatedAt, PollInterval: w.PollInterval}
	if w.TTL != nil {
		sec := *w.TTL / 1000
		d.TTLSeconds = &sec
	}
	switch d.Status {
	case taskFailed:
		d.Status = taskCompleted
		fallthrough
	case taskCompleted:
		if withResult {
			d.Result = s.rendered(tk)
		}
	case taskInputRequired:
		d.InputRequests = mcp.InputRequestMap{}
		if mode := s.roundMode(c, ss); mode != "" {
			if a, err := s.approvalOf(ctx, tk.inv.ID, tk.inv.ApprovalID); err == nil {
				params := &mcp.ElicitParams{Mode: mode, Message: elicitMessage(a, mode)}
				if mode == "url" {
					params.URL, params.ElicitationID = s.opts.ConsoleURL, a.ID
				} else {
					params.RequestedSchema = approveSchema
				}
				d.InputRequests[inputKey+"/"+a.ID] = params // one key per approval, never reused
			}
		}
	}
	return d
}

// createdTask2026 answers a call of a task tool with resultType "task".
func (s *Server) createdTask2026(ctx context.Context, c caller, ss *mcp.ServerSession, id string) (mcp.Result, error) {
	tk, err := s.task(ctx, c, id)
	if err != nil {
		return nil, err
	}
	d := s.detailed(ctx, c, ss, tk, false)
	d.Result, d.InputRequests = nil, nil // a CreateTaskResult carries neither
	return &taskResult2026{ResultType: "task", detailedTask: d}, nil
}

// tasks2026 answers the extension's methods.
func (s *Server) tasks2026(ctx context.Context, c caller, method string, req *mcp.ServerRequest[*taskParams]) (mcp.Result, error) {
	p := req.Params
	switch method {
	case methodTasksGet:
		tk, err := s.task(ctx, c, p.TaskID)
		if err != nil {
			return nil, err
		}
		return &taskResult2026{ResultType: "complete", detailedTask: s.detailed(ctx, c, req.Session, tk, true)}, nil
	case methodTasksUpdate:
		// Acknowledged whatever the id (the extension says so); an answer
		// to the approval a task waits on is recorded as a round's is.
		if tk, err := s.task(ctx, c, p.TaskID); err == nil && s.opts.Approvals != nil && tk.inv.Status == switchboard.StatusAwaitingApproval {
			if raw, ok := p.InputResponses[inputKey+"/"+tk.inv.ApprovalID]; ok {
				var r mcp.ElicitResult
				if json.Unmarshal(raw, &r) == nil {
					s.answered(ctx, c, requestState{Invocation: tk.inv.ID, Approval: tk.inv.ApprovalID, Mode: s.roundMode(c, req.Session)}, &r)
				}
			}
		}
		return &ack{ResultType: "complete"}, nil
	case methodTasksCancel:
		// Acknowledged whatever the id; the cancel is the same as
		// 2025-11-25's, and a task that ended or runs elsewhere keeps
		// its state.
		if tk, err := s.task(ctx, c, p.TaskID); err == nil && !tk.terminal() {
			if _, err := s.cancelTask(ctx, c, tk); err != nil {
				s.log.InfoContext(ctx, "tasks/cancel not carried out", "task", p.TaskID, "err", err)
			}
		}
		return &ack{ResultType: "complete"}, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method + " is not part of the 2026-07-28 Tasks extension"}
}
