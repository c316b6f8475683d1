package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
)

// PruneOptions are the inputs of `aicr prune`.
type PruneOptions struct {
	Factory *Factory
	Input   admin.PruneInput
	Format  string
}

func newCmdPrune(f *Factory, runF func(context.Context, *PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{Factory: f}
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove the run directories of old runs now",
		Long: `Remove the run directories (<data_dir>/runs/<id>: the changed files, the diff,
the agent's workspace) of runs finished longer ago than --older-than, or
[retention] run_dirs, now instead of at the retention job's next run. The
runs' rows, problems and deliveries stay in the audit trail. At most 500
directories per call. Same as the admin MCP tool prune. Run it as the
data_dir's owner.`,
		Example: "  aicr prune --dry-run\n  aicr prune --older-than 168h",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.Input.Confirm = !dryRun
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			out, err := adminFor(f, "").Prune(cmd.Context(), opts.Input)
			if err != nil {
				return cliError(newExporter(f.IOStreams, opts.Format), err)
			}
			return newExporter(f.IOStreams, opts.Format).Write(out, func(w io.Writer) error { return printOutcome(w, out) })
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Input.OlderThan, "older-than", "", "prune runs finished longer ago than this (e.g. 720h); default [retention] run_dirs")
	addDryRunFlag(cmd, &dryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}
