package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/config"
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
	// All and Parent: every repository directory under Parent (an
	// SVNParentPath), each matched to its [[repo]] by local_path.
	All    bool
	Parent string
	// Name is the [[repo]]; empty: found by local_path/url.
	Name string
	// AicrPath is the binary the hook runs (aicr or aicr-notify); empty:
	// the aicr-notify beside this binary, else this binary.
	AicrPath string
	Windows  bool
	// Force replaces a symlinked hook with a file.
	Force  bool
	Format string
}

func newCmdInstallSVNHook(f *Factory, runF func(context.Context, *InstallSVNHookOptions) error) *cobra.Command {
	opts := &InstallSVNHookOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "svn-hook (--repo PATH | --all --parent DIR)",
		Short: "Write the post-commit hook of an SVN repository",
		Long: `Write hooks/post-commit of an SVN repository so every commit is handed to the
daemon. The hook runs aicr-notify (the hook client alone, which starts much
faster) when it is installed beside aicr, else aicr notify svn. It uses absolute paths and its own LC_ALL (svn runs hooks with an
empty environment), detaches so the committer never waits, and always exits 0.
The binary's path is written as you ran it (or as --aicr gives it), symlinks
kept, so /usr/local/bin/aicr linked to a versioned install keeps working
across upgrades.

An existing post-commit hook is kept: the aicr block sits between marker
comments and is replaced in place when you install again. A hook written in
another language (python, perl, a binary) is never edited: the block goes into
hooks/post-commit.aicr and the exact line to add to your hook is printed. A
hook that is a symlink (one script shared by many repositories) is refused
with the reason; --force replaces the link with a copy of its target plus the
aicr block. The spool directory is created writable by the repository's owner.

With --all --parent DIR (an Apache SVNParentPath) every repository directly
under DIR gets its hook, named by the [[repo]] whose local_path is that
directory; each is reported (installed, paste, skipped, failed) and the exit
status is 1 when any failed.

With --windows it writes hooks/post-commit.cmd for VisualSVN-style Windows
servers instead: absolute paths, set LC_ALL, start "" /b detached, exit /b 0,
between REM >>> aicr post-commit >>> markers.`,
		Example: `  sudo aicr install svn-hook --repo /srv/svn/main --config /etc/aicr/aicr.toml
  sudo aicr install svn-hook --all --parent /srv/svn
  aicr install svn-hook --windows --repo C:\Repositories\main --config C:\aicr\aicr.toml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if err := opts.check(); err != nil {
				return &usageError{err: err, hint: cmd.CommandPath() + " --help"}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if opts.All {
				return installSVNHooksRun(cmd.Context(), opts)
			}
			return installSVNHookRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.ReposPath, "repo", "", "path of the SVN repository on this server")
	fl.BoolVar(&opts.All, "all", false, "install into every repository under --parent")
	fl.StringVar(&opts.Parent, "parent", "", "directory holding the repositories (SVNParentPath), with --all")
	addConfigFlag(cmd, f)
	fl.StringVar(&opts.Name, "name", "", "repo name in the config (default: found by local_path/url)")
	fl.StringVar(&opts.AicrPath, "aicr", "", "absolute path of the aicr or aicr-notify binary the hook runs (default: the aicr-notify beside this binary, else this binary, as invoked)")
	fl.BoolVar(&opts.Windows, "windows", false, "write post-commit.cmd for a Windows server (VisualSVN)")
	fl.BoolVar(&opts.Force, "force", false, "replace a symlinked post-commit with a file (its target's lines plus the aicr block)")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// check refuses flag combinations that do not say which repositories.
func (o *InstallSVNHookOptions) check() error {
	switch {
	case o.All && o.ReposPath != "":
		return fmt.Errorf("--repo and --all: give one repository or all under --parent, not both")
	case o.All && o.Parent == "":
		return fmt.Errorf("--all needs --parent DIR, the directory holding the repositories (SVNParentPath)")
	case o.All && o.Name != "":
		return fmt.Errorf("--name names one repository; with --all each is found by its local_path")
	case !o.All && o.Parent != "":
		return fmt.Errorf("--parent goes with --all")
	case !o.All && o.ReposPath == "":
		return fmt.Errorf(`required flag "repo" not set: pass --repo PATH, or --all --parent DIR`)
	}
	return nil
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
	// PasteInto/PasteLine: the hook is in another language; the block is
	// in Hook and PasteLine must be added to PasteInto.
	PasteInto     string `json:"paste_into,omitempty"`
	PasteLine     string `json:"paste_line,omitempty"`
	Language      string `json:"language,omitempty"`
	AlreadyCalled bool   `json:"already_called,omitempty"`
}

func installSVNHookRun(_ context.Context, opts *InstallSVNHookOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	aicrPath, err := hookBinary(f, opts.AicrPath)
	if err != nil {
		return err
	}
	res, err := installOneSVNHook(cfg, opts, opts.ReposPath, opts.Name, aicrPath, f.IOStreams.ErrOut)
	if err != nil {
		return err
	}
	return newExporter(f.IOStreams, opts.Format).Write(res, func(w io.Writer) error {
		return printInstalled(w, res)
	})
}

func printInstalled(w io.Writer, res installSVNHookOutput) error {
	if res.PasteInto == "" {
		_, err := fmt.Fprintf(w, "installed %s (repo %q, spool %s)\n", res.Hook, res.Repo, res.SpoolDir)
		return err
	}
	if res.AlreadyCalled {
		_, err := fmt.Fprintf(w, "installed %s (repo %q, spool %s); %s already calls it\n", res.Hook, res.Repo, res.SpoolDir, res.PasteInto)
		return err
	}
	_, err := fmt.Fprintf(w, "wrote %s (repo %q, spool %s), but %s is a %s hook, so aicr did not edit it.\n"+
		"Add this line to %s; nothing is reviewed until you do:\n\n    %s\n\n",
		res.Hook, res.Repo, res.SpoolDir, res.PasteInto, res.Language, res.PasteInto, res.PasteLine)
	return err
}

// installOneSVNHook installs the hook of one repository; warnings go to
// errOut and into the result.
func installOneSVNHook(cfg *config.Config, opts *InstallSVNHookOptions, reposPath, name, aicrPath string, errOut io.Writer) (installSVNHookOutput, error) {
	res := installSVNHookOutput{Repo: name, Aicr: aicrPath, Config: cfg.Path, SpoolDir: cfg.Notify.SpoolDir, Warnings: []string{}}
	absRepos, err := filepath.Abs(reposPath)
	if err != nil {
		return res, err
	}
	warn := func(format string, args ...any) {
		w := fmt.Sprintf(format, args...)
		fmt.Fprintln(errOut, "warning: "+w)
		res.Warnings = append(res.Warnings, w)
	}
	if res.Repo == "" {
		repo, ok := cfg.RepoForPath(absRepos)
		if !ok {
			return res, usageErrorf("no [[repo]] in %s has local_path = %q or url = \"file://%s\"; add one or pass --name", cfg.Path, absRepos, absRepos)
		}
		res.Repo = repo.Name
	} else if repo, ok := cfg.Repo(res.Repo); !ok {
		return res, usageErrorf("--name %q: no such [[repo]] in %s; configured: %s", res.Repo, cfg.Path, strings.Join(cfg.RepoNames(), ", "))
	} else if lp, ok := repo.Settings.(vcs.LocalPather); ok && lp.LocalRepoPath() != "" && !triggers.SameRepoPath(lp.LocalRepoPath(), absRepos) {
		// The hook will refuse every commit (it checks REPOS_PATH
		// against local_path), so say so now.
		warn("repo %q has local_path = %q, not %s: the hook will refuse this repository's commits (they would be reviewed as %q's revisions); pass the right --name or fix local_path", res.Repo, lp.LocalRepoPath(), absRepos, res.Repo)
	}
	if _, err := cfg.NotifySecret(); err != nil {
		warn("%v; the hook will spool events until the secret is readable by the repository's owner", err)
	} else if cfg.Notify.SecretFile == "" {
		warn("[notify] uses secret_env, but svn runs hooks with an empty environment; use secret_file for the hook")
	}
	hook, err := triggers.InstallSVNHookOrHelper(triggers.SVNHookOptions{
		ReposPath:  absRepos,
		AicrPath:   aicrPath,
		ConfigPath: cfg.Path,
		RepoName:   res.Repo,
		SpoolDir:   cfg.Notify.SpoolDir,
		Windows:    opts.Windows,
		Force:      opts.Force,
	})
	if err != nil {
		return res, err
	}
	res.Hook, res.PasteInto, res.PasteLine, res.Language, res.AlreadyCalled = hook.Hook, hook.PasteInto, hook.PasteLine, hook.Language, hook.AlreadyCalled
	return res, nil
}

// hookBinary is the binary a hook or trigger runs: --aicr as given, else
// the aicr-notify beside this binary, else this binary.
func hookBinary(f *Factory, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	exe, err := f.Executable()
	if err != nil {
		return "", fmt.Errorf("find the aicr binary: %w (pass --aicr PATH)", err)
	}
	exe = invokedPath(exe, os.Args[0])
	// svn waits for the hook; aicr-notify starts in a fraction of
	// aicr's time because it links only the client.
	if n, ok := triggers.NotifierBeside(exe); ok {
		return n, nil
	}
	return exe, nil
}

// invokedPath is exe (os.Executable, symlinks resolved on Linux) spelled
// the way the operator ran it, when argv0 names the same file: a hook
// that runs /usr/local/bin/aicr keeps working after that link moves to
// the next release's directory, one that runs /opt/aicr-1.2/aicr does not.
func invokedPath(exe, argv0 string) string {
	p := argv0
	if !strings.ContainsRune(argv0, filepath.Separator) {
		found, err := exec.LookPath(argv0)
		if err != nil {
			return exe
		}
		p = found
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return exe
	}
	a, errA := os.Stat(p)
	b, errB := os.Stat(exe)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return exe
	}
	return p
}
