package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Calls as MCP tasks (the 2025-11-25 revision's experimental tasks). A
// task is a broker call and nothing else: its id is the invocation's id,
// its state is read from the invocation record (and, for a job tool, from
// the job the call started), so any replica answers tasks/get from the
// store and nothing about a task lives only in this process but the
// handle that cancels a call running here. Who may see a task is
// workspace.SeesRecord, the rule of GET /invocations/{id}.
//
// A tool runs as a task when it may outlive its request: a job tool, or a
// tool that waits for a person's approval (taskCapable). Any call of such
// a tool by the caller is one of its tasks, whichever transport made it,
// which is what tasks/list shows.

const (
	// metaRelatedTask ties a tasks/result answer to its task.
	metaRelatedTask = "io.modelcontextprotocol/related-task"
	// taskHeader carries a tools/call's params.task from the HTTP layer,
	// which reads the message, to callTool: the SDK decodes tools/call
	// params into a type without that field. Set only by ServeHTTP.
	taskHeader = "Switchboard-Mcp-Task"
	// TaskPollInterval is the polling interval /mcp suggests for tasks.
	TaskPollInterval = time.Second
	// taskPage is how many tasks one tasks/list answer holds, and
	// taskWindow how many of the caller's newest calls tasks/list reads.
	taskPage   = 50
	taskWindow = 1000
	// jobPoll spaces the store reads of a tasks/result waiting on a job
	// that runs on another replica (one running here wakes it at once).
	jobPoll = time.Second
)

// Jobs is the job service as tasks read it (the daemon's *job.Service).
type Jobs interface {
	Get(ctx context.Context, id string) (switchboard.Job, error)
	Cancel(ctx context.Context, id string) (switchboard.Job, error)
	Wait(ctx context.Context, id string) (switchboard.Job, error)
}

// Task methods; the SDK knows none of them, so they are registered as
// custom methods and answered by the middleware.
const (
	methodTasksGet    = "tasks/get"
	methodTasksList   = "tasks/list"
	methodTasksResult = "tasks/result"
	methodTasksCancel = "tasks/cancel"
	methodTasksUpdate = "tasks/update" // 2026-07-28 only
)

// taskParams are the params of tasks/get, tasks/result and tasks/cancel
// (taskId) and of tasks/list (cursor).
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	// 2026-07-28 (tasks2026.go): tasks/update's answers, and the
	// requestState every request may echo (unused: a task's state is in
	// the store).
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string                     `json:"requestState,omitempty"`
}

// wireTask is MCP's Task.
type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is how long after creation the record is kept, in ms; null:
	// forever.
	TTL          *int64 `json:"ttl"`
	PollInterval int64  `json:"pollInterval,omitempty"`
}

type createTaskResult struct {
	mcp.ResultBase
	Task wireTask `json:"task"`
}

type taskResult struct {
	mcp.ResultBase
	wireTask
}

type taskListResult struct {
	mcp.ResultBase
	Tasks      []wireTask `json:"tasks"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

func addTaskMethods(srv *mcp.Server) {
	unhandled := func(context.Context, *mcp.ServerSession, *taskParams) (*taskResult, error) {
		return nil, errors.New("tasks are answered by switchboard's middleware")
	}
	for _, m := range []string{methodTasksGet, methodTasksList, methodTasksResult, methodTasksCancel, methodTasksUpdate} {
		_ = mcp.AddReceivingCustomMethod(srv, m, unhandled) // none shadows a standard method
	}
}

// tasksCapability is the server capability of the 2025-11-25 revision.
var tasksCapability = map[string]any{
	"list": map[string]any{}, "cancel": map[string]any{},
	"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
}

// taskCapable reports whether calls of t run as tasks: a job, or a call
// that may wait for a person.
func taskCapable(t switchboard.Tool) bool {
	return t.Class == switchboard.ClassJob || (t.Approval != "" && t.Approval != switchboard.ApprovalNone)
}

// taskRequested reports whether a tools/call asked to run as a task.
func taskRequested(req *mcp.CallToolRequest) bool {
	return req.Extra != nil && req.Extra.Header.Get(taskHeader) != "" && !statelessCall(req)
}

// markTask tells callTool, through taskHeader, that a POSTed tools/call
// carries params.task. A client's own header of that name is dropped.
func markTask(r *http.Request, body []byte) {
	r.Header.Del(taskHeader)
	// Every /mcp message passes here: decode only one that can carry the
	// key (a key spelled with \u escapes decodes to "task" too).
	if !bytes.Contains(body, []byte(`"task"`)) && !bytes.Contains(body, []byte(`\u`)) {
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Task json.RawMessage `json:"task"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return
	}
	if t := msg.Params.Task; len(t) > 0 && string(t) != "null" {
		r.Header.Set(taskHeader, "1")
	}
}

