package agent_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

// serveEnv turns the test binary into the aicr MCP server the builtin
// agent spawns, so the ladder runs against the real tool server.
const serveEnv = "AICR_TEST_MCP_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		os.Exit(serveLikeAicr(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func serveLikeAicr(args []string) int {
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:]
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	state := fs.String("state", "", "")
	change := fs.String("change", "", "")
	var l review.Limits
	fs.IntVar(&l.MaxProblems, "max-problems", 0, "")
	fs.IntVar(&l.MaxContextRequests, "max-context-requests", 0, "")
	fs.IntVar(&l.MaxAttributionRequests, "max-attribution-requests", 0, "")
	fs.IntVar(&l.MaxSummaries, "max-summaries", 0, "")
	fs.IntVar(&l.MaxMessageBytes, "max-message-bytes", 0, "")
	fs.IntVar(&l.MaxSummaryBytes, "max-summary-bytes", 0, "")
	fs.IntVar(&l.MaxRejected, "max-rejected", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := review.Serve(context.Background(), review.ServerOptions{StatePath: *state, ChangePath: *change, Limits: l}, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
