package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/childenv"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/sandbox/egress"
	"github.com/aicr-dev/aicr/vcs"
)

// Deps are the process-level things Build wires the parts with.
type Deps struct {
	Store  *audit.Store
	Logger *slog.Logger // nil discards
	// Stdout receives the console channel's reports.
	Stdout io.Writer
	// Now is the clock of the pipeline, the channels and the dispatcher;
	// nil is time.Now.
	Now func() time.Time
	// AicrBinary is spawned as the agent's MCP server; default [daemon]
	// aicr_binary, then this executable.
	AicrBinary string
	// Metrics, when set, are fed by the pipeline, the reviewer and the
	// dispatcher (the daemon's /metrics).
	Metrics *Metrics
	// AgentOutcome, when set, sees what each review's agent ladder came
	// to (the full pass.Stats: cached tokens, per-turn usage), which the
	// audit row sums coarser; `aicr eval` accounts a review with it.
	AgentOutcome func(runID int64, out agent.Outcome)
}

func (d Deps) withDefaults() Deps {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Stdout == nil {
		d.Stdout = io.Discard
	}
	return d
}

// BuildOptions say what Build leaves out.
type BuildOptions struct {
	// NoChannels builds no channel and no dispatcher: the pipeline can
	// only dry-run (`aicr review --dry-run`), so a channel whose config
	// is broken cannot stop a review that publishes nothing.
	NoChannels bool
}

// Components are one process's wired parts: the composition root's
// result, shared by the daemon's jobs and the CLI.
type Components struct {
	Config *config.Config
	// Adapters are the repos' VCS adapters by repo name.
	Adapters map[string]vcs.Adapter
	// Channels by name; nil when built with NoChannels.
	Channels map[string]im.Channel
	// Dispatcher sends planned dispatches; nil when built with NoChannels.
	Dispatcher *delivery.Dispatcher
	Pipeline   *Pipeline
	// Ladder is the configured agent on the review ladder, as the
	// pipeline's Reviewer runs it (`aicr agent test` runs it alone).
	Ladder *agent.Ladder

	reviewer *agentPass
}

// LeaveDismissals writes the repo's dismissed findings in the paths of
// dir's change into dir for the prompt, as the pipeline's Reviewer does
// before each review: for a caller that runs Ladder itself (a session
// round). Failures are logged; the review goes on without them.
func (c *Components) LeaveDismissals(ctx context.Context, repo string, dir rundir.Layout) {
	log := c.reviewer.log.With("repo", repo, "dir", dir.Dir())
	c.reviewer.writeDismissals(ctx, repo, dir, log)
	if err := c.reviewer.writeOutputLanguage(repo, dir); err != nil {
		log.Warn("the model is not told the team's language", "err", err)
	}
}

// Build wires everything one process needs from cfg: the adapters
// (vcs/registry kinds), the agent, the channels, the dispatcher and the
// pipeline over them. Nothing is started.
func Build(cfg *config.Config, deps Deps, opts BuildOptions) (*Components, error) {
	deps = deps.withDefaults()
	c := &Components{Config: cfg, Adapters: map[string]vcs.Adapter{}}
	for _, r := range cfg.Repos {
		a, err := newAdapter(r)
		if err != nil {
			return nil, fmt.Errorf("repo %s: %w", r.Name, err)
		}
		c.Adapters[r.Name] = a
	}
	ag, err := buildAgent(cfg, deps)
	if err != nil {
		return nil, err
	}
	c.Ladder = agent.NewLadder(cfg.Agent, ag, deps.Logger)
	reviewer := &agentPass{ladder: c.Ladder, adapters: c.Adapters,
		prices: cfg.Agent.Prices(), store: deps.Store, dismissals: dismissalsOf(deps.Store), outputLanguage: cfg.OutputLanguage,
		log: deps.Logger, metrics: deps.Metrics, observe: deps.AgentOutcome}
	if reviewer.budgets, err = newBudgets(cfg, deps); err != nil {
		return nil, err
	}
	c.reviewer = reviewer
	stages := Stages{Fetch: repoAdapters(c.Adapters), Review: reviewer}
	if !opts.NoChannels {
		c.Channels = map[string]im.Channel{}
		for _, ch := range cfg.Channels {
			built, err := BuildChannel(cfg, ch.Name, deps)
			if err != nil {
				return nil, err
			}
			c.Channels[ch.Name] = built
		}
		c.Dispatcher = delivery.New(meterDispatches(deps.Store, deps.Metrics), c.Channels, delivery.Options{Config: cfg.Dispatch, Logger: deps.Logger, Now: deps.Now,
			OnRateLimitWait: deps.Metrics.RateLimitWait, Quiet: quietDispatches(deps.Store)})
		signer, err := cfg.Web.LinkSigner(cfg.Daemon.DataDir)
		if err != nil {
			return nil, err
		}
		stages.Publish = &publisher{cfg: cfg, store: deps.Store, log: deps.Logger, dispatcher: c.Dispatcher,
			findings: deps.Store, signer: signer, now: deps.Now}
	}
	c.Pipeline = NewPipeline(cfg, deps, stages)
	return c, nil
}

