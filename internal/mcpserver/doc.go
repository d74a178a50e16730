// Package mcpserver is the MCP transport of the daemon: it puts the catalog
// (api tools and the live browser tools of open tabs) in front of external
// agents such as Claude Code, Codex or Cursor, over streamable HTTP at /mcp
// and, through `switchboard mcp`, over stdio.
//
// It translates and never decides: every tools/call goes through the same
// broker as the HTTP API (visibility, validation, approval, records,
// ledger), and only this package turns an outcome into an MCP result or a
// JSON-RPC error. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk); no SDK type appears in its
// exported API, which takes and returns switchboard and net/http types.
//
// The SDK owns the protocol (sessions, streams, initialize, ping,
// cancellation, progress plumbing). /mcp speaks two revisions side by
// side: 2025-11-25 sessions, which live in this process, and the
// sessionless 2026-07-28, whose requests any replica answers; there an
// approval the session revision asks for with elicitation comes back as an
// input_required round with a signed requestState (mrtr.go). A receiving middleware answers
// tools/list and tools/call from the catalog, so each caller gets its own
// view: what the registry lets it see (registry.Visible: its scope, and no
// user-only tool for an agent; a hidden tool is an unknown one) and a
// listing mode — full (every tool) or deferred (three meta tools,
// switchboard_search, switchboard_describe and switchboard_call, plus
// pinned tools) once the view passes a threshold. What search and describe
// find is the registry's (registry.SearchMeta, registry.Describe), shared
// with the agent loop; this package only names and renders it.
// Catalog names are mapped to MCP names reversibly ("." ↔ "-", see
// names.go). Changes to the registry or to a tab's advertised tools reach
// connected clients as notifications/tools/list_changed.
//
// With Options.Panels, /mcp also speaks MCP Apps (io.modelcontextprotocol/ui,
// apps.go): panels are ui:// views that hosts such as Claude or VS Code
// render in the chat (docs/mcp-apps.md). A request from a client that
// declared the extension is marked in its context (ShowsApps): the daemon
// offers it the panel tools with no tab open, and its panels then live in
// its own chat surface (internal/panel/surface.go).
//
// docs/mcp.md has the client setup and the reasoning behind each decision.
package mcpserver
