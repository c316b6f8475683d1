package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
)

// Execute runs the CLI; exitCode maps what it returned to the status.
func Execute(ctx context.Context, args []string, ios *IOStreams) int {
	f := NewFactory(ios)
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	return exitCode(root.ExecuteContext(ctx), f.IOStreams.ErrOut)
}

// newRootCmd builds the command tree. It takes no context: the one
// Execute has reaches every command through cobra (ExecuteContext, then
// cmd.Context() in each RunE).
//
//nolint:contextcheck // see above: the context flows through cobra, which the linter cannot follow
func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "aicr",
		Short: "AI code review for Perforce and Subversion",
		Long:  "aicr reviews every Subversion revision and Perforce changelist with an AI agent and posts the findings to your team's chat.",
	}
	root.AddCommand(
		newCmdVersion(f, nil),
		newCmdDaemon(f, nil),
		newCmdNotify(f),
		newCmdInstall(f),
		newCmdUninstall(f),
		newCmdReview(f),
		newCmdRun(f),
		newCmdMCP(f),
		newCmdAudit(f),
		newCmdConfig(f),
		newCmdChannel(f),
		newCmdDispatch(f),
		newCmdDemo(f, nil),
		newCmdDoctor(f, nil),
		newCmdAgent(f),
		newCmdDB(f),
		newCmdSpool(f),
		newCmdRepo(f),
		newCmdQueue(f),
		newCmdPrune(f, nil),
		newCmdSession(f),
		newCmdReload(f, nil),
		newCmdFindings(f),
		newCmdDigest(f),
		newCmdEval(f, nil),
	)
	setRootVersion(root)
	wireUsageErrors(root)
	withAgentInHelp(root, f)
	return root
}

// wireUsageErrors makes every way of calling a command wrongly a
// usageError: bad flags, bad arguments, missing required flags, unknown
// verbs. Errors are printed by exitCode, not cobra.
func wireUsageErrors(root *cobra.Command) {
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{err: err, hint: cmd.CommandPath() + " --help"}
	})
	// Required flags are checked here, after the arguments and before
	// cobra's own check, so a missing one is a usage error too.
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return &usageError{err: err, hint: cmd.CommandPath() + " --help"}
		}
		return nil
	}
	usageOnBadArgs(root)
}

// usageOnBadArgs makes every argument mistake a usage error: each
// command's argument check, and a group command (aicr, aicr audit)
// given a verb it does not have.
func usageOnBadArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		usageOnBadArgs(c)
	}
	if cmd.Runnable() {
		if check := cmd.Args; check != nil {
			cmd.Args = func(c *cobra.Command, args []string) error {
				if err := check(c, args); err != nil {
					return &usageError{err: err, hint: c.CommandPath() + " --help"}
				}
				return nil
			}
		}
		return
	}
	if !cmd.HasSubCommands() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return &usageError{err: fmt.Errorf("%s", msg), hint: c.CommandPath() + " --help"}
	}
}

// addConfigFlag binds --config to the factory's ConfigPath. The usage
// text names the default (it depends on $AICR_CONFIG), so pflag's own
// "(default …)" is turned off by an empty DefValue.
func addConfigFlag(cmd *cobra.Command, f *Factory) {
	cmd.Flags().StringVar(&f.ConfigPath, "config", triggers.ConfigPath(), triggers.ConfigFlagUsage)
	cmd.Flags().Lookup("config").DefValue = ""
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, usageErrorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
