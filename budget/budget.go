// Package budget measures the [[budget]] tables against the spend the
// audit store records and decides what a review does once one is spent.
// The daemon asks before each review; aicr queue status, /metrics and
// the digest show the same figures, so they never disagree.
package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/im"
)

// Spender is the part of the audit store a budget reads
// (audit.Store.SpendIn).
type Spender interface {
	SpendIn(ctx context.Context, repos []string, since, until time.Time) (audit.Spend, error)
}

var _ Spender = (*audit.Store)(nil)

// States of a budget.
const (
	StateOK      = "ok"
	StateWarning = "warning"
	StateSpent   = "spent"
)

// Period is the day or month that contains now, in now's location: the
// daemon's time zone, whose midnight starts a day.
func Period(period string, now time.Time) (start, end time.Time) {
	y, m, d := now.Date()
	if period == config.BudgetMonth {
		start = time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
		return start, start.AddDate(0, 1, 0)
	}
	start = time.Date(y, m, d, 0, 0, 0, 0, now.Location())
	return start, start.AddDate(0, 0, 1)
}

// Status is one budget in its current period.
type Status struct {
	Name string `json:"name"`
	// Repos it covers; empty covers every repo.
	Repos         []string  `json:"repos"`
	Period        string    `json:"period"`
	Action        string    `json:"action"`
	FallbackModel string    `json:"fallback_model,omitempty"`
	PeriodStart   time.Time `json:"period_start"`
	PeriodEnd     time.Time `json:"period_end"`
	// State is ok, warning (warn_at reached) or spent.
	State string `json:"state"`
	// Runs counts the runs that used a model in the period.
	Runs int `json:"runs"`
	// The cost limit's figures; zero limit: no cost limit.
	SpentUSD     float64 `json:"spent_usd"`
	LimitUSD     float64 `json:"limit_usd,omitempty"`
	RemainingUSD float64 `json:"remaining_usd,omitempty"`
	// The prompt-token limit's figures; zero limit: no token limit.
	SpentTokens     int64 `json:"spent_tokens"`
	LimitTokens     int64 `json:"limit_tokens,omitempty"`
	RemainingTokens int64 `json:"remaining_tokens,omitempty"`
}

// Spent says whether a review must take the budget's action.
func (s Status) Spent() bool { return s.State == StateSpent }

// costOut and tokensOut say which limit ran out.
func (s Status) costOut() bool   { return s.LimitUSD > 0 && s.SpentUSD >= s.LimitUSD }
func (s Status) tokensOut() bool { return s.LimitTokens > 0 && s.SpentTokens >= s.LimitTokens }

// StatusOf measures t in the period containing now.
func StatusOf(ctx context.Context, sp Spender, t config.BudgetTable, now time.Time) (Status, error) {
	start, end := Period(t.Period, now)
	s := Status{Name: t.Name, Repos: t.Repos, Period: t.Period, Action: t.Action, FallbackModel: t.FallbackModel,
		PeriodStart: start, PeriodEnd: end, LimitUSD: t.MaxCostUSD, LimitTokens: t.MaxInputTokens}
	if s.Repos == nil {
		s.Repos = []string{}
	}
	spend, err := sp.SpendIn(ctx, t.Repos, start, end)
	if err != nil {
		return s, fmt.Errorf("budget %s: %w", t.Name, err)
	}
	s.Runs, s.SpentUSD, s.SpentTokens = spend.Runs, spend.CostUSD, spend.PromptTokens
	if s.LimitUSD > 0 {
		s.RemainingUSD = max(0, s.LimitUSD-s.SpentUSD)
	}
	if s.LimitTokens > 0 {
		s.RemainingTokens = max(0, s.LimitTokens-s.SpentTokens)
	}
	s.State = StateOK
	switch {
	case s.costOut() || s.tokensOut():
		s.State = StateSpent
	case t.WarnAt > 0 && ((s.LimitUSD > 0 && s.SpentUSD >= t.WarnAt*s.LimitUSD) ||
		(s.LimitTokens > 0 && float64(s.SpentTokens) >= t.WarnAt*float64(s.LimitTokens))):
		s.State = StateWarning
	}
	return s, nil
}

// Statuses measures every table, in config order.
func Statuses(ctx context.Context, sp Spender, tables []config.BudgetTable, now time.Time) ([]Status, error) {
	out := make([]Status, 0, len(tables))
	for _, t := range tables {
		s, err := StatusOf(ctx, sp, t, now)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

// severity orders the actions when several spent budgets cover a repo:
// the one that spends the least wins.
var severity = map[string]int{config.BudgetFallback: 1, config.BudgetBuiltinOnly: 2, config.BudgetSkip: 3}

// Decide is what a review of repo starting now must do: nil when no
// budget covering repo is spent, else the notice of the spent budget
// whose action spends least (skip, then builtin-only, then fallback; the
// first in config order among equals). Every budget covering repo is
// measured, so statuses has them all, for the log.
func Decide(ctx context.Context, sp Spender, tables []config.BudgetTable, repo string, now time.Time) (*im.BudgetNotice, []Status, error) {
	pick := -1
	var statuses []Status
	for _, t := range tables {
		if !t.Covers(repo) {
			continue
		}
		s, err := StatusOf(ctx, sp, t, now)
		if err != nil {
			return nil, statuses, err
		}
		statuses = append(statuses, s)
		if s.Spent() && (pick < 0 || severity[s.Action] > severity[statuses[pick].Action]) {
			pick = len(statuses) - 1
		}
	}
	if pick < 0 {
		return nil, statuses, nil
	}
	p := statuses[pick]
	n := &im.BudgetNotice{Name: p.Name, Action: p.Action, Period: p.Period, FallbackModel: p.FallbackModel,
		Tokens: !p.costOut(), SpentUSD: p.SpentUSD, LimitUSD: p.LimitUSD, SpentTokens: p.SpentTokens, LimitTokens: p.LimitTokens,
		ResumesAt: p.PeriodEnd, Zone: p.PeriodEnd.Format("MST")}
	return n, statuses, nil
}
