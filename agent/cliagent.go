package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// CLIDeps are what an agent CLI needs from the process that runs it.
type CLIDeps struct {
	// Prefix is the CLI's install prefix as this process sees it.
	Prefix string
	// Binary is the aicr binary the CLI starts as its MCP server.
	Binary string
	// APIKey reads the model server's key at each pass; nil: no key.
	APIKey func() (string, error)
	Limits review.Limits
	// OperatorRules is the operator's rules text; empty: read
	// cfg.RulesFile at each pass.
	OperatorRules string
	// EgressSocket is the egress proxy's socket inside the container.
	EgressSocket string
	Logger       *slog.Logger
}

// CLIPrefix is where cfg's CLI is installed under installDir.
func CLIPrefix(cfg Config, installDir string) string {
	a, _ := cli.Lookup(cfg.Kind)
	return cli.Prefix(installDir, cfg.Kind, cfg.CLI.VersionFor(a.Spec()))
}

// NewCLI returns the agent CLI cfg.Kind names, with the llm agent behind
// it when [agent.cli] fallback_llm is set.
func NewCLI(cfg Config, d CLIDeps) (Agent, error) {
	rules := d.OperatorRules
	if rules == "" && cfg.RulesFile != "" {
		r, err := prompt.ReadRulesFile(cfg.RulesFile)
		if err != nil {
			return nil, err
		}
		rules = r
	}
	c, err := cli.New(cli.Options{Kind: cfg.Kind, LLM: cfg.LLM, APIKey: d.APIKey, Prefix: d.Prefix, Binary: d.Binary,
		Limits: d.Limits, OperatorRules: rules, EgressSocket: d.EgressSocket, Logger: d.Logger})
	if err != nil {
		return nil, err
	}
	if !cfg.CLI.FallbackLLM {
		return c, nil
	}
	return &fallbackAgent{primary: c, kind: cfg.Kind, fallback: func() (Agent, error) {
		return newFallbackLLM(cfg, d, rules)
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

// newFallbackLLM builds the llm agent over the same [agent.llm]. Inside
// the sandbox the rules came inline (there is no config file to read), so
// they are written to the container's tmpfs for it.
func newFallbackLLM(cfg Config, d CLIDeps, rules string) (Agent, error) {
	rulesFile := cfg.RulesFile
	if rulesFile == "" && rules != "" {
		f, err := os.CreateTemp("", "operator-rules-*.md")
		if err != nil {
			return nil, fmt.Errorf("operator rules: %w", err)
		}
		_, werr := f.WriteString(rules)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, fmt.Errorf("operator rules: %w", werr)
		}
		rulesFile = f.Name()
	}
	return llm.New(llm.Options{Config: cfg.LLM, Limits: d.Limits, OperatorRulesFile: rulesFile, Logger: d.Logger})
}
