package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// IOStreams is where commands read and write; tests pass buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrIsTerminal selects human-readable logs over JSON.
	ErrIsTerminal bool
}

// SystemIO is the process's real streams.
func SystemIO() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrIsTerminal: isTerminal(os.Stderr)}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// exitError carries a specific exit code up to Execute.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// silentExit ends the command with a code after it already said why.
func silentExit(code int) error { return &exitError{code: code} }

// Execute runs the CLI and maps errors to exit codes in one place.
func Execute(ctx context.Context, args []string, ios *IOStreams) int {
	root := newRootCmd(ios)
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(ios.ErrOut, "aicr:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(ios.ErrOut, "aicr:", err)
	return 1
}

func newRootCmd(ios *IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "aicr",
		Short:         "AI code review for Perforce and Subversion",
		Long:          "aicr reviews every Subversion revision and Perforce changelist with an AI agent and posts the findings to your team's chat.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCmd(ios),
		newDaemonCmd(ios),
		newNotifyCmd(ios),
		newInstallCmd(ios),
		newUninstallCmd(ios),
		newReviewCmd(ios), newRunCmd(ios),
		newMCPCmd(ios),
		newAuditCmd(ios),
		newConfigCmd(ios),
		newChannelCmd(ios), newDispatchCmd(ios),
		newDemoCmd(ios),
		newDoctorCmd(ios),
	)
	return root
}

func newVersionCmd(ios *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the aicr version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(ios.Out, "aicr %s\n", version)
			return nil
		},
	}
}

// defaultConfigPath is where commands look without --config.
func defaultConfigPath() string {
	if p := os.Getenv("AICR_CONFIG"); p != "" {
		return p
	}
	return "/etc/aicr/aicr.toml"
}

func addConfigFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "config", defaultConfigPath(), "config file (default from $AICR_CONFIG, else /etc/aicr/aicr.toml)")
}

func loadConfig(path string) (*daemon.Config, error) {
	cfg, err := daemon.LoadConfig(path)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return cfg, nil
}

func newLogger(ios *IOStreams, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if ios.ErrIsTerminal {
		return slog.New(slog.NewTextHandler(ios.ErrOut, opts))
	}
	return slog.New(slog.NewJSONHandler(ios.ErrOut, opts))
}

func parseLevel(s string) slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(s))
	return l
}

func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return &exitError{code: 2, err: fmt.Errorf("--format must be text or json, got %q", format)}
	}
	return nil
}
