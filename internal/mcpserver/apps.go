package mcpserver

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/web"
)

// MCP Apps (the io.modelcontextprotocol/ui extension, stable 2026-01-26):
// an MCP Apps host (Claude, VS Code, Goose, ChatGPT, …) shows a server's
// ui:// resource in a sandboxed iframe when a tool linked to it is called.
// switchboard serves panels that way: the panel tools that show a panel
// link the view ui://switchboard/panel, which shows the instance their
// result names (the result links ui://switchboard/panels/<id>, each open
// instance's own resource). The view is the SDK's panel renderer inlined
// (web.ViewScript); it reads the instance with the app-only tool
// switchboard_panel_view and calls panel.fill and panel.run_action through
// the host, so approvals, leases and the canvas policy are the broker's and
// the panel service's, as for every caller. docs/mcp-apps.md has the rest.
const (
	// AppsExtension is the extension's id in capabilities.extensions.
	AppsExtension = "io.modelcontextprotocol/ui"
	// AppMIMEType is the MIME type of an MCP Apps view.
	AppMIMEType = "text/html;profile=mcp-app"
	// PanelViewURI is the view linked from the panel tools: it shows the
	// instance the tool's result names.
	PanelViewURI = "ui://switchboard/panel"
	// panelURIPrefix + an instance id is that instance's own view.
	panelURIPrefix = "ui://switchboard/panels/"
	// toolPanelView returns one instance's snapshot to a view.
	toolPanelView = "switchboard_panel_view"
	// metaView marks a tools/call a view made for its instance: the call
	// must stay inside the view's panel (viewTools, its own instance).
	metaView = "switchboard/view"
	// metaUIKey is the extension's _meta key on tools, results and resources.
	metaUIKey = "ui"
	// maxViewArgs bounds the arguments of one call from a view (a fill of
	// a whole form is a few kilobytes).
	maxViewArgs = 256 << 10
)

// Panels is the panel service as MCP Apps needs it (the daemon adapts
// *panel.Service): the open instances the caller in ctx may see, and one
// instance's snapshot, NOT_FOUND for one it may not see.
type Panels interface {
	PanelViews(ctx context.Context) ([]PanelView, error)
	PanelSnapshot(ctx context.Context, id string) (json.RawMessage, error)
}

// PanelView is one open panel instance as resources/list shows it.
type PanelView struct {
	ID     string // the instance id (pi_…)
	Title  string
	Origin string // "host" or "agent"
}

// panelShowTools are the catalog tools whose results show a panel: they
// link the view. viewTools are the catalog tools a view may call.
var (
	panelShowTools = map[string]bool{"panel.open": true, "panel.compose": true, "panel.patch": true, "panel.fill": true}
	viewTools      = map[string]bool{"panel.fill": true, "panel.run_action": true, "panel.patch": true, "panel.read_state": true}
)

// viewCSP declares that the view loads nothing from anywhere: every list
// empty, so a host allows no origin (its restrictive default).
func viewMeta() mcp.Meta {
	none := []string{}
	return mcp.Meta{metaUIKey: map[string]any{
		"csp":           map[string]any{"connectDomains": none, "resourceDomains": none, "frameDomains": none, "baseUriDomains": none},
		"prefersBorder": true,
	}}
}

// appsOptions advertises the extension.
func appsOptions(so *mcp.ServerOptions) {
	so.Capabilities.AddExtension(AppsExtension, map[string]any{"mimeTypes": []string{AppMIMEType}})
}

