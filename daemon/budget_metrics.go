package daemon

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicr-dev/aicr/budget"
	"github.com/aicr-dev/aicr/config"
)

// budgetCollector measures the running config's [[budget]]s at scrape
// time, as the reviewer does before a review, so the gauges are what
// the next review will see.
type budgetCollector struct {
	spend  budget.Spender
	now    func() time.Time
	tables atomic.Pointer[[]config.BudgetTable]
}

var (
	descBudgetSpentUSD     = prometheus.NewDesc("aicr_budget_spent_usd", "What a [[budget]]'s current period has spent, in USD.", []string{"budget"}, nil)
	descBudgetLimitUSD     = prometheus.NewDesc("aicr_budget_limit_usd", "A [[budget]]'s max_cost_usd; absent without one.", []string{"budget"}, nil)
	descBudgetRemainingUSD = prometheus.NewDesc("aicr_budget_remaining_usd", "What is left of a [[budget]]'s max_cost_usd this period (0 once spent).", []string{"budget"}, nil)
	descBudgetSpentTok     = prometheus.NewDesc("aicr_budget_spent_tokens", "Prompt tokens (uncached, cache reads and writes) a [[budget]]'s current period has sent.", []string{"budget"}, nil)
	descBudgetLimitTok     = prometheus.NewDesc("aicr_budget_limit_tokens", "A [[budget]]'s max_input_tokens; absent without one.", []string{"budget"}, nil)
	descBudgetRemainingTok = prometheus.NewDesc("aicr_budget_remaining_tokens", "What is left of a [[budget]]'s max_input_tokens this period (0 once spent).", []string{"budget"}, nil)
	descBudgetExhausted    = prometheus.NewDesc("aicr_budget_exhausted", "1 while a [[budget]] is spent and reviews take its action.", []string{"budget"}, nil)
	descBudgetPeriodEnd    = prometheus.NewDesc("aicr_budget_period_end_timestamp_seconds", "When a [[budget]]'s current period ends and model reviews resume.", []string{"budget"}, nil)
)

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBudgetSpentUSD, descBudgetLimitUSD, descBudgetRemainingUSD, descBudgetSpentTok,
		descBudgetLimitTok, descBudgetRemainingTok, descBudgetExhausted, descBudgetPeriodEnd} {
		ch <- d
	}
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.tables.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A store that does not answer shows as aicr_store_up 0; the budget
	// series are left out rather than reported as nothing spent.
	statuses, _ := budget.Statuses(ctx, c.spend, *p, c.now())
	for _, s := range statuses {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Name)
		}
		if s.LimitUSD > 0 {
			gauge(descBudgetSpentUSD, s.SpentUSD)
			gauge(descBudgetLimitUSD, s.LimitUSD)
			gauge(descBudgetRemainingUSD, s.RemainingUSD)
		}
		if s.LimitTokens > 0 {
			gauge(descBudgetSpentTok, float64(s.SpentTokens))
			gauge(descBudgetLimitTok, float64(s.LimitTokens))
			gauge(descBudgetRemainingTok, float64(s.RemainingTokens))
		}
		exhausted := 0.0
		if s.Spent() {
			exhausted = 1
		}
		gauge(descBudgetExhausted, exhausted)
		gauge(descBudgetPeriodEnd, float64(s.PeriodEnd.Unix()))
	}
}

// watchBudgets sets the budgets the gauges measure: the running config's,
// so a removed budget's series go at the next scrape.
func (m *Metrics) watchBudgets(tables []config.BudgetTable) {
	if m == nil || m.budgets == nil {
		return
	}
	tables = append([]config.BudgetTable(nil), tables...)
	m.budgets.tables.Store(&tables)
}
