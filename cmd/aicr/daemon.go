package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
)

// DaemonOptions are the inputs of `aicr daemon`.
type DaemonOptions struct {
	Factory *Factory
	Level   slog.Level
}

func newCmdDaemon(f *Factory, runF func(context.Context, *DaemonOptions) error) *cobra.Command {
	opts := &DaemonOptions{Factory: f}
	var level string
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the review daemon in the foreground",
		Long: `Run the review daemon in the foreground: accept signed events from hooks and
triggers, drain spool directories, review each change and publish the report.
Logs go to stderr (JSON unless stderr is a terminal). Stop it with SIGTERM;
reviews in flight are resumed at the next start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := parseLevel(level)
			if err != nil {
				return err
			}
			opts.Level = l
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return daemonRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&level, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func daemonRun(ctx context.Context, opts *DaemonOptions) error {
	f := opts.Factory
	// The daemon creates aicr.db and runs/N: they must be the owner's.
	cfg, err := f.RequireDataDirOwner()
	if err != nil {
		return err
	}
	return serveDaemon(ctx, daemon.Options{Config: cfg, Logger: f.Logger(opts.Level), Stdout: f.IOStreams.Out, Now: f.Now, Version: version})
}

// serveDaemon is the CLI's one call into the daemon's entry point (aicr
// daemon and aicr demo); it becomes daemon.Serve with the composition
// root.
func serveDaemon(ctx context.Context, opts daemon.Options) error {
	return daemon.Serve(ctx, opts)
}
