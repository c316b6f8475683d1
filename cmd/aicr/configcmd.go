package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/im"
)

func newConfigCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with aicr config files",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config file",
		Long: `Validate a config file the way the daemon loads it. Every problem is printed
as file:line: message and the exit status is 2 when there is any.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := daemon.LoadConfig(args[0])
			if err != nil {
				fmt.Fprintln(ios.ErrOut, err)
				return silentExit(2)
			}
			// Channel secrets are read at send time, so an unreadable one
			// is a warning here, not a load error.
			for _, ch := range cfg.Channels {
				if sc, ok := ch.Settings.(im.SecretChecker); ok {
					if err := sc.CheckSecrets(filepath.Dir(cfg.Path)); err != nil {
						fmt.Fprintf(ios.ErrOut, "warning: channel %q: %v\n", ch.Name, err)
					}
				}
			}
			fmt.Fprintf(ios.Out, "%s: ok (%d repos, %d channels, data_dir %s)\n", args[0], len(cfg.Repos), len(cfg.Channels), cfg.Daemon.DataDir)
			return nil
		},
	})
	return cmd
}
