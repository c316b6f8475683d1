package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/doctor"
)

// DoctorOptions are the inputs of `aicr doctor`.
type DoctorOptions struct {
	Factory *Factory
	Repo    string
	Format  string
	// AsUser is the daemon's account (default: data_dir's owner).
	AsUser string
	// DaemonSide is set when doctor, as root, runs the daemon's checks in
	// a copy of itself switched to the daemon's account: the result file.
	DaemonSide string
}

func newCmdDoctor(f *Factory, runF func(context.Context, *DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the hook, the daemon and the daemon's access the way they really run",
		Long: `Check the installation on this host the way it really runs, and print each
finding with its fix.

The hook: for each [[repo]] of kind svn whose local_path is here, doctor checks
hooks/post-commit and the paths in its aicr block, then runs the hook with an
empty environment as the repository's owner (when run as root), with aicr
notify in a dry run that sends nothing and writes nothing to notify.log: it
loads the config, reads the secret, probes the spool directory and notify.log,
and sends the daemon a probe signed with the hook's secret, as svn's account.

The daemon: a probe (POST /v1/probe) signed with the hook's secret must be
accepted (else the two secrets differ), and the running daemon must know every
[[repo]] and run the config as it is on disk (else: reload it).

The daemon's side, as the daemon's account (--as-user, default the owner of
data_dir; as root doctor runs these as that account): data_dir owned and
writable, every *_file the daemon reads readable, each repository readable with
its credentials (svn info at HEAD; p4 login -s and the depot paths), and
minimum versions of svn, p4, podman and the agent CLI.

The exit status is 0 when no check failed (warnings do not fail), 1 when any
failed, 2 on a bad config or flag.`,
		Example: `  sudo aicr doctor --config /etc/aicr/aicr.toml
  sudo aicr doctor --config /etc/aicr/aicr.toml --repo main --format json
  sudo aicr doctor --config /etc/aicr/aicr.toml --as-user aicr`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if opts.DaemonSide != "" {
				return doctor.RunDaemonSide(cmd.Context(), f.ConfigPath, opts.Repo, opts.DaemonSide)
			}
			return doctorRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "check only this [[repo]] (by name)")
	cmd.Flags().StringVar(&opts.AsUser, "as-user", "", "the account the daemon runs as (default: the owner of data_dir)")
	cmd.Flags().StringVar(&opts.DaemonSide, "daemon-side", "", "")
	_ = cmd.Flags().MarkHidden("daemon-side")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func doctorRun(ctx context.Context, opts *DoctorOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	// Used only when the hook cannot be run; a missing path just skips
	// that fallback.
	exe, _ := f.Executable()
	// The one call into package doctor's entry point (renamed
	// doctor.Check by the composition-root work).
	rep, err := doctor.Diagnose(ctx, doctor.Options{Config: cfg, Repo: opts.Repo, Exe: exe, Version: version, AsUser: opts.AsUser})
	if errors.Is(err, doctor.ErrUnknownRepo) {
		return asUsage(err)
	}
	if err != nil {
		return err
	}
	err = newExporter(f.IOStreams, opts.Format).Write(rep, func(w io.Writer) error {
		doctor.WriteText(w, rep)
		return nil
	})
	if err != nil {
		return err
	}
	if !rep.OK {
		return errSilentFailure
	}
	return nil
}

// notifySVNCheck is `aicr notify svn` in dry run (doctor set
// triggers.NotifyCheckEnv to resultPath): it records what a real
// notification would run into and sends nothing.
func notifySVNCheck(ctx context.Context, ios *IOStreams, resultPath, configPath, repoName string, args []string) {
	reposPath := ""
	if len(args) > 0 {
		reposPath = args[0]
	}
	checks := doctor.CheckNotify(ctx, doctor.NotifyCheckOptions{ConfigPath: configPath, RepoName: repoName, ReposPath: reposPath, Stderr: ios.ErrOut})
	// Nothing goes to stderr, which in the hook is notify.log: a dry run
	// must leave the hook's log to real commits. Only a result that cannot
	// be handed back is worth a line there, since doctor then has no
	// other way to learn why.
	if err := doctor.WriteResult(resultPath, checks); err != nil {
		fmt.Fprintln(ios.ErrOut, "aicr notify: dry run for aicr doctor: cannot hand back the result:", err)
	}
}
