package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
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
// arguments, unchecked (a hook must never fail the commit, not even on
// a usage error).
type NotifySVNOptions struct {
	IO         *IOStreams
	ConfigPath string
	Repo       string
	Args       []string
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
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "repo name from the config (default: the [[repo]] whose local_path or file:// url is REPOS_PATH)")
	return cmd
}

// notifySVNRun reports every problem on stderr and returns nil: the
// hook's exit status is always 0.
func notifySVNRun(ctx context.Context, opts *NotifySVNOptions) error {
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
	ios, repoName, args := opts.IO, opts.Repo, opts.Args
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("usage: aicr notify svn REPOS_PATH REV [TXN] (got %d arguments)", len(args))
	}
	reposPath := args[0]
	rev, err := triggers.CanonicalRevision(args[1])
	if err != nil {
		return fmt.Errorf("event for %s not sent: %w", reposPath, err)
	}
	cfg, clientCfg := loadHookConfig(ios, opts.ConfigPath)
	ev := triggers.Event{
		V:        triggers.ProtocolVersion,
		VCS:      string(vcs.KindSVN),
		Repo:     repoName,
		Revision: rev,
		Source:   triggers.SourceTrigger,
		SentAt:   time.Now().UTC(),
	}
	if len(args) == 3 {
		ev.Txn = args[2]
	}
	if cfg.loaded {
		if repoName == "" {
			repo, ok := cfg.RepoForPath(reposPath)
			if !ok {
				ev.Repo = filepath.Base(reposPath)
				return spoolRejected(ios, clientCfg, ev, fmt.Sprintf("no [[repo]] in %s has local_path = %q; add one or pass --repo NAME in the hook", cfg.Path, reposPath))
			}
			ev.Repo = repo.Name
		} else if repo, ok := cfg.Repo(repoName); ok && repo.LocalPath != "" && !triggers.SameRepoPath(repo.LocalPath, reposPath) {
			// A hook installed with --name of another repo would have this
			// repository's commits reviewed as that repo's revisions.
			return spoolRejected(ios, clientCfg, ev, fmt.Sprintf("the hook of %s names repo %q, whose local_path is %s: the revision would be reviewed in the wrong repository; re-install the hook with the right --name (aicr install svn-hook --repo %s)", reposPath, repoName, repo.LocalPath, reposPath))
		}
	} else if repoName == "" {
		ev.Repo = filepath.Base(reposPath)
		return spoolRejected(ios, clientCfg, ev, "the config could not be read, so the repo name of "+reposPath+" is unknown; fix the config, or pass --repo NAME in the hook, then re-send this revision with aicr review")
	}
	triggers.Notify(ctx, clientCfg, ev, ios.ErrOut)
	return nil
}

// hookConfig is the lenient hook config plus whether the file was read.
type hookConfig struct {
	*triggers.HookConfig
	loaded bool
}

// loadHookConfig reads only what the hook needs, leniently, and reports
// every problem on stderr: whatever is wrong, the caller still gets a
// spool dir to keep the event in.
func loadHookConfig(ios *IOStreams, configPath string) (hookConfig, triggers.ClientConfig) {
	cfg, warnings, err := triggers.LoadHookConfig(configPath)
	for _, w := range warnings {
		fmt.Fprintf(ios.ErrOut, "aicr notify: config %s: %s\n", cfg.Path, w)
	}
	if err != nil && cfg.SpoolDir == "" {
		fmt.Fprintf(ios.ErrOut, "aicr notify: %s; no spool dir is known either (%s does not exist): fix --config in the hook\n", oneLineErr(err), triggers.DefaultSpoolDir)
	} else if err != nil {
		fmt.Fprintf(ios.ErrOut, "aicr notify: %s; events are spooled to %s until it is fixed\n", oneLineErr(err), cfg.SpoolDir)
	}
	clientCfg, secretErr := cfg.ClientConfig()
	if err != nil {
		// The URL would be a guess: spool, and let the daemon's drain or
		// the next working hook deliver it.
		clientCfg.SpoolOnly = "the config could not be read (see above), so nothing was sent"
	}
	if secretErr != nil {
		// Without a secret the daemon would refuse the event; it is
		// spooled (unsigned) so it is not lost.
		fmt.Fprintln(ios.ErrOut, "aicr notify:", secretErr)
	}
	return hookConfig{HookConfig: cfg, loaded: err == nil}, clientCfg
}

// spoolRejected keeps an event the hook refuses to send in the spool's
// rejected/ dir with the reason, so it is never lost silently.
func spoolRejected(ios *IOStreams, clientCfg triggers.ClientConfig, ev triggers.Event, reason string) error {
	spool := triggers.Spool{Dir: clientCfg.SpoolDir, Secret: clientCfg.Secret}
	name, err := spool.Write(ev)
	if err == nil {
		err = spool.Reject(name, reason)
	}
	if err != nil {
		return fmt.Errorf("%s r%s NOT RECORDED: %s; keeping it in %s failed: %w", ev.Repo, ev.Revision, reason, clientCfg.SpoolDir, err)
	}
	fmt.Fprintf(ios.ErrOut, "aicr notify: %s r%s not sent: %s; kept in %s\n", ev.Repo, ev.Revision, reason, spool.Path(triggers.RejectedDir))
	return nil
}

func oneLineErr(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
