// Command aicr is every part of aicr in one binary: the hook client, the
// daemon, the MCP server agents talk to, and the admin CLI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Execute(ctx, os.Args[1:], SystemIO())
	stop()
	os.Exit(code)
}
