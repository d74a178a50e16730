package switchboard

import (
	"encoding/json"
	"fmt"
)

// Surface says where a tool acts.
type Surface string

const (
	// SurfaceAPI tools act on state that outlives a browser session and are
	// callable with no browser attached.
	SurfaceAPI Surface = "api"
	// SurfaceBrowser tools move the view of a live tab and nothing else.
	SurfaceBrowser Surface = "browser"
)

// Class is a tool's capability class; approval policy and MCP annotations
// derive from it.
type Class string

const (
	ClassRead   Class = "read"
	ClassUI     Class = "ui"
	ClassMutate Class = "mutate"
	ClassJob    Class = "job"
)

// Approval says whether a call needs a human decision first.
type Approval string

const (
	ApprovalNone     Approval = "none"
	ApprovalHITL     Approval = "hitl"
	ApprovalUserOnly Approval = "user-only"
)

// CostClass hints how expensive a call is; expensive tools get a lower
// default concurrency limit.
type CostClass string

const (
	CostCheap     CostClass = "cheap"
	CostExpensive CostClass = "expensive"
)

// Source is where a tool declaration came from. When two sources declare the
// same name, the later source in SourceOrder wins.
type Source string

const (
	SourceCore    Source = "core"
	SourceHost    Source = "host"
	SourceScoped  Source = "scoped"
	SourcePlugin  Source = "plugin"
	SourceSession Source = "session" // live browser tools advertised by a tab
)

// SourceOrder lists the persistent sources from lowest to highest precedence.
var SourceOrder = []Source{SourceCore, SourceHost, SourceScoped, SourcePlugin}

// Rank reports s's precedence (higher wins), or -1 for an unknown source.
func (s Source) Rank() int {
	for i, o := range SourceOrder {
		if o == s {
			return i
		}
	}
	if s == SourceSession {
		return len(SourceOrder)
	}
	return -1
}

// Tool is one capability, declared once. InputSchema and OutputSchema are
// raw JSON Schema documents, kept verbatim so they cross MCP unchanged.
type Tool struct {
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	Summary       string          `json:"summary,omitempty"`
	InputSchema   json.RawMessage `json:"inputSchema"`
	OutputSchema  json.RawMessage `json:"outputSchema,omitempty"`
	Surface       Surface         `json:"surface"`
	Class         Class           `json:"class"`
	Approval      Approval        `json:"approval,omitempty"`
	CostClass     CostClass       `json:"costClass,omitempty"`
	ViewStateOnly bool            `json:"viewStateOnly,omitempty"`
	// Pinned tools are listed with their full schema even in deferred
	// listings (MCP's _meta["anthropic/alwaysLoad"]).
	Pinned bool `json:"pinned,omitempty"`
	// TimeoutMs bounds one call; zero means the daemon's default.
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// MaxConcurrency bounds calls in flight; zero means the default for the
	// tool's cost class.
	MaxConcurrency int      `json:"maxConcurrency,omitempty"`
	UI             *UIMeta  `json:"ui,omitempty"`
	Binding        *Binding `json:"binding,omitempty"`
	// Harness, when set, names the one runtime binding that contributes
	// this tool ("loop", "aisdk", "mcp" or a host's own binding): only
	// agents running under that binding see and call it; every other agent
	// gets TOOL_NOT_FOUND, as for a tool outside its scope. Operators (user
	// principals) see it in listings with its harness named.
	Harness string `json:"harness,omitempty"`
	// Inverse undoes a call of this tool (see reversal.go); Reversible false
	// says plainly that nothing can. Both unset: not declared, irreversible.
	Inverse    *Inverse `json:"inverse,omitempty"`
	Reversible *bool    `json:"reversible,omitempty"`
	// Origin and Version are set by the registry, never by the declarer.
	Origin  *Origin `json:"origin,omitempty"`
	Version int64   `json:"version,omitempty"`
}

