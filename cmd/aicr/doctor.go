package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/doctor"
)

// doctorOptions is what `aicr doctor` was asked.
type doctorOptions struct {
	ConfigPath string
	Repo       string
	Format     string
}

func newDoctorCmd(ios *IOStreams) *cobra.Command {
	var opts doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Run each SVN hook the way svn does and report what would fail",
		Long: `Check the installation on this host the way it really runs. For each
[[repo]] of kind svn whose local_path is here, doctor checks hooks/post-commit
and the paths in its aicr block, then runs the hook with an empty environment
as the repository's owner (when run as root), with aicr notify in dry run: it
loads the config, reads the secret, writes a probe into the spool directory,
appends to notify.log and asks the daemon's /healthz as svn's account would,
and sends nothing. doctor also asks the daemon itself and checks the svn,
svnlook and p4 clients.

Each check prints ✓ or ✗ with its fix. The exit status is 0 when every check
passed, 1 when any failed, 2 on a bad config or flag.`,
		Example: `  sudo aicr doctor --config /etc/aicr/aicr.toml
  sudo aicr doctor --config /etc/aicr/aicr.toml --repo main --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return doctorRun(cmd.Context(), ios, opts)
		},
	}
	addConfigFlag(cmd, &opts.ConfigPath)
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "check only this [[repo]] (by name)")
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output format: text or json")
	return cmd
}

func doctorRun(ctx context.Context, ios *IOStreams, opts doctorOptions) error {
	if err := checkFormat(opts.Format); err != nil {
		return err
	}
	cfg, err := loadConfig(opts.ConfigPath)
	if err != nil {
		return err
	}
	// Used only when the hook cannot be run; a missing path just skips
	// that fallback.
	exe, _ := os.Executable()
	rep, err := doctor.Diagnose(ctx, doctor.Options{Config: cfg, Repo: opts.Repo, Exe: exe})
	if errors.Is(err, doctor.ErrUnknownRepo) {
		return &exitError{code: 2, err: err}
	}
	if err != nil {
		return err
	}
	if opts.Format == "json" {
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		doctor.WriteText(ios.Out, rep)
	}
	if !rep.OK {
		return silentExit(1)
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
	if err := doctor.WriteResult(resultPath, checks); err != nil {
		fmt.Fprintln(ios.ErrOut, "aicr notify: dry run for aicr doctor: cannot hand back the result:", err)
	}
	// Also in the hook's log, so the doctor run shows up there.
	fmt.Fprintf(ios.ErrOut, "aicr notify: dry run for aicr doctor, nothing sent: %s\n", doctor.Summary(checks))
}
