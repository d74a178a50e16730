// Package mcpext is the seam through which switchboard's own test
// harnesses (internal/mcpconformance) extend the MCP server with what
// switchboard does not serve itself — resources, prompts, completions,
// logging — and reach the MCP request of a Go tool's call. It is internal
// so that no SDK type enters mcpserver's public API: embedders cannot set
// mcpserver.Options.Extension, and switchboard's tools stay
// transport-neutral.
package mcpext

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension adds to the SDK server: Options may change the server options
// before the server is built (capabilities, handlers), Server is handed the
// server once it is (resources, prompts). Either may be nil.
type Extension struct {
	Options func(*mcp.ServerOptions)
	Server  func(*mcp.Server)
}

type requestKey struct{}

// WithRequest returns ctx carrying the MCP request of a tool call;
// mcpserver sets it on every call that came over MCP.
func WithRequest(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Session == nil {
		return ctx
	}
	return context.WithValue(ctx, requestKey{}, req)
}

// Request returns the MCP request of a Go-function tool's call when the
// call came over MCP, else nil: how a fixture logs to the client, samples
// or elicits through it, or closes its stream.
func Request(ctx context.Context) *mcp.CallToolRequest {
	req, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	return req
}
