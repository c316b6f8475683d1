package budget

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

func TestPeriodIsTheDaemonsDayOrMonth(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	now := time.Date(2026, 12, 31, 23, 30, 0, 0, tokyo)
	start, end := Period(config.BudgetDay, now)
	if !start.Equal(time.Date(2026, 12, 31, 0, 0, 0, 0, tokyo)) || !end.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, tokyo)) {
		t.Errorf("day: %v – %v", start, end)
	}
	start, end = Period(config.BudgetMonth, now)
	if !start.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, tokyo)) || !end.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, tokyo)) {
		t.Errorf("month: %v – %v", start, end)
	}
	// The same instant in UTC is another day.
	start, _ = Period(config.BudgetDay, now.UTC())
	if !start.Equal(time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("UTC day starts %v", start)
	}
}

// When several spent budgets cover a repo, the action that spends least
// wins; a budget of another repo, or not spent, has no say.
func TestDecidePicksTheActionThatSpendsLeast(t *testing.T) {
	ctx := context.Background()
	s, err := audit.Open(ctx, filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	r, err := s.EnqueueClaimedWith(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "1"}, now, audit.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cost := 2.0
	if err := s.AddAgentStats(ctx, r.ID, audit.AgentStats{Agent: "llm", Model: "m", Passes: 1, InputTokens: 1000, CostUSD: &cost}); err != nil {
		t.Fatal(err)
	}
	tables := []config.BudgetTable{
		{Name: "fb", Period: config.BudgetDay, MaxCostUSD: 1, Action: config.BudgetFallback, FallbackModel: "small"},
		{Name: "rules", Period: config.BudgetMonth, MaxInputTokens: 500, Action: config.BudgetBuiltinOnly},
		{Name: "roomy", Period: config.BudgetDay, MaxCostUSD: 100, Action: config.BudgetSkip, WarnAt: 0.01},
		{Name: "docs", Repos: []string{"docs"}, Period: config.BudgetDay, MaxCostUSD: 1, Action: config.BudgetSkip},
	}
	n, statuses, err := Decide(ctx, s, tables, "main", now)
	if err != nil {
		t.Fatal(err)
	}
	if n == nil || n.Name != "rules" || n.Action != config.BudgetBuiltinOnly || !n.Tokens || n.SpentTokens != 1000 ||
		!n.ResumesAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || n.Zone != "UTC" {
		t.Errorf("notice %+v", n)
	}
	if len(statuses) != 3 || statuses[2].State != StateWarning || statuses[0].State != StateSpent || statuses[0].RemainingUSD != 0 {
		t.Errorf("statuses %+v", statuses)
	}
	// A global budget counts every repo's spend: main's review spent it
	// for docs as well; docs' own budget is untouched.
	if n, st, err := Decide(ctx, s, tables, "docs", now); err != nil || n == nil || n.Name != "rules" || len(st) != 4 || st[3].State != StateOK {
		t.Errorf("docs: %+v %+v %v", n, st, err)
	}
	if n, _, err := Decide(ctx, s, tables[2:], "main", now); err != nil || n != nil {
		t.Errorf("nothing spent: %+v %v", n, err)
	}
}