// UIMeta is optional presentation metadata for consoles and chat surfaces.
// It travels with the tool's calls (AG-UI tool-call metadata, the AI SDK
// stream's data part) and its MCP listing (_meta, and Title and Icon as the
// 2025-11-25 title and icons fields).
type UIMeta struct {
	// Title is a short human name ("Send invoice"); Name stays the handle.
	Title        string `json:"title,omitempty"`
	RendererID   string `json:"rendererId,omitempty"`
	DisplayGroup string `json:"displayGroup,omitempty"`
	Icon         string `json:"icon,omitempty"`
	// Details are the renderer's own hints (a JSON object, at most
	// registry.MaxUIDetailsBytes), passed through untouched.
	Details json.RawMessage `json:"details,omitempty"`
}

// Origin records which source a descriptor came from and which lower
// sources it overrides.
type Origin struct {
	Source    Source   `json:"source"`
	Overrides []Source `json:"overrides,omitempty"`
	// SessionID names the tab that advertised a live browser tool.
	SessionID string `json:"sessionId,omitempty"`
}

// Binding says how a call of an api tool reaches the app.
type Binding struct {
	// HTTP calls the app's backend (sidecar use).
	HTTP *HTTPBinding `json:"http,omitempty"`
	// Go marks a tool served by a Go function registered in-process (embedded
	// use); the function itself is not stored.
	Go bool `json:"go,omitempty"`
}

// HTTPBinding maps a call onto a request to the app's backend. {field} in
// URL is filled from the input and removed from it; for GET, HEAD and DELETE
// the remaining fields become the query string, otherwise the JSON body.
type HTTPBinding struct {
	Method    string                 `json:"method"`
	URL       string                 `json:"url"`
	Headers   map[string]HeaderValue `json:"headers,omitempty"`
	TimeoutMs int                    `json:"timeoutMs,omitempty"`
	// Audience is the aud of the Switchboard-Assertion the backend gets:
	// what the backend checks it is meant for. Empty means the URL's
	// origin ("https://api.example.com").
	Audience string `json:"audience,omitempty"`
	// TokenExchange, when set, sends the backend a token of the app's
	// identity provider for the user the agent acts for, obtained by
	// exchanging the caller's own OAuth access token at that provider
	// (RFC 8693), as Authorization: Bearer — beside the assertion, never
	// instead of it. Only calls from an OAuth-authenticated caller (an MCP
	// client signed in at the daemon's --oauth-issuer) carry a token to
	// exchange; any other caller's call fails with UNAUTHORIZED.
	TokenExchange *TokenExchange `json:"tokenExchange,omitempty"`
}

// TokenExchange names what the exchanged token is for: the audience the
// provider issues it to (the backend's API identifier) and, optionally,
// the scopes asked for.
type TokenExchange struct {
	Audience string   `json:"audience"`
	Scopes   []string `json:"scopes,omitempty"`
}

// HeaderValue is a literal header value or a reference to an environment
// variable resolved at call time; on the wire it is "literal" or
// {"env": "NAME"}.
type HeaderValue struct {
	Value string
	Env   string
}

func (h HeaderValue) MarshalJSON() ([]byte, error) {
	if h.Env != "" {
		return json.Marshal(struct {
			Env string `json:"env"`
		}{h.Env})
	}
	return json.Marshal(h.Value)
}

func (h *HeaderValue) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*h = HeaderValue{Value: s}
		return nil
	}
	var ref struct {
		Env string `json:"env"`
	}
	if err := json.Unmarshal(b, &ref); err != nil || ref.Env == "" {
		return fmt.Errorf(`header value must be a string or {"env": "NAME"}`)
	}
	*h = HeaderValue{Env: ref.Env}
	return nil
}

// Manifest is the tools/list analog: every tool visible to a caller.
type Manifest struct {
	ProtocolVersion string `json:"protocolVersion"`
	RunID           string `json:"runId,omitempty"`
	Tools           []Tool `json:"tools"`
	// Panels and Adapters are the host panels and data adapters the app
	// declares with its tools (docs/panels.md); they are registered with
	// the tools, all or nothing.
	Panels   []HostPanel   `json:"panels,omitempty"`
	Adapters []HostAdapter `json:"adapters,omitempty"`
}

// ToolChange is one change of a tool's effective descriptor, as the
// registry reports it to the ledger: Before is nil for a new tool, After nil
// for a removed one.
type ToolChange struct {
	Name   string
	Source Source
	Before *Tool
	After  *Tool
}
