package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

func newNotifyCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Hand a commit to the daemon (run by hooks and triggers)",
		Long: `Hand a commit to the daemon. Hooks and triggers run this; it returns within
about two seconds and always exits 0 so a commit is never blocked. If the
daemon cannot be reached the event is written to the spool directory and
sent later.`,
	}
	cmd.AddCommand(newNotifySVNCmd(ios), newNotifyP4Cmd(ios))
	return cmd
}

func newNotifySVNCmd(ios *IOStreams) *cobra.Command {
	var configPath, repoName string
	cmd := &cobra.Command{
		Use:   "svn REPOS_PATH REV [TXN]",
		Short: "Notify the daemon of an SVN revision (the post-commit hook client)",
		Long: `Notify the daemon of an SVN revision. The post-commit hook written by
'aicr install svn-hook' calls this with the hook's arguments. Errors are
reported on stderr only and the exit status is always 0.`,
		Example: `  aicr notify svn --config /etc/aicr/aicr.toml /srv/svn/main 42`,
		// A hook must never fail the commit, not even on a usage error.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// aicr doctor's dry run; an environment variable because the
			// hook forwards only svn's arguments (see NotifyCheckEnv).
			if result := os.Getenv(triggers.NotifyCheckEnv); result != "" {
				notifySVNCheck(cmd.Context(), ios, result, configPath, repoName, args)
				return nil
			}
			if err := notifySVN(cmd, ios, configPath, repoName, args); err != nil {
				fmt.Fprintln(ios.ErrOut, "aicr notify:", err)
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintln(ios.ErrOut, "aicr notify:", err)
		return silentExit(0)
	})
	addConfigFlag(cmd, &configPath)
	cmd.Flags().StringVar(&repoName, "repo", "", "repo name from the config (default: the [[repo]] whose local_path or file:// url is REPOS_PATH)")
	return cmd
}

func notifySVN(cmd *cobra.Command, ios *IOStreams, configPath, repoName string, args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("usage: aicr notify svn REPOS_PATH REV [TXN] (got %d arguments)", len(args))
	}
	reposPath, rev := args[0], args[1]
	if n, err := strconv.ParseInt(rev, 10, 64); err != nil || n < 1 {
		return fmt.Errorf("revision %q is not a positive integer", rev)
	}
	cfg, err := daemon.LoadConfig(configPath)
	if err != nil {
		return fmt.Errorf("event for %s r%s not sent: %w", reposPath, rev, err)
	}
	if repoName == "" {
		repo, ok := cfg.RepoForPath(reposPath)
		if !ok {
			return fmt.Errorf("event for %s r%s not sent: no [[repo]] has local_path or url file://%s; pass --repo NAME in the hook", reposPath, rev, strings.TrimPrefix(reposPath, "/"))
		}
		repoName = repo.Name
	}
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
	clientCfg, err := notifyClientConfig(cfg)
	if err != nil {
		// Without a secret the daemon would refuse the event; spool it so
		// it is sent once the secret is configured.
		fmt.Fprintln(ios.ErrOut, "aicr notify:", err)
	}
	triggers.Notify(cmd.Context(), clientCfg, ev, ios.ErrOut)
	return nil
}

func notifyClientConfig(cfg *daemon.Config) (triggers.ClientConfig, error) {
	secret, err := cfg.NotifySecret()
	return triggers.ClientConfig{
		URL:       cfg.Notify.URL,
		Secret:    secret,
		SpoolDir:  cfg.Notify.SpoolDir,
		Timeout:   cfg.Notify.Timeout,
		ResendMax: cfg.Notify.ResendMax,
	}, err
}