// tasksRevision reports whether ss negotiated the revision whose tasks
// this file serves.
func tasksRevision(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion == sessionRevision
}

// startTask records a call of t as a task and answers with the task at
// once; the call runs on in the broker. A re-sent call with the client's
// idempotency key answers the first call's task: a task never runs twice.
func (s *Server) startTask(ctx context.Context, c caller, req *mcp.CallToolRequest, t switchboard.Tool, input json.RawMessage, sessionID string) (mcp.Result, error) {
	created := s.createdTask
	if statelessCall(req) {
		created = func(ctx context.Context, c caller, id string) (mcp.Result, error) {
			return s.createdTask2026(ctx, c, req.Session, id)
		}
	}
	if !taskCapable(t) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("%s does not run as a task (its execution.taskSupport is forbidden); call it without params.task", req.Params.Name)}
	}
	key, _ := req.Params.Meta[metaIdempotencyKey].(string)
	cr := broker.CallRequest{Tool: t.Name, Input: input, SessionID: sessionID, RunID: s.runOf(req.Session),
		IdempotencyKey: key, Caller: &c.p,
		// A task waiting for approval outlives a restart (the next start
		// or a survivor resumes it), as an approval round's call does.
		Durable: approval.ErrStopped}
	cr.AgentSession, _ = switchboard.AgentSessionFrom(ctx)
	// The call outlives this request; tasks/cancel ends it (cancels).
	tctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	inv, err := s.br.Submit(tctx, cr)
	c.task.saw(inv)
	if d, ok := conflictInFlight(err); ok {
		cancel(nil)
		return created(ctx, c, d)
	}
	if inv.ID == "" {
		cancel(nil)
		return nil, refusedTask(err)
	}
	if inv.Status.Terminal() {
		cancel(nil)
	} else {
		s.taskMu.Lock()
		s.running[inv.ID] = cancel
		s.taskMu.Unlock()
		go func() {
			actx, stop := context.WithCancel(tctx)
			defer context.AfterFunc(s.life, stop)()
			_, _ = s.br.Await(actx, inv.ID, broker.Terminal)
			stop()
			s.taskMu.Lock()
			delete(s.running, inv.ID)
			s.taskMu.Unlock()
			// Ended: release the context (a job's work has its own). At
			// Close the broker's Stop decides instead: a call waiting for
			// approval stays pending for the next start.
			if s.life.Err() == nil {
				cancel(nil)
			}
		}()
	}
	return created(ctx, c, inv.ID)
}

func (s *Server) createdTask(ctx context.Context, c caller, id string) (mcp.Result, error) {
	tk, err := s.task(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return &createTaskResult{Task: s.wire(tk)}, nil
}

// refusedTask is the answer to a task-augmented call refused before it was
// recorded: there is no task to report it through.
func refusedTask(err error) error {
	e := switchboard.AsError(err)
	code := int64(jsonrpc.CodeInternalError)
	switch e.Code {
	case switchboard.CodeInvalidInput, switchboard.CodeSchemaViolation, switchboard.CodeForbidden, switchboard.CodeToolNotFound,
		switchboard.CodeToolUnavailable, switchboard.CodeIdempotencyConflict, switchboard.CodeRateLimited, switchboard.CodeQuotaExceeded:
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: string(e.Code) + ": " + e.Message}
}

// mcpTaskState is what a task is made of: the call's record, its tool, and
// the job it started, if it is a job tool's.
type mcpTaskState struct {
	inv  switchboard.Invocation
	tool switchboard.Tool
	job  *switchboard.Job
}

// task reads task id as caller c may see it. An id that names no call, a
// call c may not see, or a call of a tool that does not run as a task is
// invalid params, all alike.
func (s *Server) task(ctx context.Context, c caller, id string) (mcpTaskState, error) {
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("NOT_FOUND: no task %q", id)}
	if id == "" || !c.ok {
		return mcpTaskState{}, notFound
	}
	inv, err := s.br.Get(ctx, id)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound || (err == nil && !workspace.SeesRecord(workspace.ViewerOf(c.p), inv.Caller, inv.User)) {
		return mcpTaskState{}, notFound
	}
	if err != nil {
		return mcpTaskState{}, rpcError(err)
	}
	tk, ok, err := s.taskOf(ctx, inv)
	if err != nil {
		return tk, rpcError(err)
	}
	if !ok {
		return tk, notFound
	}
	return tk, nil
}

