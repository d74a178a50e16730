package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/switchboardhq/switchboard"
)

// CallOptions are the optional parts of a call.
type CallOptions struct {
	// SessionID picks the tab that runs a browser tool.
	SessionID string
	// RunID groups the call with others of one run.
	RunID string
}

// CallTool calls the tool named name with input (a JSON object; nil means
// {}). A call that failed after the daemon recorded it returns both the
// response (its invocation id, status and error) and the error; a call
// refused before that returns an empty response and the error.
func (c *Client) CallTool(ctx context.Context, name string, input json.RawMessage, o CallOptions) (switchboard.CallResponse, error) {
	body := struct {
		Input     json.RawMessage `json:"input"`
		SessionID string          `json:"sessionId,omitempty"`
		RunID     string          `json:"runId,omitempty"`
	}{input, o.SessionID, o.RunID}
	if len(body.Input) == 0 {
		body.Input = json.RawMessage(`{}`)
	}
	var resp switchboard.CallResponse
	err := c.Do(ctx, http.MethodPost, "/api/v1/tools/"+pathEscape(name)+"/call", body, &resp)
	return resp, err
}

// GetInvocation returns one invocation record.
func (c *Client) GetInvocation(ctx context.Context, id string) (switchboard.Invocation, error) {
	var inv switchboard.Invocation
	err := c.Do(ctx, http.MethodGet, "/api/v1/invocations/"+pathEscape(id), nil, &inv)
	return inv, err
}
