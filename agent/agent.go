// Package agent runs a review agent over a run directory. Every agent
// reports through the aicr MCP tools into the run's state file; the
// orchestrator reads the results from there, never from the agent.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox/egress"
)

// Agent runs one pass of the review ladder over the change of one run.
// It returns an error only when the pass could not take place; what it
// found is in run.StatePath(), which every pass of a review shares. The
// Stats say what the pass cost; Stats.Text is its final prose, which the
// ladder normalizes when the pass recorded no structured result.
type Agent interface {
	Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error)
}

// RepoFilesIgnorer is an Agent that never reads the repository's
// instructions, AGENTS.md or skills (the builtin checks): the ladder does
// not fetch them for it, each being one more VCS process per review.
type RepoFilesIgnorer interface {
	IgnoresRepoFiles() bool
}

var (
	_ RepoFilesIgnorer = (*builtin.Agent)(nil)
	_ RepoFilesIgnorer = (*timedAgent)(nil)
	_ Agent            = (*builtin.Agent)(nil)
	_ Agent            = (*llm.Agent)(nil)
	_ Agent            = (*cli.Agent)(nil)
)

// Agent kinds accepted in config.
const (
	KindBuiltin = builtin.Kind
	KindLLM     = llm.Kind
)

// kindList names the kinds in errors.
var kindList = KindBuiltin + ", " + KindLLM + ", " + strings.Join(cli.Kinds(), ", ")

// IsCLI says whether kind is an agent CLI (claude-code, codex, ...).
func IsCLI(kind string) bool { return cli.IsKind(kind) }

var (
	// ErrUnknownKind: the configured agent kind is not implemented.
	ErrUnknownKind = errors.New("unknown agent kind")
	// ErrTimeout: a pass ran past [agent] timeout and was stopped (its MCP
	// server killed with it). The pipeline retries the run like any other
	// transient failure.
	ErrTimeout = errors.New("agent pass timed out")
)

// DefaultTimeout bounds one pass when [agent] timeout is not set.
const DefaultTimeout = 10 * time.Minute

// Config selects and configures the agent.
type Config struct {
	// Kind is the agent adapter: "builtin" (rules, no model), "llm", or
	// an agent CLI (cli.Kinds).
	Kind string `toml:"kind"`
	// LLM is the [agent.llm] table: the model of the llm agent and of the
	// agent CLIs.
	LLM llm.Config `toml:"llm"`
	// CLI is the [agent.cli] table, used when Kind is an agent CLI.
	CLI cli.Config `toml:"cli"`
	// Per-pass bounds on what the agent may record (zero: the review
	// server's defaults, see docs/agent-contract.md).
	MaxProblems            int `toml:"max_problems"`
	MaxContextRequests     int `toml:"max_context_requests"`
	MaxAttributionRequests int `toml:"max_attribution_requests"`
	// MaxRejected bounds the refused calls kept in the state file; later
	// ones are only counted.
	MaxRejected int `toml:"max_rejected"`
	// Timeout is the wall-clock limit of one pass (default DefaultTimeout).
	Timeout time.Duration `toml:"timeout"`
	// MaxCostPerReview (USD, at the [agent.llm] prices) and
	// MaxInputTokensPerReview (prompt tokens, cached or not) stop a
	// review's ladder once it has spent them; what was found is published
	// as a partial review that says why. Zero: no limit.
	MaxCostPerReview        float64 `toml:"max_cost_per_review"`
	MaxInputTokensPerReview int     `toml:"max_input_tokens_per_review"`
	// RulesFile is the operator's review rules (Markdown) given to
	// model-backed agents after the protected rules; relative to the
	// config file, read at each review (prompt.ReadRulesFile).
	RulesFile string `toml:"rules_file"`
	// OutputLanguage is the language the model writes messages,
	// suggestions and summaries in ("en" or "zh-CN"); empty means the one
	// most of the repo's channels read (config.OutputLanguage). The
	// config loader checks and normalises it.
	OutputLanguage string `toml:"output_language"`
}

// PassTimeout is Timeout or its default.
func (c Config) PassTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// Limits returns the configured bounds for the review server.
func (c Config) Limits() review.Limits {
	return review.Limits{MaxProblems: c.MaxProblems, MaxContextRequests: c.MaxContextRequests,
		MaxAttributionRequests: c.MaxAttributionRequests, MaxRejected: c.MaxRejected}
}

