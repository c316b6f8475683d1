package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/sandbox"
)

// agentCLITimeout bounds the CLI's version query (a container start and a
// node start on a loaded host).
const agentCLITimeout = 60 * time.Second

// checkAgentCLI checks the configured agent CLI: installed at a version
// the adapter was proven with, and runnable where reviews run it (in the
// sandbox's image, or natively with [sandbox] kind = "none").
func checkAgentCLI(ctx context.Context, cfg *config.Config, exe string) []Check {
	kind := cfg.Agent.Kind
	if !agent.IsCLI(kind) {
		return nil
	}
	a, _ := cli.Lookup(kind)
	spec := a.Spec()
	version := cfg.Agent.CLI.VersionFor(spec)
	prefix := agent.CLIPrefix(cfg.Agent, cfg.Agent.CLI.InstallDir)
	installed := Check{Name: CheckAgentCLI}
	m, err := cli.Installed(prefix)
	switch {
	case err != nil:
		installed.Detail = fmt.Sprintf("%s %s is not installed at %s: every review would fail", spec.Package, version, prefix)
		installed.Fix = fmt.Sprintf("aicr agent install %s --config %s", kind, cfg.Path)
		return []Check{installed}
	case cli.CheckVersion(kind, m.Version) != nil:
		installed.Detail = cli.CheckVersion(kind, m.Version).Error()
		installed.Fix = fmt.Sprintf("remove [agent.cli] version (pinned: %s), then aicr agent install %s", spec.Version, kind)
		return []Check{installed}
	}
	installed.Status = StatusOK
	installed.Detail = fmt.Sprintf("%s %s at %s (minimum %s)", m.Package, m.Version, prefix, spec.MinVersion)
	return []Check{installed, runAgentCLI(ctx, cfg, spec, prefix, exe)}
}

// runAgentCLI runs `<cli> --version` the way a review runs the CLI.
func runAgentCLI(ctx context.Context, cfg *config.Config, spec cli.Spec, prefix, exe string) Check {
	c := Check{Name: CheckAgentCLIRuns}
	ctx, cancel := context.WithTimeout(ctx, agentCLITimeout)
	defer cancel()
	if cfg.Sandbox.Kind != "podman" {
		out, err := exec.CommandContext(ctx, filepath.Join(prefix, filepath.FromSlash(spec.Bin)), "--version").CombinedOutput()
		if err != nil {
			c.Detail = fmt.Sprintf("%s --version: %v: %s", spec.Bin, err, oneLine(string(out)))
			c.Fix = fmt.Sprintf("install Node.js 20 or later on this host, or run reviews in the sandbox ([sandbox] kind = \"podman\", make image-node); then aicr agent install %s --force", spec.Kind)
			return c
		}
		c.Status, c.Detail = StatusOK, fmt.Sprintf("%s runs natively: %s", spec.Kind, oneLine(string(out)))
		return c
	}
	runner, err := sandbox.New(cfg.Sandbox)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	tmp, err := os.MkdirTemp("", "aicr-doctor-cli-")
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer os.RemoveAll(tmp)
	agentDir := filepath.Join(tmp, "agent")
	if err := os.Mkdir(agentDir, 0o755); err != nil {
		c.Detail = err.Error()
		return c
	}
	bin := cfg.Daemon.AicrBinary
	if bin == "" {
		bin = exe
	}
	stdout := filepath.Join(tmp, "stdout")
	stderr := filepath.Join(tmp, "stderr")
	res, err := runner.Run(ctx, sandbox.Spec{AgentDir: agentDir, Binary: bin, Network: "none", Timeout: agentCLITimeout,
		Args:       []string{path.Join(cli.PrefixInside, spec.Bin), "--version"},
		Mounts:     []sandbox.Mount{{Host: prefix, Container: cli.PrefixInside, ReadOnly: true}},
		StdoutPath: stdout, StderrPath: stderr})
	out, _ := os.ReadFile(stdout)
	errOut, _ := os.ReadFile(stderr)
	switch {
	case err != nil:
		c.Detail = err.Error()
		c.Fix = "fix the sandbox first (see the error), then run aicr doctor again"
	case res.ExitCode != 0 || res.TimedOut:
		c.Detail = fmt.Sprintf("%s --version in image %s exited %d: %s", spec.Kind, cfg.Sandbox.Podman.Image, res.ExitCode, oneLine(string(errOut)))
		c.Fix = fmt.Sprintf("build the Node.js image (make image-node) and set [sandbox.podman] image to it (now %s)", cfg.Sandbox.Podman.Image)
	default:
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%s runs in image %s: %s", spec.Kind, cfg.Sandbox.Podman.Image, strings.TrimSpace(oneLine(string(out))))
	}
	return c
}
