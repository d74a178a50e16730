package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/search"
)

// listPageSize bounds one tools/list page in full mode.
const listPageSize = 500

// metaAlwaysLoad marks a tool a client should never defer (Claude Code's
// tool search honours it).
const metaAlwaysLoad = "anthropic/alwaysLoad"

// liveIndex caches the live browser tools as a registry.Live (merged by
// name, indexed for search), rebuilt on the next read after a tab changed.
type liveIndex struct {
	live Live

	mu    sync.Mutex
	stale bool
	cur   *registry.Live
}

func newLiveIndex(l Live) *liveIndex { return &liveIndex{live: l, stale: true} }

func (x *liveIndex) invalidate() {
	x.mu.Lock()
	x.stale = true
	x.mu.Unlock()
}

// snapshot returns the live tools (nil without a Live; read-only).
func (x *liveIndex) snapshot() *registry.Live {
	if x.live == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stale {
		x.cur = registry.NewLive(x.live.LiveTools())
		x.stale = false
	}
	return x.cur
}

// caller is who a request comes from. The middleware puts its principal
// in the request's context, where the registry reads it to decide what
// the caller may see (registry.Visible); the dedup key also names it.
type caller struct {
	p  switchboard.Principal
	ok bool
	// task is set when the call is made for a delegated task: p then
	// carries the task's envelope (delegated.go).
	task *taskCall
}

func (s *Server) callerOf(ctx context.Context, extra *mcp.RequestExtra) caller {
	p, ok := principal(ctx, extra)
	return caller{p: p, ok: ok}
}

// view returns every tool the caller in ctx may see, sorted by name: the
// catalog, with a live browser tool replacing a catalog declaration of the
// same name (the tab's version is what a call runs).
func (s *Server) view(ctx context.Context) ([]switchboard.Tool, error) {
	return s.reg.ListWith(ctx, "", s.live.snapshot())
}

// lookup finds the tool a call names, as the caller in ctx may see it: the
// live version first, then the catalog. ok is false when the caller may
// not see it or it does not exist; the two are never told apart.
func (s *Server) lookup(ctx context.Context, name string) (switchboard.Tool, bool, error) {
	t, err := s.reg.Describe(ctx, name, s.live.snapshot())
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeToolNotFound {
			return switchboard.Tool{}, false, nil
		}
		return switchboard.Tool{}, false, err
	}
	return t, true, nil
}

// modeKey carries a client's own choice of listing mode (the mode query
// parameter of the URL it connected to), which the SDK keeps in the context
// of every request of its session.
type modeKey struct{}

// deferred reports whether a view of n tools is listed deferred.
func (s *Server) deferred(ctx context.Context, n int) bool {
	mode := s.opts.Mode
	if m, ok := ctx.Value(modeKey{}).(Mode); ok {
		mode = m
	}
	switch mode {
	case ModeFull:
		return false
	case ModeDeferred:
		return true
	}
	return n > s.opts.Threshold
}

func (s *Server) listTools(ctx context.Context, req *mcp.ListToolsRequest) (mcp.Result, error) {
	view, err := s.view(ctx)
	if err != nil {
		return nil, rpcError(err)
	}
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	var tasks []string // the listed tools that run as tasks
	add := func(t switchboard.Tool) {
		mt := s.mcpTool(t)
		res.Tools = append(res.Tools, mt)
		if taskCapable(t) {
			tasks = append(tasks, mt.Name)
		}
	}
	if s.deferred(ctx, len(view)) {
		res.Tools = append(res.Tools, s.searchTool(view))
		res.Tools = append(res.Tools, metaTools[1:]...)
		for _, t := range view {
			if t.Pinned {
				add(t)
			}
		}
		s.appendAppTools(req, res)
		return withTaskSupport(req, res, tasks), nil
	}
	// Full: pages of listPageSize, the cursor being the last name sent, so
	// paging stays correct while the catalog changes.
	start := 0
	if req.Params != nil && req.Params.Cursor != "" {
		after, ok := s.names.catalogName(req.Params.Cursor)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor; list again without one"}
		}
		start, _ = slices.BinarySearchFunc(view, after, func(t switchboard.Tool, n string) int { return strings.Compare(t.Name, n) })
		if start < len(view) && view[start].Name == after {
			start++
		}
	}
	end := min(start+listPageSize, len(view))
	for _, t := range view[start:end] {
		add(t)
	}
	if end < len(view) {
		res.NextCursor = s.names.mcpName(view[end-1].Name)
	} else {
		s.appendAppTools(req, res)
	}
	return withTaskSupport(req, res, tasks), nil
}

// appendAppTools lists the app-only tools to a client that speaks MCP
// Apps; others could not use them.
func (s *Server) appendAppTools(req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	if s.opts.Panels != nil && declaresApps(req) {
		res.Tools = append(res.Tools, panelViewTool)
	}
}

