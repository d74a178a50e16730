package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
)

func newMCP(g *globals) *cobra.Command {
	var mode string
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP over stdio for agents (Claude Code, Codex, Cursor), relaying to the running daemon",
		Long: `Serve the Model Context Protocol on stdin and stdout, for MCP clients that
start their servers as commands. Every request is relayed to the running
daemon's /mcp endpoint, so a stdio client sees exactly what an HTTP client sees:
the same catalog, the user's open browser tabs, the same approvals and records.
Start the daemon first ('switchboard serve'); the token is found as for every
client command (--token, $SWITCHBOARD_TOKEN or <data>/admin.token).

Nothing but protocol messages is written to stdout; errors go to stderr.`,
		Example: `  claude mcp add switchboard -- switchboard mcp
  switchboard mcp --mode deferred --addr 127.0.0.1:7766`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			tok, err := g.resolveToken()
			if err != nil {
				return err
			}
			url := client.New(g.addr, tok, nil).BaseURL() + "/mcp"
			if mode == "auto" {
				mode = "" // the daemon's default: deferred past its threshold
			}
			if mode != "" {
				if mode != string(mcpserver.ModeFull) && mode != string(mcpserver.ModeDeferred) {
					return usageError{fmt.Errorf("--mode %q: use auto, full or deferred", mode), c.CommandPath()}
				}
				url += "?mode=" + mode
			}
			return mcpserver.ServeStdio(c.Context(), g.stdin, g.stdout, mcpserver.StdioOptions{URL: url, Token: tok})
		},
	}
	c.Flags().StringVar(&mode, "mode", "", "tools/list mode for this client: full or deferred (default: the daemon's, deferred past 30 tools)")
	return c
}
