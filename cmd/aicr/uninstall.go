package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
)

func newUninstallCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove hooks and triggers from the VCS server",
	}
	cmd.AddCommand(newUninstallSVNHookCmd(ios))
	return cmd
}

func newUninstallSVNHookCmd(ios *IOStreams) *cobra.Command {
	var reposPath string
	var windows bool
	cmd := &cobra.Command{
		Use:   "svn-hook",
		Short: "Remove the aicr block from an SVN repository's post-commit hook",
		Long: `Remove the aicr block (between its marker comments) from hooks/post-commit,
or hooks/post-commit.cmd with --windows. The rest of the hook is kept; a hook
that held nothing but the aicr block is deleted. Nothing to remove is not an
error.`,
		Example: `  sudo aicr uninstall svn-hook --repo /srv/svn/main`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			uninstall := triggers.UninstallSVNHook
			if windows {
				uninstall = triggers.UninstallSVNCmdHook
			}
			if err := uninstall(reposPath); err != nil {
				return err
			}
			fmt.Fprintf(ios.Out, "removed the aicr block from %s\n", triggers.SVNHookPath(reposPath, windows))
			return nil
		},
	}
	cmd.Flags().StringVar(&reposPath, "repo", "", "path of the SVN repository on this server (required)")
	cmd.Flags().BoolVar(&windows, "windows", false, "edit post-commit.cmd (Windows server)")
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}
