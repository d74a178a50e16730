package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/switchboardhq/switchboard"
)

// ListOptions filters ListTools.
type ListOptions struct {
	Surface   switchboard.Surface
	SessionID string // adds that session's live browser tools
}

// ListTools returns the manifest of visible tools.
func (c *Client) ListTools(ctx context.Context, o ListOptions) (switchboard.Manifest, error) {
	q := url.Values{}
	if o.Surface != "" {
		q.Set("surface", string(o.Surface))
	}
	if o.SessionID != "" {
		q.Set("session", o.SessionID)
	}
	path := "/api/v1/tools"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var m switchboard.Manifest
	err := c.Do(ctx, http.MethodGet, path, nil, &m)
	return m, err
}

// RegisterTools registers or replaces tools (source "" means host) and
// returns their effective descriptors.
func (c *Client) RegisterTools(ctx context.Context, source switchboard.Source, tools []switchboard.Tool) ([]switchboard.Tool, error) {
	path := "/api/v1/tools"
	if source != "" {
		path += "?source=" + url.QueryEscape(string(source))
	}
	var m switchboard.Manifest
	err := c.Do(ctx, http.MethodPost, path, tools, &m)
	return m.Tools, err
}

// RegisterManifest registers a manifest's tools, data adapters and host
// panels together, all or nothing, and returns the tools as registered.
func (c *Client) RegisterManifest(ctx context.Context, source switchboard.Source, m switchboard.Manifest) ([]switchboard.Tool, error) {
	path := "/api/v1/tools"
	if source != "" {
		path += "?source=" + url.QueryEscape(string(source))
	}
	if m.ProtocolVersion == "" {
		m.ProtocolVersion = switchboard.ProtocolVersion
	}
	var out switchboard.Manifest
	err := c.Do(ctx, http.MethodPost, path, m, &out)
	return out.Tools, err
}

// GetTool returns one full descriptor.
func (c *Client) GetTool(ctx context.Context, name string) (switchboard.Tool, error) {
	var t switchboard.Tool
	err := c.Do(ctx, http.MethodGet, "/api/v1/tools/"+pathEscape(name), nil, &t)
	return t, err
}

// DeleteTool unregisters the effective declaration of name.
func (c *Client) DeleteTool(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/tools/"+pathEscape(name), nil, nil)
}

// SearchTools runs one page of a catalog search.
func (c *Client) SearchTools(ctx context.Context, q switchboard.SearchQuery) (switchboard.SearchResult, error) {
	var res switchboard.SearchResult
	err := c.Do(ctx, http.MethodPost, "/api/v1/tools/search", q, &res)
	return res, err
}

// ToolLearned returns the queries the tool called name learned from use
// (GET /tools/{name}/learned), most recently used first.
func (c *Client) ToolLearned(ctx context.Context, name string) (switchboard.ToolLearned, error) {
	var l switchboard.ToolLearned
	err := c.Do(ctx, http.MethodGet, "/api/v1/tools/"+pathEscape(name)+"/learned", nil, &l)
	return l, err
}

// ForgetToolLearned deletes what the tool called name learned and returns
// how many examples went.
func (c *Client) ForgetToolLearned(ctx context.Context, name string) (int, error) {
	var out struct {
		Forgotten int `json:"forgotten"`
	}
	err := c.Do(ctx, http.MethodDelete, "/api/v1/tools/"+pathEscape(name)+"/learned", nil, &out)
	return out.Forgotten, err
}
