package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
)

func newConfigCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with aicr config files",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config file",
		Long: `Validate a config file the way the daemon loads it, and run every check the
daemon makes before it starts (listen address, signing secret, schedules).
Every problem is printed as file:line: message and the exit status is 2 when
there is any. Warnings (a secret file every user can read) go to stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := daemon.LoadConfig(args[0])
			if err != nil {
				fmt.Fprintln(ios.ErrOut, err)
				return silentExit(2)
			}
			warnings, err := daemon.Preflight(cfg)
			for _, w := range warnings {
				fmt.Fprintf(ios.ErrOut, "%s: warning: %s\n", args[0], w)
			}
			if err != nil {
				for _, e := range splitJoined(err) {
					fmt.Fprintf(ios.ErrOut, "%s: %v\n", args[0], e)
				}
				return silentExit(2)
			}
			fmt.Fprintf(ios.Out, "%s: ok (%d repos, %d channels, data_dir %s)\n", args[0], len(cfg.Repos), len(cfg.Channels), cfg.Daemon.DataDir)
			return nil
		},
	})
	return cmd
}

// splitJoined undoes errors.Join so each problem gets its own line.
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return []error{err}
}
