package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
)

// RunCancelOptions are the inputs of `aicr run cancel`.
type RunCancelOptions struct {
	Factory *Factory
	Input   admin.RunCancelInput
	Format  string
}

func newCmdRunCancel(f *Factory, runF func(context.Context, *RunCancelOptions) error) *cobra.Command {
	opts := &RunCancelOptions{Factory: f}
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Cancel a queued run",
		Long: `Cancel a queued run (waiting, retrying, or held by a paused repo): it ends as
skipped with reason "cancelled", and who cancelled it and why are kept in its
record. A running run cannot be cancelled mid-review: wait for it, or pause its
repo to hold the next ones. Same as the admin MCP tool run_cancel. Run it as the
data_dir's owner.`,
		Example: "  aicr run cancel 42 --reason 'reverted in r43'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			id, err := parseID(args[0], "run", "aicr audit list")
			if err != nil {
				return err
			}
			opts.Input.RunID, opts.Input.Confirm = id, !dryRun
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			out, err := adminFor(f, "").RunCancel(cmd.Context(), opts.Input)
			if err != nil {
				return cliError(newExporter(f.IOStreams, opts.Format), err)
			}
			return newExporter(f.IOStreams, opts.Format).Write(out, func(w io.Writer) error { return printOutcome(w, out) })
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Input.Reason, "reason", "", "why, kept in the run's record")
	addDryRunFlag(cmd, &dryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}
