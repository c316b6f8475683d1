package main

import (
	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/review"
)

func newMCPCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "The MCP server review agents report through",
	}
	var opts review.ServerOptions
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the aicr review tools over MCP stdio",
		Long: `Serve the five aicr review tools (aicr.report_problem, aicr.publish_summary,
aicr.skip, aicr.fetch_more_context, aicr.try_blame) over MCP on stdin/stdout.
Every call is validated against the change and recorded in the state file,
which is rewritten atomically after each call.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Version = version
			return review.Serve(cmd.Context(), opts, ios.In, ios.Out)
		},
	}
	serve.Flags().StringVar(&opts.StatePath, "state", review.StateFileName, "state file to write")
	serve.Flags().StringVar(&opts.ChangePath, "change", "", "the run's change.json (default: ../change.json next to the state file's directory)")
	cmd.AddCommand(serve)
	return cmd
}
