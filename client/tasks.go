package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// TaskRequest is POST /api/v1/tasks: a goal for the built-in assistant
// (or, with Assignee "agent:<name>", an agent acting for the same user),
// the projects it spans and its permission envelope.
type TaskRequest struct {
	Goal     string                   `json:"goal"`
	Assignee string                   `json:"assignee,omitempty"`
	Projects []string                 `json:"projects,omitempty"`
	Envelope switchboard.TaskEnvelope `json:"envelope"`
}

// CreateTask delegates a task; the answer's Narrowed says how its envelope
// was narrowed to the caller's rights.
func (c *Client) CreateTask(ctx context.Context, req TaskRequest) (switchboard.Task, error) {
	var t switchboard.Task
	err := c.Do(ctx, http.MethodPost, "/api/v1/tasks", req, &t)
	return t, err
}

// Tasks lists the caller's tasks (the admin's: all), newest first, in the
// given statuses (none: all).
func (c *Client) Tasks(ctx context.Context, limit int, status ...switchboard.TaskStatus) ([]switchboard.Task, error) {
	return c.tasks(ctx, url.Values{}, limit, status)
}

func (c *Client) tasks(ctx context.Context, v url.Values, limit int, status []switchboard.TaskStatus) ([]switchboard.Task, error) {
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if len(status) > 0 {
		s := make([]string, len(status))
		for i, st := range status {
			s[i] = string(st)
		}
		v.Set("status", strings.Join(s, ","))
	}
	var out struct {
		Items []switchboard.Task `json:"items"`
	}
	err := c.Do(ctx, http.MethodGet, "/api/v1/tasks"+query(v), nil, &out)
	return out.Items, err
}

// AssignedTasks lists the tasks assigned to the calling agent
// (GET /api/v1/tasks?assignee=me), newest first.
func (c *Client) AssignedTasks(ctx context.Context, limit int, status ...switchboard.TaskStatus) ([]switchboard.Task, error) {
	return c.tasks(ctx, url.Values{"assignee": {"me"}}, limit, status)
}

// CompleteTask ends a task assigned to the calling agent with its result
// (a string, or any JSON value).
func (c *Client) CompleteTask(ctx context.Context, id string, result any) (switchboard.Task, error) {
	var t switchboard.Task
	err := c.Do(ctx, http.MethodPost, "/api/v1/tasks/"+pathEscape(id)+"/complete", map[string]any{"result": result}, &t)
	return t, err
}

// FailTask ends a task assigned to the calling agent failed, with why
// (code "" is UPSTREAM_ERROR).
func (c *Client) FailTask(ctx context.Context, id string, code switchboard.Code, message string) (switchboard.Task, error) {
	var t switchboard.Task
	body := map[string]any{"error": map[string]any{"code": code, "message": message}}
	if code == "" {
		body["error"] = message
	}
	err := c.Do(ctx, http.MethodPost, "/api/v1/tasks/"+pathEscape(id)+"/fail", body, &t)
	return t, err
}

// Task returns one task.
func (c *Client) Task(ctx context.Context, id string) (switchboard.Task, error) {
	var t switchboard.Task
	err := c.Do(ctx, http.MethodGet, "/api/v1/tasks/"+pathEscape(id), nil, &t)
	return t, err
}

// CancelTask stops a task.
func (c *Client) CancelTask(ctx context.Context, id string) (switchboard.Task, error) {
	var t switchboard.Task
	err := c.Do(ctx, http.MethodPost, "/api/v1/tasks/"+pathEscape(id)+"/cancel", struct{}{}, &t)
	return t, err
}

// ResumeTask starts a stopped task again from its completed steps.
func (c *Client) ResumeTask(ctx context.Context, id string) (switchboard.Task, error) {
	var t switchboard.Task
	err := c.Do(ctx, http.MethodPost, "/api/v1/tasks/"+pathEscape(id)+"/resume", struct{}{}, &t)
	return t, err
}
