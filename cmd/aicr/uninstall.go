package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
)

func newCmdUninstall(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove hooks and triggers from the VCS server",
	}
	cmd.AddCommand(newCmdUninstallSVNHook(f, nil))
	return cmd
}

// UninstallSVNHookOptions are the inputs of `aicr uninstall svn-hook`.
type UninstallSVNHookOptions struct {
	IO        *IOStreams
	ReposPath string
	Windows   bool
	Format    string
}

func newCmdUninstallSVNHook(f *Factory, runF func(context.Context, *UninstallSVNHookOptions) error) *cobra.Command {
	opts := &UninstallSVNHookOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "svn-hook",
		Short: "Remove the aicr block from an SVN repository's post-commit hook",
		Long: `Remove the aicr block (between its marker comments) from hooks/post-commit,
or hooks/post-commit.cmd with --windows. The rest of the hook is kept; a hook
that held nothing but the aicr block is deleted. Nothing to remove is not an
error. A symlinked hook holding the block is not rewritten (that would replace
the link): edit its target by hand. The helper script a python/perl/binary
hook calls (hooks/post-commit.aicr) is deleted, or, while that hook still
calls it, emptied to a script that does nothing; remove the line from your
hook, then the file.`,
		Example: `  sudo aicr uninstall svn-hook --repo /srv/svn/main`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return uninstallSVNHookRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.ReposPath, "repo", "", "path of the SVN repository on this server (required)")
	cmd.Flags().BoolVar(&opts.Windows, "windows", false, "edit post-commit.cmd (Windows server)")
	addFormatFlag(cmd, &opts.Format)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

// uninstallOutput is `aicr uninstall svn-hook --format json`: the hook
// the aicr block is no longer in.
type uninstallOutput struct {
	Hook string `json:"hook"`
	// StillCalledFrom: a foreign hook still calls the (now inert) helper.
	StillCalledFrom string `json:"still_called_from,omitempty"`
	// Outcome: removed-file, removed-block, no-block or no-hook.
	Outcome string `json:"outcome"`
}

func uninstallSVNHookRun(_ context.Context, opts *UninstallSVNHookOptions) error {
	outcome, err := triggers.UninstallSVNHookOutcome(opts.ReposPath, opts.Windows)
	if err != nil {
		return err
	}
	res := uninstallOutput{Hook: triggers.SVNHookPath(opts.ReposPath, opts.Windows), Outcome: outcome}
	if !opts.Windows && triggers.HelperStillCalled(opts.ReposPath) {
		res.StillCalledFrom = res.Hook
		res.Hook = triggers.SVNHelperPath(opts.ReposPath)
	}
	return newExporter(opts.IO, opts.Format).Write(res, func(w io.Writer) error {
		if res.StillCalledFrom != "" {
			_, err := fmt.Fprintf(w, "%s now does nothing; remove the line calling it from %s, then delete it\n", res.Hook, res.StillCalledFrom)
			return err
		}
		var err error
		switch res.Outcome {
		case triggers.UninstallRemovedFile:
			_, err = fmt.Fprintf(w, "removed %s: it held only the aicr block\n", res.Hook)
		case triggers.UninstallNoHook:
			_, err = fmt.Fprintf(w, "no hook at %s: nothing to remove\n", res.Hook)
		case triggers.UninstallNoBlock:
			_, err = fmt.Fprintf(w, "%s has no aicr block: left as it was\n", res.Hook)
		default:
			_, err = fmt.Fprintf(w, "removed the aicr block from %s; the rest of the hook is kept\n", res.Hook)
		}
		return err
	})
}