func newAdapter(r config.Repo) (vcs.Adapter, error) {
	if r.Settings == nil {
		return nil, fmt.Errorf("repo kind %q has no adapter", r.Kind)
	}
	return r.Settings.NewAdapter()
}

func buildAgent(cfg *config.Config, deps Deps) (agent.Agent, error) {
	bin := deps.AicrBinary
	if bin == "" {
		bin = cfg.Daemon.AicrBinary
	}
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find aicr binary for the agent's MCP server: %w (set [daemon] aicr_binary)", err)
		}
		bin = exe
	}
	if cfg.Sandbox.Kind == "podman" {
		return buildSandboxedAgent(cfg, deps, bin)
	}
	// [sandbox] kind = "none" is the operator's explicit choice of no
	// sandbox: the agent runs in this process as it always did.
	ag, err := agent.New(cfg.Agent, agent.Deps{Binary: bin, Limits: cfg.Agent.Limits(), Logger: deps.Logger,
		CLIInstallDir: cfg.Agent.CLI.InstallDir})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return ag, nil
}

// buildSandboxedAgent runs every pass of every agent kind in the sandbox;
// a sandbox that cannot run fails the run with its remedy, never falls
// back to running the agent natively.
func buildSandboxedAgent(cfg *config.Config, deps Deps, bin string) (agent.Agent, error) {
	runner, err := sandbox.New(cfg.Sandbox)
	if err != nil {
		return nil, err
	}
	var record func(int64, egress.Event)
	if deps.Store != nil {
		record = egressRecorder(deps.Store, deps.Logger)
	}
	ag, err := sandboxed.New(sandboxed.Options{Config: cfg.Agent, Runner: runner, Network: cfg.Sandbox.Network,
		Binary: bin, Env: containerEnv(), RecordEgress: record, Logger: deps.Logger, CLIInstallDir: cfg.Agent.CLI.InstallDir})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return agent.Bound(ag, cfg.Agent), nil
}

// egressRecorder records what the sandbox's egress proxy let through or
// refused.
//
//nolint:contextcheck // the proxy calls it with no context, and an attempt made as the run is cut short is still recorded
func egressRecorder(store *audit.Store, log *slog.Logger) func(int64, egress.Event) {
	return func(runID int64, e egress.Event) {
		ev := audit.EgressEvent{At: e.At, Host: e.Host, Port: e.Port, Allowed: e.Allowed, Reason: e.Reason}
		if err := store.RecordEgress(context.Background(), runID, ev); err != nil {
			log.Warn("record egress event", "run_id", runID, "host", e.Host, "err", err)
		}
	}
}

// containerEnv is the daemon's locale and time zone for the container:
// childenv's allowlist without the host paths (PATH, TMPDIR) that mean
// nothing inside it.
func containerEnv() []string {
	var env []string
	for _, kv := range childenv.Build(nil) {
		name, _, _ := strings.Cut(kv, "=")
		if name == "PATH" || name == "TMPDIR" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// BuildChannel builds one configured channel; deps.Store is not used.
func BuildChannel(cfg *config.Config, name string, deps Deps) (im.Channel, error) {
	deps = deps.withDefaults()
	ch, ok := cfg.Channel(name)
	if !ok {
		return nil, fmt.Errorf("no [[channel]] named %q in %s", name, cfg.Path)
	}
	c, err := ch.Settings.Build(ch.ChannelConfig, im.Deps{Stdout: deps.Stdout, Logger: deps.Logger,
		BaseDir: filepath.Dir(cfg.Path), Now: deps.Now})
	if err != nil {
		return nil, fmt.Errorf("channel %s: %w", name, err)
	}
	return c, nil
}
