package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
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
	// dismissals lists what people dismissed, for the prompt; nil lists
	// nothing.
	dismissals dismissalLister
	// outputLanguage is the language the model writes a repo's review in
	// (config.OutputLanguage); nil is English.
	outputLanguage func(repo string) im.Language
	log            *slog.Logger
	metrics        *Metrics
	// observe is Deps.AgentOutcome; nil observes nothing.
	observe func(runID int64, out agent.Outcome)
	// budgets switch a review to the builtin rules, the fallback model or
	// no review once a [[budget]] is spent; nil: no budgets.
	budgets *budgets
}

// dismissalLister is the part of the findings store the reviewer reads
// (findings.Store.DismissedIn).
type dismissalLister interface {
	DismissedIn(ctx context.Context, repo string, paths []string, limit int) ([]findings.Finding, error)
}

// The audit store is the findings store.
var _ dismissalLister = (*audit.Store)(nil)

// dismissalsOf is s, or nil for no store: a nil *audit.Store inside the
// interface would be called.
func dismissalsOf(s *audit.Store) dismissalLister {
	if s == nil {
		return nil
	}
	return s
}

func (a *agentPass) Review(ctx context.Context, run *audit.Run, dir rundir.Layout) (review.Result, error) {
	tgt := agent.Target{Revision: reviewedRevision(run.Revision)}
	// Both adapters answer Cat and Blame; one that cannot leaves the
	// agent's requests answered with an error, not the review failed.
	if r, ok := a.adapters[run.Repo].(agent.Replayer); ok {
		tgt.Replayer = r
	}
	log := a.log.With("run_id", run.ID, "repo", run.Repo, "revision", run.Revision)
	how, err := a.budgets.route(ctx, a.store, run, a.ladder, log)
	if err != nil {
		return review.Result{}, err
	}
	if how.ladder == nil {
		return skippedForBudget(), nil
	}
	a.writeDismissals(ctx, run.Repo, dir, log)
	if err := a.writeOutputLanguage(run.Repo, dir); err != nil {
		return review.Result{}, err
	}
	out, err := how.ladder.Run(ctx, dir, tgt)
	a.record(ctx, run, out, how.priced, log)
	if a.observe != nil {
		a.observe(run.ID, out)
	}
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

func (a *agentPass) record(ctx context.Context, run *audit.Run, out agent.Outcome, priced bool, log *slog.Logger) {
	if a.store == nil || out.Passes == 0 {
		return
	}
	prices := a.prices
	if !priced {
		// The builtin rules cost nothing: no price makes no cost.
		prices = agent.Prices{}
	}
	st := agentStats(run.Attempts, out, prices)
	// The cost is recorded even when shutting down: the tokens were spent.
	a.metrics.agentStats(st)
	if err := a.store.AddAgentStats(context.WithoutCancel(ctx), run.ID, st); err != nil {
		log.Warn("record agent cost", "err", err)
	}
}

// writeDismissals leaves the repo's dismissed findings in the change's
// paths (and the paths its renamed files came from) in the run directory
// for a model-backed agent's prompt, so the model stops raising what the
// team already answered; on the host and in the sandbox alike the agent
// reads it from there. The builtin checks need none: the report leaves
// dismissed findings out whoever raises them. A store that cannot answer
// costs the review only the reminder, so it is logged, not fatal; the
// file is rewritten or removed every time, so a retried run never reads
// a stale list.
func (a *agentPass) writeDismissals(ctx context.Context, repo string, dir rundir.Layout, log *slog.Logger) {
	var ds []prompt.Dismissal
	if i, ok := a.ladder.Agent.(agent.RepoFilesIgnorer); a.dismissals != nil && (!ok || !i.IgnoresRepoFiles()) {
		change, err := dir.ReadChange()
		if err == nil {
			var found []findings.Finding
			found, err = a.dismissals.DismissedIn(ctx, repo, reviewedPaths(change), prompt.MaxDismissals)
			for _, f := range found {
				ds = append(ds, prompt.Dismissal{Path: f.Path, Line: f.Line, EndLine: f.EndLine, Category: f.Category,
					Message: f.Message, Reason: string(f.Dismissal), Note: f.Note})
			}
		}
		if err != nil {
			log.Warn("list the dismissed findings for the prompt; the model is not reminded of them", "err", err)
		}
	}
	if err := prompt.WriteDismissals(dir.DismissedPath(), ds); err != nil {
		log.Warn("write the dismissed findings for the prompt", "err", err)
	}
}

// writeOutputLanguage leaves the language the model is to write repo's
// review in where the model-backed agents read it. Unlike the
// dismissals it is not optional: a review in the wrong language is one
// the team cannot read, so a failure fails the run (and it is retried).
func (a *agentPass) writeOutputLanguage(repo string, dir rundir.Layout) error {
	lang := im.LangEnglish
	if a.outputLanguage != nil {
		lang = a.outputLanguage(repo)
	}
	if err := prompt.WriteOutputLanguage(dir.OutputLanguagePath(), string(lang)); err != nil {
		return fmt.Errorf("write the output language: %w", err)
	}
	return nil
}

// reviewedPaths are the paths of the change's reviewed files and those
// their copies and renames came from: a finding dismissed before a rename
// still has its old path. Files the review leaves out (deleted, binary,
// excluded, too large) cannot be reported on, so their dismissals would
// only crowd the list.
func reviewedPaths(c *vcs.Change) []string {
	seen := map[string]bool{}
	var paths []string
	for _, f := range c.Files {
		if f.Skipped != "" {
			continue
		}
		for _, p := range []string{f.Path, f.CopyFromPath} {
			if p != "" && !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// agentStats is what the audit trail records of one attempt's ladder: the
// prompt split as the provider bills it, each model round trip (or each
// pass's totals, for an agent that reports only those) and the cost at
// prices.
func agentStats(attempt int, out agent.Outcome, prices agent.Prices) audit.AgentStats {
	s := out.Stats
	st := audit.AgentStats{Agent: s.Agent, Model: s.Model, Passes: out.Passes, Turns: s.Turns,
		InputTokens: s.InputTokens, CacheReadTokens: s.CacheReadTokens, CacheWriteTokens: s.CacheWriteTokens, OutputTokens: s.OutputTokens,
		Stopped: out.Stopped, Clipped: s.Clipped}
	if usd, ok := prices.Cost(s); ok {
		st.CostUSD = &usd
	}
	for _, p := range out.Usage {
		for i, t := range p.Stats.TurnUsage {
			st.PerTurn = append(st.PerTurn, audit.TurnUsage{Attempt: attempt, Pass: p.Seq, Turn: i + 1,
				InputTokens: t.Input, CacheReadTokens: t.CacheRead, CacheWriteTokens: t.CacheWrite, OutputTokens: t.Output})
		}
		if len(p.Stats.TurnUsage) == 0 && p.Stats.PromptTokens()+p.Stats.OutputTokens > 0 {
			st.PerTurn = append(st.PerTurn, audit.TurnUsage{Attempt: attempt, Pass: p.Seq,
				InputTokens: p.Stats.InputTokens, CacheReadTokens: p.Stats.CacheReadTokens,
				CacheWriteTokens: p.Stats.CacheWriteTokens, OutputTokens: p.Stats.OutputTokens})
		}
	}
	return st
}
