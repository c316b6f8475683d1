package sandboxed

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/rundir"
)

// Workspace is the run directory as the container sees it: the agent dir,
// src/ and the read-only change.json, diff.patch and repo-rules.md.
const Workspace = "/workspace"

// InsideOptions locate what RunPass needs.
type InsideOptions struct {
	// Root is the run layout's root; empty is Workspace.
	Root string
	// Binary is the aicr binary (mounted at sandbox.BinaryMount) an agent
	// CLI starts as its MCP server; the builtin and llm agents start
	// nothing, they run the review tools in this process.
	Binary string
	Logger *slog.Logger
}

// RunPass runs the one pass pass.json describes and writes pass-stats.json
// beside it, also when the pass failed (what it cost is still worth
// knowing). The error is the pass's.
func RunPass(ctx context.Context, o InsideOptions) error {
	root := o.Root
	if root == "" {
		root = Workspace
	}
	run := rundir.New(root)
	var pf PassFile
	if err := readJSON(run.PassFilePath(), &pf); err != nil {
		return fmt.Errorf("read the pass description: %w", err)
	}
	a, err := buildInside(pf, o)
	if err != nil {
		return err
	}
	stats, err := a.Review(ctx, run, pf.Pass)
	if werr := writeJSON(run.PassStatsPath(), PassStats{Stats: stats, Text: stats.Text, ErrorClass: classOf(err)}); werr != nil && err == nil {
		err = fmt.Errorf("write %s: %w", rundir.PassStatsFileName, werr)
	}
	return err
}

// buildInside is agent.Build over what the host handed the container:
// pass.json's [agent] (its secret sources already pointing at APIKeyEnv),
// the key and headers from the environment, the rules as text and the
// egress proxy's socket. The pass is bounded by the container's timeout,
// not here.
func buildInside(pf PassFile, o InsideOptions) (agent.Agent, error) {
	headers, err := headersFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	a, err := agent.Build(pf.Agent, agent.Deps{
		CLIPrefix: cli.PrefixInside, Binary: o.Binary, Limits: pf.Agent.Limits(), Logger: o.Logger,
		APIKey:        func() (string, error) { return os.Getenv(APIKeyEnv), nil },
		Headers:       headers,
		EgressSocket:  pf.EgressSocket,
		OperatorRules: prompt.RulesText(pf.OperatorRules),
	})
	if err != nil {
		return nil, fmt.Errorf("pass.json: %w", err)
	}
	return a, nil
}
