package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/findings"
)

// MCPAdminOptions are the inputs of `aicr mcp admin`.
type MCPAdminOptions struct {
	Factory  *Factory
	ReadOnly bool
}

func newCmdMCPAdmin(f *Factory, runF func(context.Context, *MCPAdminOptions) error) *cobra.Command {
	opts := &MCPAdminOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Serve the admin tools over MCP (stdio) for an operator's coding agent",
		Long: `Serve aicr's admin tools over MCP on stdin/stdout (newline-delimited JSON-RPC;
stdout carries the protocol only, diagnostics go to stderr), for the coding
agent an operator already uses (aicr mcp install prints the registration).

Read-only: runs_list, run_inspect, dispatch_list, queue_status, doctor,
config_check, findings_list, findings_show, findings_stats. Mutating,
two-phase: run_retry, dispatch_retry, run_cancel, repo_pause, repo_resume,
prune, findings_dismiss, findings_reopen — without confirm: true they return the plan
and write nothing; with it the plan is rebuilt from the current state,
applied and read back. Every tool has typed input and output schemas, and its
structured content is the --format json output of the matching CLI verb.
Failures are {code, message, remedy} with isError.

The config is read at every call. Run it as the data_dir's owner for the
mutations; --read-only refuses them (POLICY_BLOCKED) and still shows plans.`,
		Example: `  aicr mcp admin --config /etc/aicr/aicr.toml
  claude mcp add aicr-admin -- sudo -u aicr aicr mcp admin --config /etc/aicr/aicr.toml
  (a client running as root: runuser -u aicr -- aicr mcp admin ...; Debian installs no sudo)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return mcpAdminRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().BoolVar(&opts.ReadOnly, "read-only", false, "refuse every mutation (plans are still shown)")
	return cmd
}

func mcpAdminRun(ctx context.Context, opts *MCPAdminOptions) error {
	f := opts.Factory
	d := adminDeps(f, "mcp admin")
	d.ReadOnly = opts.ReadOnly
	d.Via = findings.ViaMCP
	a := admin.New(d)
	ios := f.IOStreams
	return admin.Serve(ctx, a, version, ios.In, ios.Out, ios.ErrOut)
}
