// Command switchboard is the daemon and its CLI: `switchboard serve` runs
// the daemon; every other command talks to a running daemon through the
// typed client. main only turns Run's error into an exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
