package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
)

func newCmdConfig(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with aicr config files",
	}
	cmd.AddCommand(newCmdConfigCheck(f, nil))
	return cmd
}

// ConfigCheckOptions are the inputs of `aicr config check`.
type ConfigCheckOptions struct {
	IO     *IOStreams
	Path   string
	Format string
}

func newCmdConfigCheck(f *Factory, runF func(context.Context, *ConfigCheckOptions) error) *cobra.Command {
	opts := &ConfigCheckOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a config file",
		Long: `Validate a config file the way the daemon loads it, and run every check the
daemon makes before it starts (listen address, signing secret, schedules).
The file is FILE when given, else --config, else $AICR_CONFIG, else
/etc/aicr/aicr.toml, as for every other command.
Every problem is printed as file:line: message and the exit status is 2 when
there is any. Warnings (a secret file every user can read) go to stderr.`,
		Example: `  aicr config check
  aicr config check --config /etc/aicr/aicr.toml
  AICR_CONFIG=/etc/aicr/aicr.toml aicr config check --format json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.Path = f.ConfigPath
			if len(args) == 1 {
				if cmd.Flags().Changed("config") && args[0] != f.ConfigPath {
					return &usageError{err: fmt.Errorf("config check: FILE %q and --config %q name different files; give one", args[0], f.ConfigPath), hint: cmd.CommandPath() + " --help"}
				}
				opts.Path = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return configCheckRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// configCheckOutput is `aicr config check --format json`, the admin
// tool config_check's result. Errors and warnings are also printed on
// stderr as in text mode.
type configCheckOutput = admin.ConfigCheckOutput

func configCheckRun(_ context.Context, opts *ConfigCheckOptions) error {
	out := newExporter(opts.IO, opts.Format)
	res := admin.CheckConfig(opts.Path)
	// Each error already names the file (and line, for a load error).
	for _, e := range res.Errors {
		fmt.Fprintln(opts.IO.ErrOut, e)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "%s: warning: %s\n", opts.Path, w)
	}
	err := out.Write(res, func(w io.Writer) error {
		if res.OK {
			_, err := fmt.Fprintf(w, "%s: ok (%d repos, %d channels, data_dir %s)\n", opts.Path, res.Repos, res.Channels, res.DataDir)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !res.OK {
		return errSilentUsage
	}
	return nil
}