// Validate reports config errors, naming the TOML key.
func (c Config) Validate() error {
	if c.MaxProblems < 0 || c.MaxContextRequests < 0 || c.MaxAttributionRequests < 0 || c.MaxRejected < 0 {
		return fmt.Errorf("agent.max_problems, max_context_requests, max_attribution_requests and max_rejected must not be negative")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("agent.timeout: must not be negative, got %s", c.Timeout)
	}
	if err := c.validateCaps(); err != nil {
		return err
	}
	if err := prompt.CheckRulesFile(c.RulesFile); err != nil {
		return err
	}
	switch c.Kind {
	case KindBuiltin:
		return nil
	case KindLLM:
		return c.LLM.Validate()
	case "":
		return fmt.Errorf("agent.kind: is required (one of: %s)", kindList)
	}
	if cli.IsKind(c.Kind) {
		err := cli.Validate(c.Kind, c.CLI, c.LLM)
		if c.CLI.FallbackLLM && c.LLM.API == llm.APIGemini {
			err = errors.Join(err, fmt.Errorf("agent.cli.fallback_llm: the llm agent does not speak api = %q; turn the fallback off", llm.APIGemini))
		}
		return err
	}
	return fmt.Errorf("agent.kind: %w %q (one of: %s)", ErrUnknownKind, c.Kind, kindList)
}

// Deps are what agents need from the process that runs them. The daemon
// and the CLI verbs fill them from the host's config; the sandboxed pass
// fills them from what the host handed the container (pass.json and the
// environment). What differs between the two places is only Deps, so one
// Build makes every kind in both.
type Deps struct {
	// CLIInstallDir is [agent.cli] install_dir with its default applied
	// (the daemon's <data_dir>/agent-clis).
	CLIInstallDir string
	// CLIPrefix, when set, is the agent CLI's install prefix as this
	// process sees it (cli.PrefixInside in the sandbox); empty: the
	// configured version's prefix under CLIInstallDir.
	CLIPrefix string
	// Binary is the aicr binary an agent CLI starts as its MCP server.
	// Only the binary: the CLI's adapter writes the whole command (`mcp
	// serve` with the run's state and change files and the tool-name
	// style) into the CLI's own config. The builtin and llm agents run
	// the review tools in process and need none.
	Binary string
	// Limits bound what one pass may record; zero fields keep the
	// server's defaults.
	Limits review.Limits
	// Logger receives progress and rejected tool calls; nil discards.
	Logger *slog.Logger
	// APIKey reads an agent CLI's model key at each pass; nil: [agent.llm]
	// api_key_env or api_key_file. (The llm agent reads its key source
	// from [agent.llm] itself.)
	APIKey func() (string, error)
	// Headers, when not nil, replace [agent.llm] headers_file for the llm
	// agent: the sandboxed pass gets them from the host, which read the
	// file for this pass.
	Headers map[string]string
	// EgressSocket is the egress proxy's socket when the process has no
	// network of its own (inside the sandbox, network "llm-only"): every
	// model-backed agent reaches its model through it. Empty: directly.
	EgressSocket string
	// OperatorRules yields the operator's rules text for a pass; nil:
	// [agent] rules_file, read at each pass. The sandboxed pass gets the
	// text the host read, so the rules travel as text, never as a file.
	OperatorRules prompt.RulesSource
}

// UsesModel says whether cfg's agent talks to a model server (and so
// needs [agent.llm]'s key, headers and base URL): the llm agent and the
// agent CLIs; the builtin checks do not.
func (c Config) UsesModel() bool { return c.Kind == KindLLM || IsCLI(c.Kind) }

// PassLimit is the wall-clock bound of one pass and the config key that
// set it: [agent.llm] timeout for the llm agent when it is set (a model
// server that never answers should not hold a worker for the longer
// [agent] limit), else [agent] timeout or its default.
func (c Config) PassLimit() (time.Duration, string) {
	if c.Kind == KindLLM && c.LLM.Timeout > 0 {
		return c.LLM.Timeout, "[agent.llm] timeout"
	}
	return c.PassTimeout(), "[agent] timeout"
}

