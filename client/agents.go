package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/switchboardhq/switchboard"
)

// AgentQuery selects agent sessions; the zero value lists every session
// the caller may see, finished ones included, newest first.
type AgentQuery struct {
	// Kind is chat, voice, background or external.
	Kind string
	// Status is idle, running, waiting_approval, done or cancelled.
	Status string
	// Session is a browser tab: only the agents bound to it.
	Session string
	// Active leaves out finished sessions.
	Active bool
}

// Agents lists the agent sessions the caller may see (GET /agents).
func (c *Client) Agents(ctx context.Context, q AgentQuery) ([]switchboard.AgentSession, error) {
	v := url.Values{}
	set(v, "kind", q.Kind)
	set(v, "status", q.Status)
	set(v, "session", q.Session)
	if q.Active {
		v.Set("active", "true")
	}
	// The daemon answers a page at a time; follow its cursors.
	all := []switchboard.AgentSession{}
	for {
		var out struct {
			Items      []switchboard.AgentSession `json:"items"`
			NextCursor string                     `json:"nextCursor"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/v1/agents"+query(v), nil, &out); err != nil {
			return all, err
		}
		all = append(all, out.Items...)
		if out.NextCursor == "" {
			return all, nil
		}
		v.Set("cursor", out.NextCursor)
	}
}

// Agent returns one agent session; AGENT_NOT_FOUND when there is none the
// caller may see.
func (c *Client) Agent(ctx context.Context, id string) (switchboard.AgentSession, error) {
	var a switchboard.AgentSession
	err := c.Do(ctx, http.MethodGet, "/api/v1/agents/"+pathEscape(id), nil, &a)
	return a, err
}

// InterruptAgent stops an agent's work and returns its session, cancelled;
// CONFLICT when it had already ended.
func (c *Client) InterruptAgent(ctx context.Context, id string) (switchboard.AgentSession, error) {
	var a switchboard.AgentSession
	err := c.Do(ctx, http.MethodPost, "/api/v1/agents/"+pathEscape(id)+"/interrupt", struct{}{}, &a)
	return a, err
}

// AgentSpec registers an agent a host runs itself (POST /agents).
type AgentSpec struct {
	Kind      switchboard.AgentKind   `json:"kind"`
	Label     string                  `json:"label"`
	Task      string                  `json:"task,omitempty"`
	Status    switchboard.AgentStatus `json:"status,omitempty"`
	SessionID string                  `json:"sessionId,omitempty"`
}

// RegisterAgent records an agent session the host runs; it must send
// HeartbeatAgent every HeartbeatIntervalMs or it ends.
func (c *Client) RegisterAgent(ctx context.Context, spec AgentSpec) (switchboard.AgentRegistration, error) {
	var r switchboard.AgentRegistration
	err := c.Do(ctx, http.MethodPost, "/api/v1/agents", spec, &r)
	return r, err
}

// HeartbeatAgent keeps a registered agent session alive.
func (c *Client) HeartbeatAgent(ctx context.Context, id string) (switchboard.AgentRegistration, error) {
	var r switchboard.AgentRegistration
	err := c.Do(ctx, http.MethodPost, "/api/v1/agents/"+pathEscape(id)+"/heartbeat", struct{}{}, &r)
	return r, err
}