// taskOf completes a record into a task; ok is false when its call is not
// a task.
func (s *Server) taskOf(ctx context.Context, inv switchboard.Invocation) (mcpTaskState, bool, error) {
	tk := mcpTaskState{inv: inv}
	t, err := s.reg.Get(ctx, inv.Tool)
	switch {
	case err == nil:
		tk.tool = t
	case switchboard.CodeOf(err) != switchboard.CodeToolNotFound && switchboard.CodeOf(err) != switchboard.CodeNotFound:
		return tk, false, err
	}
	jobID := jobOf(inv)
	if jobID != "" && s.opts.Jobs != nil {
		j, err := s.opts.Jobs.Get(ctx, jobID)
		if err != nil {
			return tk, false, err
		}
		tk.job = &j
	}
	// A tool deleted since keeps its calls' tasks when they started a job.
	return tk, taskCapable(tk.tool) || tk.job != nil, nil
}

// jobOf returns the job a job tool's succeeded call started.
func jobOf(inv switchboard.Invocation) string {
	if inv.Status != switchboard.StatusSucceeded || len(inv.Result) == 0 || inv.Result[0] != '{' {
		return ""
	}
	var h struct {
		JobID string `json:"jobId"`
	}
	_ = json.Unmarshal(inv.Result, &h)
	return h.JobID
}

// MCP task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

func (tk mcpTaskState) terminal() bool {
	if tk.job != nil {
		return tk.job.Status.Terminal()
	}
	return tk.inv.Status.Terminal()
}

// wire renders a task: the call's state until it starts a job, the job's
// after.
func (s *Server) wire(tk mcpTaskState) wireTask {
	w := wireTask{TaskID: tk.inv.ID, CreatedAt: rfc3339(tk.inv.CreatedAt), LastUpdatedAt: rfc3339(tk.inv.UpdatedAt),
		PollInterval: TaskPollInterval.Milliseconds()}
	if s.opts.TaskTTL > 0 {
		ms := s.opts.TaskTTL.Milliseconds()
		w.TTL = &ms
	}
	var e *switchboard.Error
	switch inv := tk.inv; {
	case tk.job != nil:
		j := tk.job
		w.LastUpdatedAt = rfc3339(j.UpdatedAt)
		switch j.Status {
		case switchboard.JobSucceeded:
			w.Status = taskCompleted
		case switchboard.JobCancelled:
			w.Status, e = taskCancelled, j.Error
		case switchboard.JobFailed:
			w.Status, e = taskFailed, j.Error
		default:
			w.Status, w.StatusMessage = taskWorking, j.Message
			if w.StatusMessage == "" {
				w.StatusMessage = fmt.Sprintf("job %s running (%.0f%%)", j.ID, j.Progress*100)
			}
		}
	case inv.Status == switchboard.StatusAwaitingApproval:
		w.Status = taskInputRequired
		w.StatusMessage = "waiting for a person to approve this call (approval " + inv.ApprovalID + ")"
		if s.opts.ConsoleURL != "" {
			w.StatusMessage += "; decide it at " + s.opts.ConsoleURL
		}
	case inv.Status == switchboard.StatusSucceeded:
		w.Status = taskCompleted
	case inv.Status == switchboard.StatusCancelled:
		w.Status, e = taskCancelled, inv.Error
	case inv.Status.Terminal():
		w.Status, e = taskFailed, inv.Error
	default:
		w.Status = taskWorking
	}
	if e != nil {
		w.StatusMessage = string(e.Code) + ": " + e.Message
	}
	return w
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// tasks answers the task methods for caller c.
func (s *Server) tasks(ctx context.Context, c caller, method string, req mcp.Request) (mcp.Result, error) {
	p, _ := req.GetParams().(*taskParams)
	if p == nil {
		p = &taskParams{}
	} else if r, ok := req.(*mcp.ServerRequest[*taskParams]); ok && r.ProtocolVersion() >= statelessRevision {
		return s.tasks2026(ctx, c, method, r)
	}
	if method == methodTasksUpdate {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "tasks/update is part of the 2026-07-28 Tasks extension"}
	}
	if method == methodTasksList {
		return s.listTasks(ctx, c, p.Cursor)
	}
	tk, err := s.task(ctx, c, p.TaskID)
	if err != nil {
		return nil, err
	}
	switch method {
	case methodTasksResult:
		return s.taskOutcome(ctx, c, tk)
	case methodTasksCancel:
		return s.cancelTask(ctx, c, tk)
	}
	return &taskResult{wireTask: s.wire(tk)}, nil
}