// New returns the agent cfg selects, bounded by cfg's PassLimit.
func New(cfg Config, deps Deps) (Agent, error) {
	a, err := Build(cfg, deps)
	if err != nil {
		return nil, err
	}
	return Bound(a, cfg), nil
}

// Bound bounds every pass of a by cfg's PassLimit; the daemon applies it
// to the sandboxed agent as New does to a native one.
func Bound(a Agent, cfg Config) Agent {
	limit, key := cfg.PassLimit()
	return &timedAgent{agent: a, limit: limit, key: key}
}

// Build returns the agent cfg.Kind names, without a pass bound: the
// sandboxed pass runs it under the container's own limit, which the host
// sets from the same PassLimit. It is the one place a kind becomes an
// agent.
func Build(cfg Config, deps Deps) (Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.OperatorRules == nil {
		deps.OperatorRules = prompt.RulesFromFile(cfg.RulesFile)
	}
	switch cfg.Kind {
	case KindBuiltin:
		return builtin.New(builtin.Options{Limits: deps.Limits, Logger: deps.Logger})
	case KindLLM:
		return newLLM(cfg, deps)
	}
	if !cli.IsKind(cfg.Kind) {
		return nil, fmt.Errorf("agent.kind: %w %q", ErrUnknownKind, cfg.Kind)
	}
	return newCLI(cfg, deps)
}

// newLLM is the llm agent over [agent.llm], also the agent CLIs' fallback.
func newLLM(cfg Config, deps Deps) (*llm.Agent, error) {
	o := llm.Options{Config: cfg.LLM, Limits: deps.Limits, OperatorRules: deps.OperatorRules, Logger: deps.Logger, Headers: deps.Headers}
	if deps.EgressSocket != "" {
		o.HTTPClient = egress.HTTPClient(deps.EgressSocket)
	}
	return llm.New(o)
}

// WithTimeout bounds every pass of a by d of wall-clock time. The pass's
// context ends at d, which kills the processes the agent started with it;
// the error then wraps ErrTimeout and names the config key.
func WithTimeout(a Agent, d time.Duration) Agent {
	return &timedAgent{agent: a, limit: d, key: "[agent] timeout"}
}

type timedAgent struct {
	agent Agent
	limit time.Duration
	// key is the config key that set limit, for the error.
	key string
}

// IgnoresRepoFiles is the wrapped agent's answer: a time limit changes
// nothing about what the agent reads.
func (t *timedAgent) IgnoresRepoFiles() bool {
	i, ok := t.agent.(RepoFilesIgnorer)
	return ok && i.IgnoresRepoFiles()
}

func (t *timedAgent) Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	cause := fmt.Errorf("%w: stopped after %s (%s); raise the timeout or look at what the agent was doing", ErrTimeout, t.limit, t.key)
	ctx, cancel := context.WithTimeoutCause(ctx, t.limit, cause)
	defer cancel()
	stats, err := t.agent.Review(ctx, run, p)
	if err != nil && errors.Is(context.Cause(ctx), ErrTimeout) {
		return stats, fmt.Errorf("%w (%v)", cause, err) //nolint:errorlint // the timeout is the classification; the agent's own error (often context.DeadlineExceeded) is detail, so callers do not take it for a cancel
	}
	return stats, err
}

// validateCaps checks the per-review caps: a cost cap needs prices to
// measure the cost by, or it would never stop anything.
func (c Config) validateCaps() error {
	switch {
	case c.MaxCostPerReview < 0:
		return fmt.Errorf("agent.max_cost_per_review: must not be negative, got %g", c.MaxCostPerReview)
	case c.MaxInputTokensPerReview < 0:
		return fmt.Errorf("agent.max_input_tokens_per_review: must not be negative, got %d", c.MaxInputTokensPerReview)
	case c.MaxCostPerReview > 0 && c.Kind != KindBuiltin && c.LLM.PricePerMTokIn <= 0 && c.LLM.PricePerMTokOut <= 0:
		return fmt.Errorf("agent.max_cost_per_review: the review's cost is unknown without prices; set [agent.llm] price_per_mtok_in and price_per_mtok_out, or remove the limit")
	}
	return nil
}
