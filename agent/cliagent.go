package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/rundir"
)

// CLIPrefix is where cfg's CLI is installed under installDir.
func CLIPrefix(cfg Config, installDir string) string {
	a, _ := cli.Lookup(cfg.Kind)
	return cli.Prefix(installDir, cfg.Kind, cfg.CLI.VersionFor(a.Spec()))
}

// newCLI returns the agent CLI cfg.Kind names, with the llm agent behind
// it when [agent.cli] fallback_llm is set. The CLI's rules are read once,
// here: they go into the CLI's prompt for every pass.
func newCLI(cfg Config, d Deps) (Agent, error) {
	if d.Binary == "" {
		// The CLI starts aicr's MCP server itself, from this binary.
		return nil, fmt.Errorf("agent.kind %q: no aicr binary for the CLI's MCP server (set [daemon] aicr_binary)", cfg.Kind)
	}
	rules, err := d.OperatorRules()
	if err != nil {
		return nil, err
	}
	prefix := d.CLIPrefix
	if prefix == "" {
		prefix = CLIPrefix(cfg, d.CLIInstallDir)
	}
	apiKey := d.APIKey
	if apiKey == nil {
		apiKey = func() (string, error) {
			k, err := cfg.LLM.ReadAPIKey()
			return k.Reveal(), err
		}
	}
	c, err := cli.New(cli.Options{Kind: cfg.Kind, LLM: cfg.LLM, APIKey: apiKey, Prefix: prefix, Binary: d.Binary,
		Limits: d.Limits, OperatorRules: rules, EgressSocket: d.EgressSocket, Logger: d.Logger})
	if err != nil {
		return nil, err
	}
	if !cfg.CLI.FallbackLLM {
		return c, nil
	}
	return &fallbackAgent{primary: c, kind: cfg.Kind, fallback: func() (Agent, error) {
		return newLLM(cfg, d)
	}, log: d.Logger}, nil
}

// fallbackAgent runs the llm agent for a pass the CLI could not complete
// (it failed for a reason other than the pass's own time running out):
// the last rung of the ladder for agent CLIs.
type fallbackAgent struct {
	primary  Agent
	kind     string
	fallback func() (Agent, error)
	log      *slog.Logger
}

func (f *fallbackAgent) Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	stats, err := f.primary.Review(ctx, run, p)
	if err == nil || ctx.Err() != nil || errors.Is(err, llm.ErrContextOverflow) {
		// An overflow is the ladder's to retry clipped, with the CLI.
		return stats, err
	}
	if f.log != nil {
		f.log.Warn("agent CLI pass failed; running the llm agent instead ([agent.cli] fallback_llm)",
			"agent", f.kind, "pass", p.Number, "err", err)
	}
	fb, ferr := f.fallback()
	if ferr != nil {
		return stats, fmt.Errorf("%w; the llm fallback could not start: %v", err, ferr) //nolint:errorlint // the CLI's error is the one callers classify (overflow, timeout); the fallback's start failure is detail
	}
	fstats, ferr := fb.Review(ctx, run, p)
	stats.Add(fstats)
	if ferr != nil {
		return stats, fmt.Errorf("%s failed (%v), and so did the llm fallback: %w", f.kind, err, ferr) //nolint:errorlint // the fallback's error is the pass's outcome; the CLI's failure before it is detail
	}
	return stats, nil
}