// listTasks pages through the tasks among the caller's newest calls,
// newest first; the cursor is the last task sent.
func (s *Server) listTasks(ctx context.Context, c caller, cursor string) (mcp.Result, error) {
	res := &taskListResult{Tasks: []wireTask{}}
	callerF, userF, ok := workspace.RecordFilter(workspace.ViewerOf(c.p))
	if !c.ok || !ok {
		return res, nil
	}
	invs, err := s.br.List(ctx, switchboard.InvocationFilter{Caller: callerF, User: userF, Limit: taskWindow})
	if err != nil {
		return nil, rpcError(err)
	}
	start := 0
	if cursor != "" {
		start = -1
		for i, inv := range invs {
			if inv.ID == cursor {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor; list again without one"}
		}
	}
	for _, inv := range invs[start:] {
		tk, ok, err := s.taskOf(ctx, inv)
		if err != nil {
			return nil, rpcError(err)
		}
		if !ok {
			continue
		}
		if len(res.Tasks) == taskPage {
			res.NextCursor = res.Tasks[taskPage-1].TaskID
			break
		}
		res.Tasks = append(res.Tasks, s.wire(tk))
	}
	return res, nil
}

// taskOutcome waits until the task ends and answers what its call would
// have answered.
func (s *Server) taskOutcome(ctx context.Context, c caller, tk mcpTaskState) (mcp.Result, error) {
	id := tk.inv.ID
	inv, err := s.br.Await(ctx, id, broker.Terminal)
	if err != nil {
		return nil, rpcError(err)
	}
	if tk, err = s.task(ctx, c, id); err != nil {
		return nil, err
	}
	tk.inv = inv
	if tk.job != nil {
		j, err := s.awaitJob(ctx, tk.job.ID)
		if err != nil {
			return nil, rpcError(err)
		}
		tk.job = &j
	}
	res := s.rendered(tk)
	res.Meta[metaRelatedTask] = map[string]string{"taskId": id}
	return res, nil
}

// rendered is what the call of an ended task answers: for a job, the
// job's result or error.
func (s *Server) rendered(tk mcpTaskState) *mcp.CallToolResult {
	var res *mcp.CallToolResult
	id := tk.inv.ID
	switch j := tk.job; {
	case j == nil && tk.inv.Status == switchboard.StatusSucceeded:
		res = s.result(tk.tool, tk.inv, nil)
	case j == nil && tk.inv.Error != nil:
		res = s.result(tk.tool, tk.inv, tk.inv.Error)
	case j == nil:
		res = errorResult(switchboard.Errorf(switchboard.CodeInternal, "invocation %s ended %s without an error", id, tk.inv.Status), &tk.inv)
	case j.Status == switchboard.JobSucceeded:
		res = s.result(tk.tool, switchboard.Invocation{ID: id, Result: j.Result}, nil)
		if len(tk.tool.OutputSchema) > 0 && len(j.Result) > 0 { // the job's result is the tool's declared output
			res.StructuredContent = j.Result
		}
	case j.Error != nil:
		st := switchboard.StatusFailed
		if j.Status == switchboard.JobCancelled {
			st = switchboard.StatusCancelled
		}
		res = errorResult(j.Error, &switchboard.Invocation{ID: id, Status: st})
	default:
		res = errorResult(switchboard.Errorf(switchboard.CodeInternal, "job %s ended %s without an error", j.ID, j.Status), &tk.inv)
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	return res
}

// awaitJob waits until job id ends, wherever it runs.
func (s *Server) awaitJob(ctx context.Context, id string) (switchboard.Job, error) {
	for {
		j, err := s.opts.Jobs.Wait(ctx, id) // returns at once unless the job runs here
		if err != nil || j.Status.Terminal() {
			return j, err
		}
		select {
		case <-ctx.Done():
			return j, context.Cause(ctx)
		case <-time.After(jobPoll):
		}
	}
}

// cancelTask ends a task: a job through the job service, a call still in
// flight through the context its broker call runs under, as a client
// cancelling its request would. The task is cancelled when this answers.
func (s *Server) cancelTask(ctx context.Context, c caller, tk mcpTaskState) (mcp.Result, error) {
	if tk.terminal() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("CONFLICT: task %s already ended %s", tk.inv.ID, s.wire(tk).Status)}
	}
	if tk.job == nil && tk.tool.Class == switchboard.ClassJob && tk.inv.Status != switchboard.StatusAwaitingApproval {
		// Starting its job (that takes no time): the job is what to
		// cancel. Cancelling the call now could leave the job it starts
		// running with no call to name it.
		inv, err := s.br.Await(ctx, tk.inv.ID, broker.Terminal)
		if err != nil {
			return nil, rpcError(err)
		}
		if tk, err = s.task(ctx, c, inv.ID); err != nil {
			return nil, err
		}
	}
	if tk.job == nil && !tk.inv.Status.Terminal() {
		s.taskMu.Lock()
		cancel := s.running[tk.inv.ID]
		s.taskMu.Unlock()
		if cancel == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("UNAVAILABLE: task %s is not running on this replica; cancel it on the replica that started it", tk.inv.ID)}
		}
		cancel(switchboard.Errorf(switchboard.CodeCancelled, "cancelled by %s through tasks/cancel", c.p))
		if _, err := s.br.Await(ctx, tk.inv.ID, broker.Terminal); err != nil {
			return nil, rpcError(err)
		}
		var err error
		if tk, err = s.task(ctx, c, tk.inv.ID); err != nil {
			return nil, err
		}
	}
	// A job tool's call may have started its job as it was cancelled (the
	// job's work has a context of its own): the job is cancelled too.
	if tk.job != nil && !tk.job.Status.Terminal() {
		if _, err := s.opts.Jobs.Cancel(switchboard.WithPrincipal(ctx, c.p), tk.job.ID); err != nil {
			if switchboard.CodeOf(err) == switchboard.CodeConflict {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "CONFLICT: " + switchboard.AsError(err).Message}
			}
			return nil, rpcError(err)
		}
		var err error
		if tk, err = s.task(ctx, c, tk.inv.ID); err != nil {
			return nil, err
		}
	}
	return &taskResult{wireTask: s.wire(tk)}, nil
}

