package config

import (
	"fmt"
	"strings"
)

// Budget periods and actions ([[budget]] period and action).
const (
	BudgetDay   = "day"
	BudgetMonth = "month"

	// BudgetBuiltinOnly reviews with the builtin rules only.
	BudgetBuiltinOnly = "builtin-only"
	// BudgetSkip reviews nothing: the report says the budget is spent.
	BudgetSkip = "skip"
	// BudgetFallback reviews with fallback_model on the same server.
	BudgetFallback = "fallback"
)

// BudgetTable is one [[budget]] table: what the model reviews of some
// repos (or of all) may cost in a day or a month, and what a review does
// once that is spent. Periods begin at midnight in the daemon's time zone
// (as [[digest]] schedules do unless they say CRON_TZ), so "day" is the
// operator's working day; spend is read from the audit store, so every
// daemon sharing it sees the same figure.
type BudgetTable struct {
	// Name names the budget in reports, queue status and metrics.
	Name string `toml:"name"`
	// Repos are the repos it covers; empty covers every repo, together.
	Repos []string `toml:"repos"`
	// Period is "day" or "month".
	Period string `toml:"period"`
	// MaxCostUSD and MaxInputTokens are the limits; at least one is set,
	// and the budget is spent when either is reached. Input tokens are
	// every prompt token, cached ones included: the limit is on what is
	// sent, whatever the price.
	MaxCostUSD     float64 `toml:"max_cost_usd"`
	MaxInputTokens int64   `toml:"max_input_tokens"`
	// Action is what a review does once the budget is spent.
	Action string `toml:"action"`
	// FallbackModel is the model of action "fallback", on the [agent.llm]
	// server.
	FallbackModel string `toml:"fallback_model"`
	// WarnAt, a fraction in (0, 1), makes the budget show as warning
	// (queue status, metrics, the log) once that much is spent.
	WarnAt float64 `toml:"warn_at"`
}

// Covers says whether the budget counts repo's reviews.
func (b BudgetTable) Covers(repo string) bool {
	if len(b.Repos) == 0 {
		return true
	}
	for _, r := range b.Repos {
		if r == repo {
			return true
		}
	}
	return false
}

// validateBudgets checks every [[budget]]: a unique name, known repos,
// a period, at least one limit the audit can measure, an action (with
// its fallback model), and an agent that uses a model at all.
func (c *Config) validateBudgets() []fieldProblem {
	var out []fieldProblem
	add := func(key, format string, args ...any) {
		out = append(out, fieldProblem{key, fmt.Sprintf(format, args...)})
	}
	repos := map[string]bool{}
	for _, r := range c.Repos {
		repos[r.Name] = true
	}
	prices := c.Agent.Prices()
	priced := prices.PerMTokIn > 0 || prices.PerMTokOut > 0
	names := map[string]bool{}
	for i, b := range c.Budgets {
		key := fmt.Sprintf("budget[%d]", i)
		checkTableName(add, key, "budget", "daily", b.Name, names)
		if !c.Agent.UsesModel() {
			add(key, "limits model reviews, but [agent] kind = %q uses no model; remove the [[budget]] or configure a model agent", c.Agent.Kind)
		}
		for _, r := range b.Repos {
			if !repos[r] {
				add(key+".repos", "names repo %q, which no [[repo]] defines (repos: %s)", r, strings.Join(c.RepoNames(), ", "))
			}
		}
		switch b.Period {
		case BudgetDay, BudgetMonth:
		case "":
			add(key+".period", `missing; set period = "day" or "month"`)
		default:
			add(key+".period", `must be "day" or "month", got %q`, b.Period)
		}
		switch {
		case b.MaxCostUSD < 0:
			add(key+".max_cost_usd", "must not be negative, got %g", b.MaxCostUSD)
		case b.MaxInputTokens < 0:
			add(key+".max_input_tokens", "must not be negative, got %d", b.MaxInputTokens)
		case b.MaxCostUSD == 0 && b.MaxInputTokens == 0:
			add(key, "has no limit; set max_cost_usd (USD) or max_input_tokens, or both")
		case b.MaxCostUSD > 0 && !priced && c.Agent.UsesModel():
			// Without prices no run has a cost: the budget would never run out.
			add(key+".max_cost_usd", "needs the model's prices to measure spend: set [agent.llm] price_per_mtok_in and price_per_mtok_out, or limit max_input_tokens instead")
		}
		switch b.Action {
		case BudgetBuiltinOnly, BudgetSkip:
			if b.FallbackModel != "" {
				add(key+".fallback_model", "is used only with action = %q; remove it or change the action", BudgetFallback)
			}
		case BudgetFallback:
			switch {
			case strings.TrimSpace(b.FallbackModel) == "":
				add(key+".fallback_model", `missing; action = "fallback" needs the model to review with once the budget is spent (a model name on the [agent.llm] server)`)
			case b.FallbackModel == c.Agent.LLM.Model:
				add(key+".fallback_model", "%q is [agent.llm] model itself; name a cheaper model, or use action = %q", b.FallbackModel, BudgetBuiltinOnly)
			}
		case "":
			add(key+".action", `missing; set action = "builtin-only", "skip" or "fallback"`)
		default:
			add(key+".action", `must be "builtin-only", "skip" or "fallback", got %q`, b.Action)
		}
		if b.WarnAt < 0 || b.WarnAt >= 1 {
			add(key+".warn_at", "must be a fraction between 0 and 1 (0.8 warns at 80%%), got %g", b.WarnAt)
		}
	}
	return out
}
