// Command conformance-server runs a loopback switchboard daemon with the
// MCP conformance suite's fixtures registered through its registry and
// broker, for scripts/mcp-conformance.sh. It prints its /mcp URL on the
// first line of stdout and serves until interrupted. Test-only: it accepts
// MCP requests without a token from loopback, and it is not part of the
// switchboard binary.
//
//	go run ./internal/mcpconformance/cmd/conformance-server --addr 127.0.0.1:0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboardhq/switchboard/internal/mcpconformance"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	data := flag.String("data", "", "data directory (default: a temporary one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mcpconformance.Serve(ctx, *addr, *data, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-server:", err)
		os.Exit(1)
	}
}
