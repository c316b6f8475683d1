package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/review"
)

// MCPServeOptions are the inputs of `aicr mcp serve`.
type MCPServeOptions struct {
	IO               *IOStreams
	Server           review.ServerOptions
	ToolNames        string
	HTTPAddr         string
	AllowNonLoopback bool
}

func newCmdMCP(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "aicr's MCP servers: the review tools agents report through, the admin tools",
	}
	cmd.AddCommand(newCmdMCPServe(f, nil), newCmdMCPReview(f))
	cmd.AddCommand(newCmdMCPAdmin(f, nil), newCmdMCPInstall(f, nil))
	return cmd
}

// newCmdMCPServe builds `aicr mcp serve`; runF replaces mcpServeRun in
// tests of the flag parsing.
func newCmdMCPServe(f *Factory, runF func(context.Context, *MCPServeOptions) error) *cobra.Command {
	opts := &MCPServeOptions{IO: f.IOStreams}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the aicr review tools over MCP (stdio, or Streamable HTTP with --http)",
		Long: `Serve the five aicr review tools (aicr.report_problem, aicr.publish_summary,
aicr.skip, aicr.fetch_more_context, aicr.try_blame) over MCP: on stdin/stdout
by default, or over Streamable HTTP at http://ADDR/mcp with --http ADDR.
Every call is validated against the change and recorded in the state file,
which is rewritten atomically after each call that changes what it records.
Refused calls past --max-rejected are only counted (rejectedTotal); that
count is written within a second and when the server stops.

--http accepts loopback addresses only (a bare port means 127.0.0.1:PORT;
port 0 picks a free one, printed on stderr) unless --allow-non-loopback is
given: the tools need no credentials and write into the run directory.

Limits apply per pass; 0 keeps the default. See docs/agent-contract.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			naming, err := review.ParseToolNaming(opts.ToolNames)
			if err != nil {
				return usageErrorf("--tool-names: %w", err)
			}
			opts.Server.ToolNames = naming
			opts.Server.Version = version
			if opts.HTTPAddr == "" && cmd.Flags().Changed("allow-non-loopback") {
				return usageErrorf("--allow-non-loopback needs --http")
			}
			if opts.HTTPAddr != "" {
				if _, err := review.ListenAddr(opts.HTTPAddr, opts.AllowNonLoopback); err != nil {
					return usageErrorf("--http: %w", err)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return mcpServeRun(cmd.Context(), opts)
		},
	}
	fl := serve.Flags()
	fl.StringVar(&opts.Server.StatePath, "state", review.StateFileName, "state file to write")
	fl.StringVar(&opts.Server.ChangePath, "change", "", "the run's change.json (default: change.json of the run directory the state file is in, i.e. ../change.json next to it)")
	fl.StringVar(&opts.HTTPAddr, "http", "", "serve Streamable HTTP on `ADDR` (host:port, loopback only) instead of stdio")
	fl.BoolVar(&opts.AllowNonLoopback, "allow-non-loopback", false, "let --http listen on an address other hosts can reach")
	fl.StringVar(&opts.ToolNames, "tool-names", string(review.ToolNamingDotted), "tool names to expose: dotted (aicr.report_problem), underscore (aicr_report_problem) or both")
	d := review.DefaultLimits()
	l := &opts.Server.Limits
	fl.IntVar(&l.MaxProblems, "max-problems", 0, fmt.Sprintf("problems recorded per pass (default %d)", d.MaxProblems))
	fl.IntVar(&l.MaxContextRequests, "max-context-requests", 0, fmt.Sprintf("aicr.fetch_more_context requests per pass (default %d)", d.MaxContextRequests))
	fl.IntVar(&l.MaxAttributionRequests, "max-attribution-requests", 0, fmt.Sprintf("aicr.try_blame requests per pass (default %d)", d.MaxAttributionRequests))
	fl.IntVar(&l.MaxSummaries, "max-summaries", 0, fmt.Sprintf("summaries per pass (default %d)", d.MaxSummaries))
	fl.IntVar(&l.MaxMessageBytes, "max-message-bytes", 0, fmt.Sprintf("bytes of a message, suggestion or reason (default %d)", d.MaxMessageBytes))
	fl.IntVar(&l.MaxSummaryBytes, "max-summary-bytes", 0, fmt.Sprintf("bytes of one summary (default %d)", d.MaxSummaryBytes))
	fl.IntVar(&l.MaxRejected, "max-rejected", 0, fmt.Sprintf("refused calls kept in the state file; later ones are only counted (default %d)", d.MaxRejected))
	return serve
}

func mcpServeRun(ctx context.Context, opts *MCPServeOptions) error {
	ios := opts.IO
	if opts.HTTPAddr == "" {
		return review.Serve(ctx, opts.Server, ios.In, ios.Out)
	}
	return review.ServeHTTP(ctx, opts.Server, review.HTTPOptions{
		Addr:             opts.HTTPAddr,
		AllowNonLoopback: opts.AllowNonLoopback,
		Logger:           slog.New(slog.NewTextHandler(ios.ErrOut, nil)),
		Ready: func(url string) {
			// Tests and wrappers that ask for port 0 read the URL from here.
			fmt.Fprintf(ios.ErrOut, "aicr mcp: serving on %s\n", url)
		},
	})
}
