package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/sse"
)

// RunRequest starts a run of the built-in assistant (POST /runs).
type RunRequest struct {
	// ThreadID is the chat session; empty starts a new chat.
	ThreadID string `json:"threadId,omitempty"`
	// SessionID is the browser session the run acts in.
	SessionID string `json:"sessionId,omitempty"`
	// Input is the user's message; the daemon keeps the chat's history.
	Input string `json:"input,omitempty"`
	// Messages replaces the kept history (the caller owns the history).
	Messages []agui.Message `json:"messages,omitempty"`
	Model    string         `json:"model,omitempty"`
	MaxSteps int            `json:"maxSteps,omitempty"`
}

// StartRun starts a run; its events stream from RunEvents.
func (c *Client) StartRun(ctx context.Context, req RunRequest) (switchboard.RunInfo, error) {
	var info switchboard.RunInfo
	err := c.Do(ctx, http.MethodPost, "/api/v1/runs", req, &info)
	return info, err
}

// GetRun returns a run's record.
func (c *Client) GetRun(ctx context.Context, id string) (switchboard.RunInfo, error) {
	var info switchboard.RunInfo
	err := c.Do(ctx, http.MethodGet, "/api/v1/runs/"+pathEscape(id), nil, &info)
	return info, err
}

// CancelRun cancels a run and returns its record.
func (c *Client) CancelRun(ctx context.Context, id string) (switchboard.RunInfo, error) {
	var info switchboard.RunInfo
	err := c.Do(ctx, http.MethodPost, "/api/v1/runs/"+pathEscape(id)+"/cancel", nil, &info)
	return info, err
}

// RunEvents streams a run's AG-UI events to fn, from the start or after
// lastEventID, until the run ends (nil), fn fails (its error) or ctx ends.
func (c *Client) RunEvents(ctx context.Context, id, lastEventID string, fn func(eventID string, ev agui.Event) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/runs/"+pathEscape(id)+"/events", nil)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "build request: %v", err)
	}
	req.Header.Set("Accept", sse.ContentType)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var env switchboard.ErrorEnvelope
		if json.Unmarshal(b, &env) == nil && env.Error != nil {
			return env.Error
		}
		return switchboard.Errorf(switchboard.CodeInternal, "daemon answered %s: %s", resp.Status, excerpt(b))
	}
	err = func() error {
		sr := sse.NewReader(resp.Body)
		for {
			frame, err := sr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			ev, err := agui.Decode(frame.Data)
			if err != nil {
				return switchboard.Errorf(switchboard.CodeInternal, "run %s: %v", id, err)
			}
			if err := fn(frame.ID, ev); err != nil {
				return err
			}
		}
	}()
	if err != nil && ctx.Err() != nil {
		return c.transportError(ctx.Err())
	}
	return err
}

// AgentCapabilities returns the runtime binding of a chat session.
func (c *Client) AgentCapabilities(ctx context.Context, chatSessionID string) (switchboard.Harness, error) {
	var h switchboard.Harness
	err := c.Do(ctx, http.MethodGet, "/api/v1/agent/capabilities?session="+url.QueryEscape(chatSessionID), nil, &h)
	return h, err
}

// FollowUp sends a message while the chat may be busy (see switchboard.FollowUp
// for the idempotency rules).
func (c *Client) FollowUp(ctx context.Context, chatSessionID string, f switchboard.FollowUp) (switchboard.FollowUpResult, error) {
	var res switchboard.FollowUpResult
	err := c.Do(ctx, http.MethodPost, "/api/v1/agent/chat/"+pathEscape(chatSessionID)+"/followup", f, &res)
	return res, err
}

// ChatMessages returns a chat session's saved history.
func (c *Client) ChatMessages(ctx context.Context, chatSessionID string) (switchboard.ChatHistory, error) {
	var h switchboard.ChatHistory
	err := c.Do(ctx, http.MethodGet, "/api/v1/agent/chat/"+pathEscape(chatSessionID)+"/messages", nil, &h)
	return h, err
}

// PutChatMessages replaces a chat session's history (a JSON array).
func (c *Client) PutChatMessages(ctx context.Context, chatSessionID string, messages json.RawMessage) (switchboard.ChatHistory, error) {
	var h switchboard.ChatHistory
	err := c.Do(ctx, http.MethodPut, "/api/v1/agent/chat/"+pathEscape(chatSessionID)+"/messages", messages, &h)
	return h, err
}
