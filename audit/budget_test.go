package audit

import (
	"context"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/triggers"
)

// SpendIn sums what the runs of the repos started in the period used,
// whatever became of them (failed and dry runs were billed too), and
// leaves out runs that used no model, other repos and other periods. It
// runs on both backends (TestStoreSuiteOnPostgres).
func TestSpendInSumsThePeriodsModelUsage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	clock := day.Add(-time.Hour)
	s.SetClock(func() time.Time { return clock })
	run := func(repo, rev string, at time.Time, st *AgentStats, out Outcome) int64 {
		t.Helper()
		clock = at
		r, err := s.EnqueueClaimedWith(ctx, triggers.Event{V: 1, VCS: "svn", Repo: repo, Revision: rev}, at, ClaimOptions{DryRun: rev == "dry"})
		if err != nil {
			t.Fatal(err)
		}
		if st != nil {
			if err := s.AddAgentStats(ctx, r.ID, *st); err != nil {
				t.Fatal(err)
			}
		}
		if out.Status != "" {
			if err := s.FinishRun(ctx, r.ID, out); err != nil {
				t.Fatal(err)
			}
		}
		return r.ID
	}
	usd := func(v float64) *float64 { return &v }
	llm := func(in, outTok int, cost *float64) *AgentStats {
		return &AgentStats{Agent: "llm", Model: "m", Passes: 1, Turns: 1, InputTokens: in, OutputTokens: outTok, CostUSD: cost}
	}
	// The day before: not counted.
	run("main", "1", day.Add(-time.Minute), llm(1000, 10, usd(1)), Outcome{Status: RunSucceeded})
	// The day: succeeded, failed, a dry run, one still running.
	run("main", "2", day.Add(time.Hour), llm(2000, 20, usd(0.5)), Outcome{Status: RunSucceeded})
	run("main", "3", day.Add(2*time.Hour), llm(3000, 30, usd(0.25)), Outcome{Status: RunFailed, Error: "x"})
	run("main", "dry", day.Add(3*time.Hour), llm(400, 4, usd(0.125)), Outcome{Status: RunSucceeded})
	// Prompt tokens read from or written to the cache count as sent.
	cached := llm(100, 5, nil)
	cached.CacheReadTokens, cached.CacheWriteTokens = 300, 100
	running := run("main", "4", day.Add(4*time.Hour), cached, Outcome{})
	// The builtin rules used no model; another repo's run is not main's.
	run("main", "5", day.Add(5*time.Hour), &AgentStats{Agent: "builtin", Passes: 1}, Outcome{Status: RunSucceeded})
	run("docs", "1", day.Add(6*time.Hour), llm(7000, 70, usd(2)), Outcome{Status: RunSucceeded})
	// The next day: not counted.
	run("main", "6", day.Add(24*time.Hour), llm(9000, 90, usd(4)), Outcome{Status: RunSucceeded})

	sp, err := s.SpendIn(ctx, []string{"main"}, day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Runs != 4 || sp.CostUSD != 0.875 || !sp.Priced || sp.PromptTokens != 5900 || sp.OutputTokens != 59 {
		t.Errorf("main's day: %+v", sp)
	}
	all, err := s.SpendIn(ctx, nil, day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if all.Runs != 5 || all.CostUSD != 2.875 || all.PromptTokens != 12900 {
		t.Errorf("every repo's day: %+v", all)
	}
	none, err := s.SpendIn(ctx, []string{"nowhere"}, day, day.Add(24*time.Hour))
	if err != nil || none.Runs != 0 || none.Priced || none.CostUSD != 0 || none.PromptTokens != 0 {
		t.Errorf("no runs: %+v %v", none, err)
	}

	// The budget that applied to a run is recorded and read back with it.
	b := &im.BudgetNotice{Name: "daily", Action: "builtin-only", Period: "day", SpentUSD: 1.5, LimitUSD: 1,
		ResumesAt: day.Add(24 * time.Hour), Zone: "UTC"}
	if err := s.SetRunBudget(ctx, running, b); err != nil {
		t.Fatal(err)
	}
	d, err := s.GetRun(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	if d.Budget == nil || d.Budget.Name != "daily" || d.Budget.Action != "builtin-only" || d.Budget.LimitUSD != 1 || !d.Budget.ResumesAt.Equal(b.ResumesAt) {
		t.Errorf("budget read back: %+v", d.Budget)
	}
	if err := s.SetRunBudget(ctx, running, nil); err != nil {
		t.Fatal(err)
	}
	if d, err = s.GetRun(ctx, running); err != nil || d.Budget != nil {
		t.Errorf("a cleared budget reads %+v %v", d.Budget, err)
	}
	if err := s.SetRunBudget(ctx, 9999, b); err == nil {
		t.Error("a budget recorded on a run that does not exist")
	}
}
