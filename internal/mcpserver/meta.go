package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// Search paging on MCP: pages stay small because a model reads them.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
)

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}

// metaTools are listed in deferred mode (always loaded: they are how a
// client reaches everything else).
var metaTools = []*mcp.Tool{
	{
		Name: toolSearch,
		Description: "Search the app's tools (its API and the user's open browser tab) by what you want to do. " +
			"Returns names and one-line summaries, best first; call switchboard_describe for a tool's arguments, then switchboard_call to run it. " +
			"An empty query lists everything by name. Page with nextCursor.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"A few words about the task, e.g. \"export deck as pdf\"."},` +
			`"surface":{"type":"string","enum":["api","browser"],"description":"Only api tools (lasting state) or browser tools (the open tab's view)."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"Results per page (default 10)."},` +
			`"cursor":{"type":"string","description":"nextCursor of the previous page of the same query."},` +
			`"regex":{"type":"boolean","description":"query is an RE2 pattern (at most 256 bytes) matched against catalog names, summaries and descriptions, e.g. \"^deck\\.\" lists the deck group; (?i) ignores case."}},` +
			`"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"items":{"type":"array","items":{"$ref":"#/$defs/hit"}},` +
			`"nextCursor":{"type":"string"},` +
			`"openTabTools":{"type":"array","description":"Matching tools of the user's open browser tabs (first page only).","items":{"$ref":"#/$defs/hit"}}},` +
			`"required":["items"],` +
			`"$defs":{"hit":{"type":"object","properties":{"name":{"type":"string"},"summary":{"type":"string"},"surface":{"type":"string"},"class":{"type":"string"}},"required":["name","summary"]}}}`),
		Annotations: readOnly,
		Meta:        mcp.Meta{metaAlwaysLoad: true},
	},
	{
		Name:        toolDescribe,
		Description: "Describe one tool found with switchboard_search: its full description, input schema (the arguments of switchboard_call), output schema and class.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The tool's name as search returned it."}},"required":["name"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string"},"catalogName":{"type":"string"},"description":{"type":"string"},` +
			`"surface":{"type":"string"},"class":{"type":"string"},"approval":{"type":"string"},` +
			`"inputSchema":{"type":"object"},"outputSchema":{}},"required":["name","description","inputSchema"]}`),
		Annotations: readOnly,
		Meta:        mcp.Meta{metaAlwaysLoad: true},
	},
	{
		Name: toolCall,
		Description: "Run a tool by name with its arguments (see switchboard_describe for them). " +
			"The answer is the tool's own result, or a tool error whose text starts with its code. " +
			"Mutations may wait for a person to approve them.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's name."},` +
			`"arguments":{"type":"object","description":"The tool's arguments, matching its input schema."},` +
			`"sessionId":{"type":"string","description":"For browser tools: the tab to act in. Omit it when one tab is open."}},` +
			`"required":["name"],"additionalProperties":false}`),
		Meta: mcp.Meta{metaAlwaysLoad: true},
	},
}

type searchArgs struct {
	Query   string              `json:"query"`
	Surface switchboard.Surface `json:"surface"`
	Limit   int                 `json:"limit"`
	Cursor  string              `json:"cursor"`
	Regex   bool                `json:"regex"`
}

type hit struct {
	Name    string              `json:"name"`
	Summary string              `json:"summary"`
	Surface switchboard.Surface `json:"surface,omitempty"`
	Class   switchboard.Class   `json:"class,omitempty"`
}

type searchResult struct {
	Items        []hit  `json:"items"`
	NextCursor   string `json:"nextCursor,omitempty"`
	OpenTabTools []hit  `json:"openTabTools,omitempty"`
}

// search answers switchboard_search through the registry's one search
// meta tool: a page of the catalog and, on the first page, the matching
// tools of open tabs in their own list.
func (s *Server) search(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a searchArgs
	if err := decodeArgs(raw, &a); err != nil {
		return errorResult(err, nil), nil
	}
	switch {
	case a.Limit == 0:
		a.Limit = defaultSearchLimit
	case a.Limit < 0 || a.Limit > maxSearchLimit:
		return errorResult(switchboard.Errorf(switchboard.CodeInvalidInput, "limit must be within 1..%d", maxSearchLimit), nil), nil
	}
	q := switchboard.SearchQuery{Query: a.Query, Surface: a.Surface, Limit: a.Limit, Cursor: a.Cursor, Regex: a.Regex}
	res, err := s.reg.SearchMeta(ctx, q, s.live.snapshot())
	if err != nil {
		return errorResult(err, nil), nil
	}
	out := searchResult{Items: make([]hit, 0, len(res.Items)), NextCursor: res.NextCursor}
	for _, h := range res.Items {
		out.Items = append(out.Items, s.hitOf(h))
	}
	for _, h := range res.OpenTab {
		out.OpenTabTools = append(out.OpenTabTools, s.hitOf(h))
	}
	return structuredResult(out), nil
}

func (s *Server) hitOf(h switchboard.SearchHit) hit {
	return hit{Name: s.names.mcpName(h.Name), Summary: h.Summary, Surface: h.Surface, Class: h.Class}
}

type describeArgs struct {
	Name string `json:"name"`
}

type description struct {
	Name         string               `json:"name"`
	CatalogName  string               `json:"catalogName"`
	Description  string               `json:"description"`
	Surface      switchboard.Surface  `json:"surface"`
	Class        switchboard.Class    `json:"class"`
	Approval     switchboard.Approval `json:"approval,omitempty"`
	InputSchema  any                  `json:"inputSchema"`
	OutputSchema json.RawMessage      `json:"outputSchema,omitempty"`
}

// describeTool answers switchboard_describe through the registry's one
// describe meta tool.
func (s *Server) describeTool(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a describeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return errorResult(err, nil), nil
	}
	t, err := s.find(ctx, a.Name)
	if err != nil {
		return errorResult(err, nil), nil
	}
	d := description{
		Name: s.names.mcpName(t.Name), CatalogName: t.Name, Description: describe(t),
		Surface: t.Surface, Class: t.Class, Approval: t.Approval,
		InputSchema: json.RawMessage(t.InputSchema), OutputSchema: t.OutputSchema,
	}
	if t.Surface == switchboard.SurfaceBrowser {
		d.InputSchema = withSessionID(t.InputSchema)
	}
	return structuredResult(d), nil
}

// find resolves a name given to a meta tool: TOOL_NOT_FOUND (a tool error
// the model can act on) when it is unknown or hidden from the caller, with
// one message for both.
func (s *Server) find(ctx context.Context, name string) (switchboard.Tool, error) {
	notFound := switchboard.Errorf(switchboard.CodeToolNotFound, "no tool named %q; search with switchboard_search to find the right name", name)
	cat, ok := s.names.catalogName(name)
	if !ok {
		return switchboard.Tool{}, notFound
	}
	t, visible, err := s.lookup(ctx, cat)
	if err != nil {
		return switchboard.Tool{}, err
	}
	if !visible {
		return switchboard.Tool{}, notFound
	}
	return t, nil
}

type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	SessionID string          `json:"sessionId"`
}

func (s *Server) metaCall(ctx context.Context, c caller, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a callArgs
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return errorResult(err, nil), nil
	}
	if a.Name == toolCall || a.Name == toolSearch || a.Name == toolDescribe {
		return errorResult(switchboard.Errorf(switchboard.CodeInvalidInput, "switchboard_call runs catalog tools; call %s directly", a.Name), nil), nil
	}
	t, err := s.find(ctx, a.Name)
	if err != nil {
		return errorResult(err, nil), nil
	}
	args, err := objectArgs(a.Arguments)
	if err != nil {
		return errorResult(switchboard.Errorf(switchboard.CodeInvalidInput, "arguments must be a JSON object"), nil), nil
	}
	return s.invoke(ctx, c, req, t, args, a.SessionID)
}

// decodeArgs strictly decodes a meta tool's arguments.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	if err := strictUnmarshal(raw, v); err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "arguments: %v", err)
	}
	return nil
}
