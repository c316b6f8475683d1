package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
)

func newCmdRepo(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "repo",
		Short: "Pause and resume reviews of a repo",
	}
	cmd.AddCommand(newCmdRepoPause(f, nil), newCmdRepoResume(f, nil))
	return cmd
}

// RepoPauseOptions are the inputs of `aicr repo pause` and `aicr repo resume`.
type RepoPauseOptions struct {
	Factory *Factory
	Input   admin.RepoPauseInput
	Format  string
}

func newCmdRepoPause(f *Factory, runF func(context.Context, *RepoPauseOptions) error) *cobra.Command {
	opts := &RepoPauseOptions{Factory: f}
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "pause NAME",
		Short: "Hold a repo's reviews; its events are still recorded and queued",
		Long: `Pause reviews of a [[repo]]: hooks, the spool and the reconciler still record
and queue its events, but no daemon starts a review of it until aicr repo resume.
A review already running finishes. aicr queue status and aicr audit list show the
held runs. Same as the admin MCP tool repo_pause. Run it as the data_dir's owner.`,
		Example: "  aicr repo pause main --reason 'svn dump/load until 14:00'\n  aicr repo pause main --dry-run",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.Input.Repo, opts.Input.Confirm = args[0], !dryRun
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return repoRun(cmd.Context(), opts.Factory, opts.Format, func(a *admin.Admin) (admin.Outcome, error) {
				return a.RepoPause(cmd.Context(), opts.Input)
			})
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Input.Reason, "reason", "", "why, shown by aicr queue status")
	addDryRunFlag(cmd, &dryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func newCmdRepoResume(f *Factory, runF func(context.Context, *RepoPauseOptions) error) *cobra.Command {
	opts := &RepoPauseOptions{Factory: f}
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "resume NAME",
		Short: "Release a paused repo's held reviews, in queue order",
		Long: `Resume a paused [[repo]]: the daemon reviews its held runs in queue order, within
its idle poll. Same as the admin MCP tool repo_resume. Run it as the data_dir's owner.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.Input.Repo, opts.Input.Confirm = args[0], !dryRun
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return repoRun(cmd.Context(), opts.Factory, opts.Format, func(a *admin.Admin) (admin.Outcome, error) {
				return a.RepoResume(cmd.Context(), admin.RepoInput{Repo: opts.Input.Repo, TwoPhase: opts.Input.TwoPhase})
			})
		},
	}
	addConfigFlag(cmd, f)
	addDryRunFlag(cmd, &dryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func repoRun(_ context.Context, f *Factory, format string, do func(*admin.Admin) (admin.Outcome, error)) error {
	out, err := do(adminFor(f, ""))
	if err != nil {
		return cliError(newExporter(f.IOStreams, format), err)
	}
	return newExporter(f.IOStreams, format).Write(out, func(w io.Writer) error { return printOutcome(w, out) })
}
