package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/agent/cli"
)

// AgentInstallOptions are the inputs of `aicr agent install`.
type AgentInstallOptions struct {
	Factory  *Factory
	Kind     string
	Version  string
	Dir      string
	Registry string
	Force    bool
	Format   string
}

func newCmdAgentInstall(f *Factory, runF func(context.Context, *AgentInstallOptions) error) *cobra.Command {
	opts := &AgentInstallOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "install KIND",
		Short: "Install an agent CLI from npm into aicr's versioned cache",
		Long: `Install the npm package of an agent CLI (` + strings.Join(cli.Kinds(), ", ") + `)
at its pinned version, or --version, into <install_dir>/<kind>/<version>: no
global npm install, and nothing is fetched when a review runs (the sandbox
mounts the install read-only). install_dir is [agent.cli] install_dir, by
default <data_dir>/agent-clis; --dir overrides it. An install that already
finished is kept unless --force; a failed one leaves nothing behind.
Needs node and npm on this host and the npm registry (or --registry, a mirror).`,
		Example: "  aicr agent install claude-code --config /etc/aicr/aicr.toml\n  aicr agent install codex --version 0.169.0 --dir /var/lib/aicr/agent-clis",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.Kind = args[0]
			if !cli.IsKind(opts.Kind) {
				return usageErrorf("unknown agent CLI %q (one of: %s)", opts.Kind, strings.Join(cli.Kinds(), ", "))
			}
			if opts.Version != "" {
				if err := cli.CheckVersion(opts.Kind, opts.Version); err != nil {
					return usageErrorf("--version: %w", err)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return agentInstallRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	fl := cmd.Flags()
	fl.StringVar(&opts.Version, "version", "", "exact version to install (default: the version [agent.cli] version names, else the pinned one)")
	fl.StringVar(&opts.Dir, "dir", "", "install dir (default: [agent.cli] install_dir of --config)")
	fl.StringVar(&opts.Registry, "registry", "", "npm registry URL (an internal mirror)")
	fl.BoolVar(&opts.Force, "force", false, "reinstall over a finished install")
	return cmd
}

type agentInstallOutput struct {
	Kind    string `json:"kind"`
	Package string `json:"package"`
	Version string `json:"version"`
	Prefix  string `json:"prefix"`
}

func agentInstallRun(ctx context.Context, opts *AgentInstallOptions) error {
	f := opts.Factory
	dir, version := opts.Dir, opts.Version
	if dir == "" || version == "" {
		cfg, err := f.Config()
		if err != nil {
			if dir == "" {
				return fmt.Errorf("%w (or pass --dir)", err)
			}
		} else {
			if dir == "" {
				dir = cfg.Agent.CLI.InstallDir
			}
			if version == "" && cfg.Agent.Kind == opts.Kind {
				version = cfg.Agent.CLI.Version
			}
		}
	}
	a, _ := cli.Lookup(opts.Kind)
	spec := a.Spec()
	if version == "" {
		version = spec.Version
	}
	ios := f.IOStreams
	fmt.Fprintf(ios.ErrOut, "installing %s@%s into %s\n", spec.Package, version, cli.Prefix(dir, opts.Kind, version))
	prefix, err := cli.Install(ctx, cli.InstallOptions{Dir: dir, Kind: opts.Kind, Version: version, Registry: opts.Registry,
		Force: opts.Force, Stdout: ios.ErrOut, Stderr: ios.ErrOut})
	if err != nil {
		return err
	}
	out := agentInstallOutput{Kind: opts.Kind, Package: spec.Package, Version: version, Prefix: prefix}
	if opts.Format == "json" {
		return writeJSON(ios.Out, out)
	}
	fmt.Fprintf(ios.Out, "%s %s installed at %s\n", spec.Package, version, prefix)
	return nil
}
