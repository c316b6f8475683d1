// Package agent runs a review agent over a run directory. Every agent
// reports through the aicr MCP tools into the run's state file; the
// orchestrator reads the results from there, never from the agent.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// Agent reviews the change of one run. It returns an error only when the
// review could not take place; what it found is in run.StatePath().
type Agent interface {
	Review(ctx context.Context, run rundir.Layout) error
}

var _ Agent = (*builtin.Agent)(nil)

// Agent kinds accepted in config.
const (
	KindBuiltin = builtin.Kind
)

// ErrUnknownKind: the configured agent kind is not implemented.
var ErrUnknownKind = errors.New("unknown agent kind")

// Config selects and configures the agent.
type Config struct {
	// Kind is the agent adapter; only "builtin" exists so far.
	Kind string `toml:"kind"`
	// Per-pass bounds on what the agent may record (zero: the review
	// server's defaults, see docs/agent-contract.md).
	MaxProblems            int `toml:"max_problems"`
	MaxContextRequests     int `toml:"max_context_requests"`
	MaxAttributionRequests int `toml:"max_attribution_requests"`
}

// Limits returns the configured bounds for the review server.
func (c Config) Limits() review.Limits {
	return review.Limits{MaxProblems: c.MaxProblems, MaxContextRequests: c.MaxContextRequests, MaxAttributionRequests: c.MaxAttributionRequests}
}

// Validate reports config errors, naming the TOML key.
func (c Config) Validate() error {
	if c.MaxProblems < 0 || c.MaxContextRequests < 0 || c.MaxAttributionRequests < 0 {
		return fmt.Errorf("agent.max_problems, max_context_requests and max_attribution_requests must not be negative")
	}
	switch c.Kind {
	case KindBuiltin:
		return nil
	case "":
		return fmt.Errorf("agent.kind: is required (one of: %s)", KindBuiltin)
	}
	return fmt.Errorf("agent.kind: %w %q (one of: %s)", ErrUnknownKind, c.Kind, KindBuiltin)
}

// Deps are what agents need from the process that runs them.
type Deps struct {
	// MCPCommand starts the aicr MCP tool server, e.g.
	// {"/usr/local/bin/aicr", "mcp", "serve"}; the agent appends
	// --state, --change and the limit flags.
	MCPCommand []string
	// Limits bound what one pass may record; zero fields keep the
	// server's defaults.
	Limits review.Limits
	// Logger receives progress and rejected tool calls; nil discards.
	Logger *slog.Logger
}

// New returns the agent cfg selects.
func New(cfg Config, deps Deps) (Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Kind {
	case KindBuiltin:
		return builtin.New(builtin.Options{MCPCommand: deps.MCPCommand, Limits: deps.Limits, Logger: deps.Logger})
	}
	return nil, fmt.Errorf("agent.kind: %w %q", ErrUnknownKind, cfg.Kind)
}
