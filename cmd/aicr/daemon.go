package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
)

func newDaemonCmd(ios *IOStreams) *cobra.Command {
	var configPath, logLevel string
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the review daemon in the foreground",
		Long: `Run the review daemon in the foreground: accept signed events from hooks and
triggers, drain spool directories, review each change and publish the report.
Logs go to stderr (JSON unless stderr is a terminal). Stop it with SIGTERM;
reviews in flight are resumed at the next start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			if err := checkDataDirOwner(cfg.Daemon.DataDir); err != nil {
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return &exitError{code: 2, err: err}
			}
			return daemon.Serve(cmd.Context(), daemon.Options{Config: cfg, Logger: newLogger(ios, level), Stdout: ios.Out})
		},
	}
	addConfigFlag(cmd, &configPath)
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}
