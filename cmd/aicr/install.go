package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

func newInstallCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install hooks and triggers on the VCS server",
	}
	cmd.AddCommand(newInstallSVNHookCmd(ios), newInstallP4TriggerCmd(ios))
	return cmd
}

func newInstallSVNHookCmd(ios *IOStreams) *cobra.Command {
	var reposPath, configPath, name, aicrPath string
	var windows bool
	cmd := &cobra.Command{
		Use:   "svn-hook",
		Short: "Write the post-commit hook of an SVN repository",
		Long: `Write hooks/post-commit of an SVN repository so every commit is handed to the
daemon. The hook uses absolute paths and its own LC_ALL (svn runs hooks with an
empty environment), detaches so the committer never waits, and always exits 0.
An existing post-commit hook is kept: the aicr block sits between marker
comments and is replaced in place when you install again. The spool directory
is created writable by the repository's owner.

With --windows it writes hooks/post-commit.cmd for VisualSVN-style Windows
servers instead: absolute paths, set LC_ALL, start "" /b detached, exit /b 0,
between REM >>> aicr post-commit >>> markers.`,
		Example: `  sudo aicr install svn-hook --repo /srv/svn/main --config /etc/aicr/aicr.toml
  aicr install svn-hook --windows --repo C:\Repositories\main --config C:\aicr\aicr.toml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			absRepos, err := filepath.Abs(reposPath)
			if err != nil {
				return err
			}
			if name == "" {
				repo, ok := cfg.RepoForPath(absRepos)
				if !ok {
					return &exitError{code: 2, err: fmt.Errorf("no [[repo]] in %s has local_path = %q or url = \"file://%s\"; add one or pass --name", cfg.Path, absRepos, absRepos)}
				}
				name = repo.Name
			} else if repo, ok := cfg.Repo(name); !ok {
				return &exitError{code: 2, err: fmt.Errorf("--name %q: no such [[repo]] in %s", name, cfg.Path)}
			} else if lp, ok := repo.Settings.(vcs.LocalPather); ok && lp.LocalRepoPath() != "" && !triggers.SameRepoPath(lp.LocalRepoPath(), absRepos) {
				// The hook will refuse every commit (it checks REPOS_PATH
				// against local_path), so say so now.
				fmt.Fprintf(ios.ErrOut, "warning: repo %q has local_path = %q, not %s: the hook will refuse this repository's commits (they would be reviewed as %q's revisions); pass the right --name or fix local_path\n", name, lp.LocalRepoPath(), absRepos, name)
			}
			if aicrPath == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("find the aicr binary: %w (pass --aicr PATH)", err)
				}
				aicrPath = exe
			}
			if _, err := cfg.NotifySecret(); err != nil {
				fmt.Fprintf(ios.ErrOut, "warning: %v; the hook will spool events until the secret is readable by the repository's owner\n", err)
			} else if cfg.Notify.SecretFile == "" {
				fmt.Fprintln(ios.ErrOut, "warning: [notify] uses secret_env, but svn runs hooks with an empty environment; use secret_file for the hook")
			}
			path, err := triggers.InstallSVNHook(triggers.SVNHookOptions{
				ReposPath:  absRepos,
				AicrPath:   aicrPath,
				ConfigPath: cfg.Path,
				RepoName:   name,
				SpoolDir:   cfg.Notify.SpoolDir,
				Windows:    windows,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(ios.Out, "installed %s (repo %q, spool %s)\n", path, name, cfg.Notify.SpoolDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&reposPath, "repo", "", "path of the SVN repository on this server (required)")
	addConfigFlag(cmd, &configPath)
	cmd.Flags().StringVar(&name, "name", "", "repo name in the config (default: found by local_path/url)")
	cmd.Flags().StringVar(&aicrPath, "aicr", "", "absolute path of the aicr binary the hook runs (default: this binary)")
	cmd.Flags().BoolVar(&windows, "windows", false, "write post-commit.cmd for a Windows server (VisualSVN)")
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}
