package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
)

func newCmdNotify(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Hand a commit to the daemon (run by hooks and triggers)",
		Long: `Hand a commit to the daemon. Hooks and triggers run this; it returns within
about two seconds and always exits 0 so a commit is never blocked. If the
daemon cannot be reached the event is written to the spool directory and
sent later.`,
	}
	cmd.AddCommand(newCmdNotifySVN(f, nil), newCmdNotifyP4(f, nil))
	return cmd
}

// NotifySVNOptions are the inputs of `aicr notify svn`: svn's hook
// arguments as triggers.SVNNotify defines them, unchecked (a hook must
// never fail the commit, not even on a usage error).
type NotifySVNOptions struct {
	IO *IOStreams
	triggers.SVNNotify
	// CheckResult is set by aicr doctor's dry run (triggers.NotifyCheckEnv):
	// record what a notification would run into there, send nothing.
	CheckResult string
}

func newCmdNotifySVN(f *Factory, runF func(context.Context, *NotifySVNOptions) error) *cobra.Command {
	opts := &NotifySVNOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "svn REPOS_PATH REV [TXN]",
		Short: "Notify the daemon of an SVN revision (the post-commit hook client)",
		Long: `Notify the daemon of an SVN revision. The post-commit hook written by
'aicr install svn-hook' calls this with the hook's arguments. Errors are
reported on stderr only and the exit status is always 0.`,
		Example: `  aicr notify svn --config /etc/aicr/aicr.toml /srv/svn/main 42`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ConfigPath, opts.Args = f.ConfigPath, args
			// An environment variable because the hook forwards only
			// svn's arguments (see NotifyCheckEnv).
			opts.CheckResult = os.Getenv(triggers.NotifyCheckEnv)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return notifySVNRun(cmd.Context(), opts)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintln(f.IOStreams.ErrOut, "aicr notify:", err)
		return errSilentOK
	})
	addConfigFlag(cmd, f)
	opts.RegisterFlags(cmd.Flags())
	return cmd
}

// notifySVNRun reports every problem on stderr and returns nil: the
// hook's exit status is always 0.
func notifySVNRun(ctx context.Context, opts *NotifySVNOptions) error {
	opts.IO = stampedErrOut(opts.IO)
	if opts.CheckResult != "" {
		notifySVNCheck(ctx, opts.IO, opts.CheckResult, opts.ConfigPath, opts.Repo, opts.Args)
		return nil
	}
	if err := notifySVN(ctx, opts); err != nil {
		fmt.Fprintln(opts.IO.ErrOut, "aicr notify:", err)
	}
	return nil
}

func notifySVN(ctx context.Context, opts *NotifySVNOptions) error {
	return triggers.RunNotifySVN(ctx, opts.SVNNotify, opts.IO.ErrOut)
}

// stampedErrOut is ios with stderr time-stamped when it is a log file (the
// hook line's 2>>notify.log), as aicr-notify does.
func stampedErrOut(ios *IOStreams) *IOStreams {
	c := *ios
	c.ErrOut = triggers.StampLog(ios.ErrOut)
	return &c
}
