package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/vcs"
)

// agentPass is the Reviewer over the review ladder: the agent's passes
// against a fresh state file, context and blame requests replayed through
// the run's repo adapter, and what the agent cost recorded in the audit
// trail whether or not the review succeeded.
type agentPass struct {
	ladder   *agent.Ladder
	adapters map[string]vcs.Adapter
	prices   agent.Prices
	store    *audit.Store // nil records no cost (tests)
	log      *slog.Logger
	metrics  *Metrics
}

func (a *agentPass) Review(ctx context.Context, run *audit.Run, dir rundir.Layout) (review.Result, error) {
	tgt := agent.Target{Revision: reviewedRevision(run.Revision)}
	// Both adapters answer Cat and Blame; one that cannot leaves the
	// agent's requests answered with an error, not the review failed.
	if r, ok := a.adapters[run.Repo].(agent.Replayer); ok {
		tgt.Replayer = r
	}
	out, err := a.ladder.Run(ctx, dir, tgt)
	log := a.log.With("run_id", run.ID, "repo", run.Repo, "revision", run.Revision)
	a.record(ctx, run, out, log)
	if err != nil {
		// What the builtin rules found survives the agent's failure: the
		// pipeline publishes it as a partial review if the run fails for good.
		var partial review.Result
		if out.Partial != nil {
			partial = *out.Partial
		}
		if errors.Is(err, sandbox.ErrUnavailable) || errors.Is(err, cli.ErrNotInstalled) || errors.Is(err, cli.ErrMisconfigured) ||
			errors.Is(err, sandboxed.ErrMemoryLimit) {
			// Waiting does not install podman or build the image: the run
			// fails now with the remedy, and never runs the agent natively.
			return partial, fmt.Errorf("%w (%w)", err, errPermanent)
		}
		return partial, err
	}
	if out.Rejected > 0 {
		log.Warn("agent tool calls were refused; findings may be missing",
			"rejected", out.Rejected, "state", dir.StatePath())
	}
	log.Info("agent ladder", "agent", out.Stats.Agent, "model", out.Stats.Model, "passes", out.Passes,
		"steps", out.Steps, "turns", out.Stats.Turns, "input_tokens", out.Stats.InputTokens, "output_tokens", out.Stats.OutputTokens)
	return out.Result, nil
}

func (a *agentPass) record(ctx context.Context, run *audit.Run, out agent.Outcome, log *slog.Logger) {
	if a.store == nil || out.Passes == 0 {
		return
	}
	st := audit.AgentStats{Agent: out.Stats.Agent, Model: out.Stats.Model, Passes: out.Passes, Turns: out.Stats.Turns,
		InputTokens: out.Stats.InputTokens, OutputTokens: out.Stats.OutputTokens}
	if usd, ok := a.prices.Cost(out.Stats); ok {
		st.CostUSD = &usd
	}
	// The cost is recorded even when shutting down: the tokens were spent.
	a.metrics.agentStats(st)
	if err := a.store.AddAgentStats(context.WithoutCancel(ctx), run.ID, st); err != nil {
		log.Warn("record agent cost", "err", err)
	}
}
