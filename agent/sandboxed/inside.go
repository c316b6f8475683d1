package sandboxed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox/egress"
)

// Workspace is the run directory as the container sees it: the agent dir,
// src/ and the read-only change.json, diff.patch and repo-rules.md.
const Workspace = "/workspace"

// InsideOptions locate what RunPass needs.
type InsideOptions struct {
	// Root is the run layout's root; empty is Workspace.
	Root string
	// Binary is the aicr binary the builtin agent spawns as its MCP server.
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
	if err := readJSON(filepath.Join(run.AgentDir(), PassFileName), &pf); err != nil {
		return fmt.Errorf("read the pass description: %w", err)
	}
	a, err := buildInside(pf, o)
	if err != nil {
		return err
	}
	stats, err := a.Review(ctx, run, pf.Pass)
	if werr := writeJSON(filepath.Join(run.AgentDir(), StatsFileName), PassStats{Stats: stats, Text: stats.Text, ErrorClass: classOf(err)}); werr != nil && err == nil {
		err = fmt.Errorf("write %s: %w", StatsFileName, werr)
	}
	return err
}

func buildInside(pf PassFile, o InsideOptions) (agent.Agent, error) {
	cfg := pf.Agent
	limits := cfg.Limits()
	switch cfg.Kind {
	case agent.KindBuiltin:
		return builtin.New(builtin.Options{Limits: limits, Logger: o.Logger})
	case agent.KindLLM:
		lc := cfg.LLM
		lc.APIKeyEnv, lc.APIKeyFile = APIKeyEnv, ""
		rulesFile := ""
		if pf.OperatorRules != "" {
			// The root filesystem is read-only; /tmp is the container's tmpfs.
			f, err := os.CreateTemp("", "operator-rules-*.md")
			if err != nil {
				return nil, fmt.Errorf("operator rules: %w", err)
			}
			if _, err := f.WriteString(pf.OperatorRules); err != nil {
				f.Close()
				return nil, fmt.Errorf("operator rules: %w", err)
			}
			if err := f.Close(); err != nil {
				return nil, fmt.Errorf("operator rules: %w", err)
			}
			rulesFile = f.Name()
		}
		headers, err := headersFromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		opts := llm.Options{Config: lc, Limits: limits, OperatorRulesFile: rulesFile, Logger: o.Logger, Headers: headers}
		if pf.EgressSocket != "" {
			opts.HTTPClient = egress.HTTPClient(pf.EgressSocket)
		}
		return llm.New(opts)
	case "":
		return nil, errors.New("pass.json: agent.kind is empty")
	}
	if agent.IsCLI(cfg.Kind) {
		lc := cfg.LLM
		lc.APIKeyEnv, lc.APIKeyFile = APIKeyEnv, ""
		cfg.LLM = lc
		return agent.NewCLI(cfg, agent.CLIDeps{Prefix: cli.PrefixInside, Binary: o.Binary,
			APIKey: func() (string, error) { return os.Getenv(APIKeyEnv), nil },
			Limits: limits, OperatorRules: pf.OperatorRules, EgressSocket: pf.EgressSocket, Logger: o.Logger})
	}
	return nil, fmt.Errorf("pass.json: %w %q", agent.ErrUnknownKind, cfg.Kind)
}
