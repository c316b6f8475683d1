package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/budget"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
)

// budgets is what the reviewer consults before each review: the
// [[budget]] tables, the spend the audit store records, and the ladders
// a spent budget switches a review to. A budget is checked when a review
// starts, so reviews already running when it runs out finish with the
// configured model: the overrun is at most what they cost.
type budgets struct {
	tables []config.BudgetTable
	spend  budget.Spender
	now    func() time.Time
	// builtin runs the builtin rules alone (action builtin-only).
	builtin *agent.Ladder
	// fallback are the ladders of the fallback models, by model name.
	fallback map[string]*agent.Ladder
}

// newBudgets builds what cfg's [[budget]] tables need, or nil without
// any (or without a store to measure them against).
func newBudgets(cfg *config.Config, deps Deps) (*budgets, error) {
	if len(cfg.Budgets) == 0 || deps.Store == nil {
		return nil, nil
	}
	b := &budgets{tables: cfg.Budgets, spend: deps.Store, now: deps.Now, fallback: map[string]*agent.Ladder{}}
	rules := cfg.Agent
	rules.Kind = agent.KindBuiltin
	ag, err := agent.New(rules, agent.Deps{Limits: rules.Limits(), Logger: deps.Logger})
	if err != nil {
		return nil, fmt.Errorf("budget: builtin rules: %w", err)
	}
	b.builtin = agent.NewLadder(rules, ag, deps.Logger)
	for _, t := range cfg.Budgets {
		if t.Action != config.BudgetFallback || b.fallback[t.FallbackModel] != nil {
			continue
		}
		fb := *cfg
		fb.Agent.LLM.Model = t.FallbackModel
		ag, err := buildAgent(&fb, deps)
		if err != nil {
			return nil, fmt.Errorf("budget %s: fallback_model %q: %w", t.Name, t.FallbackModel, err)
		}
		b.fallback[t.FallbackModel] = agent.NewLadder(fb.Agent, ag, deps.Logger)
	}
	return b, nil
}

// routed is how one review runs under the budgets.
type routed struct {
	// ladder is nil for a review the budget skips.
	ladder *agent.Ladder
	// priced says whether the run's usage is priced (not the builtin rules).
	priced bool
	// notice is the spent budget that chose it; nil: the configured agent.
	notice *im.BudgetNotice
}

// route decides how run is reviewed, records the decision on the run
// (cleared when a retry is no longer touched by a budget) and logs it.
func (b *budgets) route(ctx context.Context, store *audit.Store, run *audit.Run, main *agent.Ladder, log *slog.Logger) (routed, error) {
	if b == nil {
		return routed{ladder: main, priced: true}, nil
	}
	notice, statuses, err := budget.Decide(ctx, b.spend, b.tables, run.Repo, b.now())
	if err != nil {
		return routed{}, fmt.Errorf("measure the model budgets: %w", err)
	}
	for _, s := range statuses {
		if s.State == budget.StateWarning {
			log.Warn("model budget nearly spent", "budget", s.Name, "spent_usd", s.SpentUSD, "limit_usd", s.LimitUSD,
				"spent_tokens", s.SpentTokens, "limit_tokens", s.LimitTokens, "period_end", s.PeriodEnd)
		}
	}
	if err := store.SetRunBudget(ctx, run.ID, notice); err != nil {
		return routed{}, err
	}
	if notice == nil {
		return routed{ladder: main, priced: true}, nil
	}
	log.Warn("model budget spent", "budget", notice.Name, "action", notice.Action, "spent_usd", notice.SpentUSD,
		"limit_usd", notice.LimitUSD, "spent_tokens", notice.SpentTokens, "limit_tokens", notice.LimitTokens,
		"resumes_at", notice.ResumesAt)
	switch notice.Action {
	case config.BudgetSkip:
		return routed{notice: notice}, nil
	case config.BudgetFallback:
		return routed{ladder: b.fallback[notice.FallbackModel], priced: true, notice: notice}, nil
	}
	return routed{ladder: b.builtin, notice: notice}, nil
}

// rulesOnly says whether a spent budget left a review to the builtin
// rules: such a review resolves no finding, since the model's findings it
// does not repeat were never looked for.
func rulesOnly(b *im.BudgetNotice) bool {
	return b != nil && b.Action == config.BudgetBuiltinOnly
}

// skippedForBudget is the result of a review a spent budget skipped:
// nothing reviewed, the reason recorded and reported.
func skippedForBudget() review.Result {
	return review.Result{Problems: []review.Problem{}, Summaries: []review.Summary{}, Skip: &review.Skip{Reason: im.ReasonBudgetSpent}}
}

// budgetsCovering are the tables that count any of repos.
func budgetsCovering(tables []config.BudgetTable, repos []string) []config.BudgetTable {
	var out []config.BudgetTable
	for _, t := range tables {
		if len(t.Repos) == 0 || slices.ContainsFunc(repos, t.Covers) {
			out = append(out, t)
		}
	}
	return out
}
