package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

func newCmdInstall(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install hooks and triggers on the VCS server",
	}
	cmd.AddCommand(newCmdInstallSVNHook(f, nil), newCmdInstallP4Trigger(f, nil))
	return cmd
}

// InstallSVNHookOptions are the inputs of `aicr install svn-hook`.
type InstallSVNHookOptions struct {
	Factory   *Factory
	ReposPath string
	// Name is the [[repo]]; empty: found by local_path/url.
	Name string
	// AicrPath is the binary the hook runs (aicr or aicr-notify); empty:
	// the aicr-notify beside this binary, else this binary.
	AicrPath string
	Windows  bool
	Format   string
}

func newCmdInstallSVNHook(f *Factory, runF func(context.Context, *InstallSVNHookOptions) error) *cobra.Command {
	opts := &InstallSVNHookOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "svn-hook",
		Short: "Write the post-commit hook of an SVN repository",
		Long: `Write hooks/post-commit of an SVN repository so every commit is handed to the
daemon. The hook runs aicr-notify (the hook client alone, which starts much
faster) when it is installed beside aicr, else aicr notify svn. It uses absolute paths and its own LC_ALL (svn runs hooks with an
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
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return installSVNHookRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.ReposPath, "repo", "", "path of the SVN repository on this server (required)")
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Name, "name", "", "repo name in the config (default: found by local_path/url)")
	cmd.Flags().StringVar(&opts.AicrPath, "aicr", "", "absolute path of the aicr or aicr-notify binary the hook runs (default: the aicr-notify beside this binary, else this binary)")
	cmd.Flags().BoolVar(&opts.Windows, "windows", false, "write post-commit.cmd for a Windows server (VisualSVN)")
	addFormatFlag(cmd, &opts.Format)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

// installSVNHookOutput is `aicr install svn-hook --format json`: what was
// written. Warnings also go to stderr.
type installSVNHookOutput struct {
	Hook     string   `json:"hook"`
	Repo     string   `json:"repo"`
	SpoolDir string   `json:"spool_dir"`
	Aicr     string   `json:"aicr"`
	Config   string   `json:"config"`
	Warnings []string `json:"warnings"`
}

func installSVNHookRun(_ context.Context, opts *InstallSVNHookOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	absRepos, err := filepath.Abs(opts.ReposPath)
	if err != nil {
		return err
	}
	res := installSVNHookOutput{Repo: opts.Name, Aicr: opts.AicrPath, Config: cfg.Path, SpoolDir: cfg.Notify.SpoolDir, Warnings: []string{}}
	warn := func(format string, args ...any) {
		w := fmt.Sprintf(format, args...)
		fmt.Fprintln(f.IOStreams.ErrOut, "warning: "+w)
		res.Warnings = append(res.Warnings, w)
	}
	if res.Repo == "" {
		repo, ok := cfg.RepoForPath(absRepos)
		if !ok {
			return usageErrorf("no [[repo]] in %s has local_path = %q or url = \"file://%s\"; add one or pass --name", cfg.Path, absRepos, absRepos)
		}
		res.Repo = repo.Name
	} else if repo, ok := cfg.Repo(res.Repo); !ok {
		return usageErrorf("--name %q: no such [[repo]] in %s", res.Repo, cfg.Path)
	} else if lp, ok := repo.Settings.(vcs.LocalPather); ok && lp.LocalRepoPath() != "" && !triggers.SameRepoPath(lp.LocalRepoPath(), absRepos) {
		// The hook will refuse every commit (it checks REPOS_PATH
		// against local_path), so say so now.
		warn("repo %q has local_path = %q, not %s: the hook will refuse this repository's commits (they would be reviewed as %q's revisions); pass the right --name or fix local_path", res.Repo, lp.LocalRepoPath(), absRepos, res.Repo)
	}
	if res.Aicr == "" {
		exe, err := f.Executable()
		if err != nil {
			return fmt.Errorf("find the aicr binary: %w (pass --aicr PATH)", err)
		}
		res.Aicr = exe
		// svn waits for the hook; aicr-notify starts in a fraction of
		// aicr's time because it links only the client.
		if n, ok := triggers.NotifierBeside(exe); ok {
			res.Aicr = n
		}
	}
	if _, err := cfg.NotifySecret(); err != nil {
		warn("%v; the hook will spool events until the secret is readable by the repository's owner", err)
	} else if cfg.Notify.SecretFile == "" {
		warn("[notify] uses secret_env, but svn runs hooks with an empty environment; use secret_file for the hook")
	}
	res.Hook, err = triggers.InstallSVNHook(triggers.SVNHookOptions{
		ReposPath:  absRepos,
		AicrPath:   res.Aicr,
		ConfigPath: cfg.Path,
		RepoName:   res.Repo,
		SpoolDir:   cfg.Notify.SpoolDir,
		Windows:    opts.Windows,
	})
	if err != nil {
		return err
	}
	return newExporter(f.IOStreams, opts.Format).Write(res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "installed %s (repo %q, spool %s)\n", res.Hook, res.Repo, res.SpoolDir)
		return err
	})
}