// withTaskSupport marks, for a client of the tasks revision, the listed
// tools that run as tasks (execution.taskSupport "optional"); the SDK's
// Tool has no such field, so the page is re-typed. Other clients get res
// as it is.
func withTaskSupport(req *mcp.ListToolsRequest, res *mcp.ListToolsResult, tasks []string) mcp.Result {
	if len(tasks) == 0 || !tasksRevision(req.Session) {
		return res
	}
	optional := &toolExecution{TaskSupport: "optional"}
	out := &taskToolsResult{ResultBase: mcp.ResultBase{Meta: res.Meta}, NextCursor: res.NextCursor, Tools: make([]listedTool, len(res.Tools))}
	for i, t := range res.Tools {
		out.Tools[i].Tool = t
		if slices.Contains(tasks, t.Name) {
			out.Tools[i].Execution = optional
		}
	}
	return out
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

type listedTool struct {
	*mcp.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

type taskToolsResult struct {
	mcp.ResultBase
	Tools      []listedTool `json:"tools"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// initializeResult adds the tasks capability, which the SDK's
// ServerCapabilities has no field for, to a 2025-11-25 initialize answer.
type initializeResult struct{ *mcp.InitializeResult }

func (r initializeResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	var caps map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(m["capabilities"], &caps); err != nil || caps == nil {
		caps = map[string]any{}
	}
	caps["tasks"] = tasksCapability
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// withTasksCapability advertises tasks to a client that negotiated their
// revision.
func withTasksCapability(res mcp.Result) mcp.Result {
	if r, ok := res.(*mcp.InitializeResult); ok && r.ProtocolVersion == sessionRevision {
		return initializeResult{r}
	}
	return res
}
