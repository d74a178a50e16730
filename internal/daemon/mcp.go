package daemon

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/session"
)

// newMCP builds the MCP server mounted at /mcp.
func (d *Daemon) newMCP(ctx context.Context, opts Options) (*mcpserver.Server, error) {
	o := opts.MCP
	o.Logger = d.log
	o.Auth = d.auth
	o.Resource = d.resource
	if o.Agents == nil {
		o.Agents = d.Agents
	}
	// Live tabs' browser tools are listed beside the catalog, and a tab
	// advertising or going away sends list_changed.
	if o.Live == nil {
		o.Live = d.Sessions
	}
	// An external agent's waiting call may ask its client's human
	// (elicitation); the answer is decided like any other channel's.
	if o.Approvals == nil && d.Approvals != nil {
		o.Approvals = d.Approvals
	}
	// The approval rounds of 2026-07-28 clients carry a requestState that
	// any replica must verify: every replica of one deployment shares the
	// admin token (docs/deploy.md), so the key is derived from it.
	if len(o.StateKey) == 0 && opts.AdminToken != "" {
		o.StateKey = mcpserver.StateKey(opts.AdminToken)
	}
	if o.Digest == nil && d.Workspace != nil {
		o.Digest = d.Workspace
	}
	// Panels are MCP Apps views for hosts that render them.
	if o.Panels == nil && d.Panels != nil {
		o.Panels = mcpPanels{d.Panels}
	}
	// A job tool's call run as an MCP task follows its job; a task stays
	// readable as long as its invocation record is kept.
	if o.Jobs == nil && d.Jobs != nil {
		o.Jobs = d.Jobs
	}
	// An agent's call may be made for a task assigned to it (_meta
	// "switchboard/task"), admitted as the HTTP API's are.
	if o.Tasks == nil {
		o.Tasks = d.Tasks
	}
	if o.TaskTTL == 0 {
		o.TaskTTL = opts.Retention.withDefaults().Invocations
	}
	return mcpserver.New(ctx, d.Registry, d.Broker, &o)
}

// mcpPanels is the panel service as mcpserver's MCP Apps views read it.
type mcpPanels struct{ s *panel.Service }

// PanelViews lists the instances open in every connected tab that the
// caller may see (panel.list's rule).
func (p mcpPanels) PanelViews(ctx context.Context) ([]mcpserver.PanelView, error) {
	res, err := p.s.List(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]mcpserver.PanelView, 0, len(res.Instances))
	for _, in := range res.Instances {
		out = append(out, mcpserver.PanelView{ID: in.InstanceID, Title: in.Title, Origin: in.Origin})
	}
	return out, nil
}

// PanelSnapshot is one instance as the caller may see it, without its
// previews' URLs: a view declares no frame origin, so it shows none.
func (p mcpPanels) PanelSnapshot(ctx context.Context, id string) (json.RawMessage, error) {
	sn, err := p.s.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	sn.Previews = nil
	return json.Marshal(sn)
}

// newAuth builds the one authenticator every transport gets: the admin
// token, agent tokens (when the store keeps governance) and browser
// session tokens.
func (d *Daemon) newAuth(opts Options) (*authn.Authenticator, error) {
	ao := authn.Options{AdminToken: opts.AdminToken, Sessions: d.Sessions}
	if d.Tokens != nil {
		ao.Agents = d.Tokens
	}
	if d.oauth != nil {
		ao.OAuth = d.oauth
	}
	if d.consoleUsers != nil {
		ao.Users, ao.UsersAudience = d.consoleUsers, d.authServer.APIResource()
	}
	return authn.New(ao)
}

var (
	_ mcpserver.Live   = (*session.Manager)(nil)
	_ mcpserver.Panels = mcpPanels{}
)
