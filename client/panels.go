package client

import (
	"context"
	"net/http"

	"github.com/switchboardhq/switchboard"
)

// DeclarePanels declares host panels (POST /api/v1/panels), all or
// nothing; an existing id is replaced.
func (c *Client) DeclarePanels(ctx context.Context, panels []switchboard.HostPanel) ([]switchboard.HostPanel, error) {
	var out struct{ Panels []switchboard.HostPanel }
	err := c.Do(ctx, http.MethodPost, "/api/v1/panels", panels, &out)
	return out.Panels, err
}

// Panels lists the host panels the daemon serves (GET /api/v1/panels).
func (c *Client) Panels(ctx context.Context) ([]switchboard.HostPanel, error) {
	var out struct{ Panels []switchboard.HostPanel }
	err := c.Do(ctx, http.MethodGet, "/api/v1/panels", nil, &out)
	return out.Panels, err
}

// DeletePanel removes a declared panel.
func (c *Client) DeletePanel(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/panels/"+pathEscape(id), nil, nil)
}

// DeclareAdapters declares data adapters served by the app's backend
// (POST /api/v1/adapters), all or nothing.
func (c *Client) DeclareAdapters(ctx context.Context, adapters []switchboard.HostAdapter) ([]switchboard.HostAdapter, error) {
	var out struct{ Adapters []switchboard.HostAdapter }
	err := c.Do(ctx, http.MethodPost, "/api/v1/adapters", adapters, &out)
	return out.Adapters, err
}

// DeleteAdapter removes a declared adapter and its data tools.
func (c *Client) DeleteAdapter(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/adapters/"+pathEscape(name), nil, nil)
}

// InvalidateAdapter tells the daemon adapter name's data changed: every
// open panel showing it reloads.
func (c *Client) InvalidateAdapter(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodPost, "/api/v1/adapters/"+pathEscape(name)+"/invalidate", nil, nil)
}