// addPanelViews serves the view and each instance's resource.
func (s *Server) addPanelViews() {
	s.sdk.AddResource(&mcp.Resource{
		URI: PanelViewURI, Name: "panel", Title: "switchboard panel", MIMEType: AppMIMEType, Meta: viewMeta(),
		Description: "Shows the panel a panel tool's result names (panel.open, panel.compose, panel.patch, panel.fill), " +
			"with its form and actions; edits and saves go through panel.fill and panel.run_action.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return s.viewContents(PanelViewURI, "")
	})
	s.sdk.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: panelURIPrefix + "{instanceId}", Name: "panel-instance", Title: "An open switchboard panel",
		MIMEType: AppMIMEType, Meta: viewMeta(),
		Description: "One open panel instance (the ids panel.list and the workspace digest show).",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id := strings.TrimPrefix(uri, panelURIPrefix)
		// A panel the caller may not see is the same "not found" as one
		// that does not exist.
		if !validInstanceID(id) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		if _, err := s.opts.Panels.PanelSnapshot(ctx, id); err != nil {
			if c := switchboard.CodeOf(err); c != switchboard.CodeNotFound && c != switchboard.CodeForbidden {
				return nil, rpcError(err)
			}
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return s.viewContents(uri, id)
	})
}

func validInstanceID(id string) bool {
	if !strings.HasPrefix(id, "pi_") || len(id) > 67 {
		return false
	}
	for _, r := range id[3:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return len(id) > 3
}

func (s *Server) viewContents(uri, instanceID string) (*mcp.ReadResourceResult, error) {
	html, err := viewHTML(instanceID, s.opts.Version)
	if err != nil {
		s.log.Error("MCP Apps view", "err", err)
		return nil, rpcError(switchboard.Errorf(switchboard.CodeInternal, "the panel view cannot be built; see the daemon log"))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: AppMIMEType, Text: html, Meta: viewMeta()}}}, nil
}

// viewHTML is the view document: the renderer and bridge inline, the
// instance to show (if known) as JSON data. Nothing from a spec is in it.
func viewHTML(instanceID, version string) (string, error) {
	script, err := web.ViewScript()
	if err != nil {
		return "", err
	}
	cfg, err := json.Marshal(map[string]string{"instanceId": instanceID, "version": version}) // escapes <, > and &
	if err != nil {
		return "", err
	}
	return `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta name="viewport" content="width=device-width, initial-scale=1"><title>switchboard panel</title>` +
		`<style>body{margin:0;padding:.75rem;font:14px/1.4 system-ui,sans-serif;background:transparent}</style></head><body>` +
		`<script type="application/json" id="sb-view">` + string(cfg) + `</script>` +
		`<script>` + script + `</script></body></html>`, nil
}

// listPanelResources adds the caller's open instances to the last page
// of resources/list.
func (s *Server) listPanelResources(ctx context.Context, res *mcp.ListResourcesResult) error {
	if res.NextCursor != "" {
		return nil
	}
	views, err := s.opts.Panels.PanelViews(ctx)
	if err != nil {
		return err
	}
	for _, v := range views {
		title := v.Title
		if title == "" {
			title = "Panel " + v.ID
		}
		desc := "An open panel."
		if v.Origin == "agent" {
			desc = "An open panel an agent composed."
		}
		res.Resources = append(res.Resources, &mcp.Resource{URI: panelURIPrefix + v.ID, Name: v.ID, Title: title,
			MIMEType: AppMIMEType, Description: desc, Meta: viewMeta()})
	}
	return nil
}

// uiMeta is a tool's _meta.ui: the view it shows (if any) and who may
// call it.
func uiMeta(resourceURI string, visibility ...string) map[string]any {
	m := map[string]any{"visibility": visibility}
	if resourceURI != "" {
		m["resourceUri"] = resourceURI
	}
	return m
}

// appsToolMeta links a listed panel tool to the view.
func (s *Server) appsToolMeta(t switchboard.Tool, mt *mcp.Tool) {
	if s.opts.Panels == nil || !panelShowTools[t.Name] && !viewTools[t.Name] {
		return
	}
	uri := ""
	if panelShowTools[t.Name] {
		uri = PanelViewURI
	}
	if mt.Meta == nil {
		mt.Meta = mcp.Meta{}
	}
	mt.Meta[metaUIKey] = uiMeta(uri, "model", "app")
}

// panelViewTool is listed to clients that speak MCP Apps: hosts keep it
// from the model (visibility app) and let the view call it.
var panelViewTool = &mcp.Tool{
	Name:        toolPanelView,
	Description: "For the panel view of MCP Apps hosts: one open panel instance's spec, data and values as the caller may see them.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"instanceId":{"type":"string","description":"the panel instance id (pi_...)"}},"required":["instanceId"],"additionalProperties":false}`),
	Annotations: readOnly,
	Meta:        mcp.Meta{metaUIKey: uiMeta(PanelViewURI, "app")},
}