// mcpTool is how a catalog tool is listed.
func (s *Server) mcpTool(t switchboard.Tool) *mcp.Tool {
	mt := &mcp.Tool{
		Name:        s.names.mcpName(t.Name),
		Description: capDescription(describe(t)),
		InputSchema: json.RawMessage(t.InputSchema),
		Annotations: annotations(t),
	}
	if t.Surface == switchboard.SurfaceBrowser {
		mt.InputSchema = withSessionID(t.InputSchema)
	}
	if len(t.OutputSchema) > 0 && t.Class != switchboard.ClassJob { // jobs answer {jobId, status}
		mt.OutputSchema = json.RawMessage(t.OutputSchema)
	}
	if t.Pinned {
		mt.Meta = mcp.Meta{metaAlwaysLoad: true}
	}
	s.appsToolMeta(t, mt)
	if t.UI != nil {
		// The renderer hints travel in _meta; an icon that is a URI is
		// also the 2025-11-25 icons field (a bare icon name is not a src).
		if mt.Meta == nil {
			mt.Meta = mcp.Meta{}
		}
		mt.Meta[metaUI] = t.UI
		mt.Title = t.UI.Title
		if iconURI(t.UI.Icon) {
			mt.Icons = []mcp.Icon{{Source: t.UI.Icon}}
		}
	}
	return mt
}

// metaUI is the _meta key of a tool's UI hints (title, rendererId,
// displayGroup, icon, details).
const metaUI = "switchboard/ui"

func iconURI(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "data:image/")
}

// describe is a tool's description as a model should read it.
func describe(t switchboard.Tool) string {
	if t.Surface == switchboard.SurfaceBrowser {
		return t.Description + " (Acts in the user's open browser tab.)"
	}
	return t.Description
}

// capDescription keeps a description under MaxDescriptionBytes, cutting at a
// word boundary and saying where the rest is.
func capDescription(d string) string {
	if len(d) <= MaxDescriptionBytes {
		return d
	}
	const more = " … (cut; switchboard_describe gives the full text)"
	cut := MaxDescriptionBytes - len(more)
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	if i := strings.LastIndexAny(d[:cut], " \n\t"); i > cut/2 {
		cut = i
	}
	return strings.TrimRight(d[:cut], " \n\t") + more
}

// annotations derive MCP's hints from the class: read tools are read-only;
// ui tools (view movements, idempotent by the browser exemption) change
// nothing lasting; mutate tools may destroy. Job tools keep MCP's defaults.
// The catalog has no idempotency declaration yet; when it gains one it
// sets IdempotentHint here.
func annotations(t switchboard.Tool) *mcp.ToolAnnotations {
	no, yes := false, true
	switch t.Class {
	case switchboard.ClassRead:
		return &mcp.ToolAnnotations{ReadOnlyHint: true}
	case switchboard.ClassUI:
		return &mcp.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true}
	case switchboard.ClassMutate:
		return &mcp.ToolAnnotations{DestructiveHint: &yes}
	}
	return nil
}

// sessionIDProp is the argument that picks the tab of a browser tool call.
const sessionIDProp = "sessionId"

var sessionIDSchema = map[string]any{
	"type":        "string",
	"description": "The browser tab (session id) to act in. Omit it when one tab is open; after you name one, later calls stay on it.",
}

// withSessionID adds the optional sessionId argument to a browser tool's
// input schema, unless the tool declares an argument of that name itself.
func withSessionID(in json.RawMessage) any {
	var m map[string]any
	if err := json.Unmarshal(in, &m); err != nil {
		return in
	}
	props, _ := m["properties"].(map[string]any)
	if _, taken := props[sessionIDProp]; taken {
		return in
	}
	if props == nil {
		props = map[string]any{}
	}
	props[sessionIDProp] = sessionIDSchema
	m["properties"] = props
	return m
}

// ownsSessionID reports whether a tool's own schema declares sessionId, in
// which case the argument is the tool's and not a tab choice.
func ownsSessionID(in json.RawMessage) bool {
	var m struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(in, &m)
	_, ok := m.Properties[sessionIDProp]
	return ok
}

// Deferred listings name the catalog's groups in the search tool's
// description, so a model knows what is there before it searches: at most
// maxGroups lines however large the catalog (search.Groups).
const maxGroups = 30

// searchTool is the search meta tool as listed for view: its description
// ends with the groups of the tools view holds.
func (s *Server) searchTool(view []switchboard.Tool) *mcp.Tool {
	groups, other := search.Groups(view, maxGroups)
	if len(groups) == 0 {
		return metaTools[0]
	}
	var b strings.Builder
	b.WriteString(metaTools[0].Description)
	fmt.Fprintf(&b, "\n\nThe catalog holds %d tools. By group (a query with the group's name finds its tools; for a namespace, the regex ^name\\. lists exactly them):", len(view))
	for _, g := range groups {
		b.WriteString("\n" + g.Line(s.names.mcpName))
	}
	if other > 0 {
		fmt.Fprintf(&b, "\n- and %d more in no group", other)
	}
	t := *metaTools[0]
	t.Description = b.String()
	return &t
}
