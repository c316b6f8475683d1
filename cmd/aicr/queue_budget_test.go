package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/admintest"
)

// queue status shows what each budget has spent of its limit, what is
// left and when its period ends, read from the audit the way the daemon
// measures it before a review.
func TestQueueStatusShowsTheBudgets(t *testing.T) {
	fx := admintest.New(t)
	f, err := os.OpenFile(fx.Config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`
[agent]
kind = "llm"
[agent.llm]
api = "openai-chat"
base_url = "http://127.0.0.1:1/v1"
model = "big"
api_key_env = "AICR_TEST_NO_KEY"
price_per_mtok_in = 1.0
price_per_mtok_out = 10.0

[[budget]]
name = "monthly"
period = "month"
max_cost_usd = 0.20
action = "builtin-only"

[[budget]]
name = "docs-daily"
repos = ["docs"]
period = "day"
max_input_tokens = 5000
action = "fallback"
fallback_model = "small"
`)
	f.Close()
	ctx := context.Background()
	store, err := audit.Open(ctx, fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil || run == nil {
		t.Fatalf("claim: %v %v", run, err)
	}
	cost := 0.25
	if err := store.AddAgentStats(ctx, run.ID, audit.AgentStats{Agent: "llm", Model: "big", Passes: 1, Turns: 1, InputTokens: 1200, OutputTokens: 100, CostUSD: &cost}); err != nil {
		t.Fatal(err)
	}
	notice := &im.BudgetNotice{Name: "monthly", Action: "builtin-only", Period: "month", SpentUSD: 0.25, LimitUSD: 0.2,
		ResumesAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Zone: "UTC"}
	if err := store.SetRunBudget(ctx, run.ID, notice); err != nil {
		t.Fatal(err)
	}
	store.Close()
	show, _, _ := runCLI(t, "audit", "show", fmt.Sprint(run.ID), "--config", fx.Config)
	if want := "budget: monthly spent, action builtin-only: The model budget monthly for this month is spent ($0.25 of $0.20); reviewed with the builtin rules only; model reviews resume at 2027-01-01 00:00 UTC."; !strings.Contains(show, want) {
		t.Errorf("audit show lacks %q:\n%s", want, show)
	}

	out, errOut, code := runCLI(t, "queue", "status", "--format", "json", "--config", fx.Config)
	var q admin.QueueView
	if err := json.Unmarshal([]byte(out), &q); err != nil || code != 0 || len(q.Budgets) != 2 {
		t.Fatalf("queue status: exit %d %v\n%s%s", code, err, out, errOut)
	}
	m, d := q.Budgets[0], q.Budgets[1]
	if m.Name != "monthly" || m.State != "spent" || m.SpentUSD != 0.25 || m.LimitUSD != 0.20 || m.RemainingUSD != 0 || m.Runs != 1 ||
		m.PeriodEnd.Day() != 1 || !m.PeriodEnd.After(m.PeriodStart) {
		t.Errorf("monthly: %+v", m)
	}
	// The run was main's: the docs budget has spent nothing.
	if d.Name != "docs-daily" || d.State != "ok" || d.SpentTokens != 0 || d.RemainingTokens != 5000 || d.Repos[0] != "docs" {
		t.Errorf("docs-daily: %+v", d)
	}
	text, _, _ := runCLI(t, "queue", "status", "--config", fx.Config)
	for _, want := range []string{"BUDGET", "monthly", "spent  $0.25", "$0.20", "builtin-only", "docs-daily", "5000 tokens", "fallback (small)"} {
		if !strings.Contains(text, want) {
			t.Errorf("queue status text lacks %q:\n%s", want, text)
		}
	}
}