// declaresApps reports whether the client of req declared the extension
// (in its initialize, or in a 2026-07-28 request's _meta).
func declaresApps(req mcp.Request) bool {
	r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	})
	if !ok {
		return false
	}
	caps := r.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok = caps.Extensions[AppsExtension]
	return ok
}

// appsKey marks the context of a request whose client shows panels.
type appsKey struct{}

// ShowsApps reports whether the MCP request in ctx comes from a client
// that declared MCP Apps, on a server that serves panels: a client that
// shows a panel itself, in its chat, with no browser tab of the app. The
// daemon offers such a client the panel tools, and a panel it opens with
// no tab belongs to its chat (panel.Options.ShowsPanels).
func ShowsApps(ctx context.Context) bool {
	v, _ := ctx.Value(appsKey{}).(bool)
	return v
}

// panelView answers switchboard_panel_view.
func (s *Server) panelView(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		InstanceID string `json:"instanceId"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.InstanceID == "" {
		return errorResult(switchboard.Errorf(switchboard.CodeInvalidInput, "give instanceId, the panel instance id (pi_...)"), nil), nil
	}
	snap, err := s.opts.Panels.PanelSnapshot(ctx, in.InstanceID)
	if err != nil {
		return errorResult(err, nil), nil
	}
	var head struct {
		Title   string `json:"title"`
		Version int    `json:"version"`
	}
	_ = json.Unmarshal(snap, &head)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "Panel " + in.InstanceID + " (" + head.Title + ")"}},
		StructuredContent: snap,
		Meta:              mcp.Meta{metaUIKey: map[string]any{"resourceUri": panelURIPrefix + in.InstanceID}},
	}, nil
}

// guardView refuses a call a view made outside its panel: a tool that is
// not one of viewTools, another instance, or oversized arguments. nil
// lets the call go on.
func (s *Server) guardView(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	raw, marked := req.Params.Meta[metaView]
	if !marked {
		return nil
	}
	view, _ := raw.(string)
	name := req.Params.Name
	refuse := func(code switchboard.Code, why string) *mcp.CallToolResult {
		s.log.WarnContext(ctx, "MCP Apps view call refused", "view", view, "tool", name, "reason", why)
		return errorResult(switchboard.Errorf(code, "a panel view may not make this call: %s", why), nil)
	}
	if !validInstanceID(view) {
		return refuse(switchboard.CodeInvalidInput, "_meta[\"switchboard/view\"] is not a panel instance id")
	}
	if n := len(req.Params.Arguments); n > maxViewArgs {
		return refuse(switchboard.CodeInvalidInput, "its arguments are larger than 256 KiB")
	}
	if cat, ok := s.names.catalogName(name); name != toolPanelView && (!ok || !viewTools[cat]) {
		return refuse(switchboard.CodeForbidden, name+" is not one of its panel's tools")
	}
	var args struct {
		InstanceID string `json:"instanceId"`
		PanelID    string `json:"panelId"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	if args.InstanceID != view || args.PanelID != "" && args.PanelID != view {
		return refuse(switchboard.CodeForbidden, "it names another panel instance")
	}
	return nil
}

// linkPanel links a panel tool's result to the instance's view.
func (s *Server) linkPanel(t switchboard.Tool, inv switchboard.Invocation, res *mcp.CallToolResult) {
	if s.opts.Panels == nil || res.IsError || !panelShowTools[t.Name] && !viewTools[t.Name] {
		return
	}
	var out struct {
		InstanceID string `json:"instanceId"`
		PanelID    string `json:"panelId"` // panel.read_state's name for it
	}
	_ = json.Unmarshal(inv.Result, &out)
	id := out.InstanceID
	if id == "" {
		id = out.PanelID
	}
	if !validInstanceID(id) {
		return
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta[metaUIKey] = map[string]any{"resourceUri": panelURIPrefix + id}
}
