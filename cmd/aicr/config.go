package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
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

// configCheckOutput is `aicr config check --format json`. Errors and
// warnings are also printed on stderr as in text mode.
type configCheckOutput struct {
	File     string   `json:"file"`
	OK       bool     `json:"ok"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
	Repos    int      `json:"repos"`
	Channels int      `json:"channels"`
	DataDir  string   `json:"data_dir,omitempty"`
}

func configCheckRun(_ context.Context, opts *ConfigCheckOptions) error {
	out := newExporter(opts.IO, opts.Format)
	res := configCheckOutput{File: opts.Path, Errors: []string{}, Warnings: []string{}}
	cfg, err := daemon.LoadConfig(opts.Path)
	if err != nil {
		// LoadConfig's message already names file:line for each problem.
		fmt.Fprintln(opts.IO.ErrOut, err)
		for _, e := range splitJoined(err) {
			res.Errors = append(res.Errors, e.Error())
		}
	} else {
		res.Repos, res.Channels, res.DataDir = len(cfg.Repos), len(cfg.Channels), cfg.Daemon.DataDir
		warnings, err := daemon.Preflight(cfg)
		for _, w := range warnings {
			fmt.Fprintf(opts.IO.ErrOut, "%s: warning: %s\n", opts.Path, w)
			res.Warnings = append(res.Warnings, w)
		}
		for _, e := range splitJoined(err) {
			fmt.Fprintf(opts.IO.ErrOut, "%s: %v\n", opts.Path, e)
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", opts.Path, e))
		}
	}
	res.OK = len(res.Errors) == 0
	err = out.Write(res, func(w io.Writer) error {
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

// splitJoined undoes errors.Join so each problem gets its own line.
func splitJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return []error{err}
}
