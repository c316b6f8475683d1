package e2e

// A review that reaches [agent] max_cost_per_review stops: the llm loop
// sends no further turn, the ladder no further pass, and what was found is
// published as a partial review that says why; the audit keeps what the
// review cost and `aicr audit show` prints it split as billed.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/modelsim"
)

func TestReviewStopsAtItsCostLimit(t *testing.T) {
	e := newEnv(t, 1)
	script := reviewScript("src/config.go", 7)
	sim := modelsim.Start(t, script...)
	sim.RequireKey(e2eModelKey)
	t.Setenv(e2eModelKeyEnv, e2eModelKey)
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The first answer costs 1800 × $1 + 120 × $10 per million = $0.003,
	// past the limit: the second (the summary) is never asked for.
	fmt.Fprintf(f, `
[agent]
kind = "llm"
timeout = "2m"
max_cost_per_review = 0.002

[agent.llm]
api = %q
base_url = %q
model = "scripted-coder"
api_key_env = %q
max_turns = 6
price_per_mtok_in = 1.0
price_per_mtok_out = 10.0
`, modelsim.APIAnthropic, sim.URL, e2eModelKeyEnv)
	f.Close()
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})

	s := e.store()
	runs := e.waitFinished(s, 1, 120*time.Second)
	if runs[0].Status != audit.RunSucceeded {
		t.Fatalf("run: %+v\ndaemon log:\n%s", runs[0], e.daemonLogText())
	}
	if n := len(sim.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the limit was reached after the first", n)
	}
	lines := e.waitReports(60*time.Second, atLeast(1))
	const reason = "stopped at the review's cost limit of $0.002 (agent.max_cost_per_review)"
	if !strings.Contains(lines[0].Text, "Partial review: "+reason) {
		t.Errorf("the report does not say why it is partial:\n%s", lines[0].Text)
	}
	found := false
	for _, p := range lines[0].Problems {
		found = found || (p.Category == modelCategory && p.Line == 7)
	}
	if !found {
		t.Errorf("what the model found before the limit is not published: %+v", lines[0].Problems)
	}
	if !strings.Contains(lines[0].Text, "cost $0.003") {
		t.Errorf("the footer does not show the cost:\n%s", lines[0].Text)
	}
	d, err := s.GetRun(context.Background(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Agent; a == nil || a.Stopped != reason || a.CostUSD == nil || *a.CostUSD < 0.00299 || *a.CostUSD > 0.00301 || len(a.PerTurn) != 1 {
		t.Fatalf("audited agent stats: %+v", d.Agent)
	}
	out := e.aicr("audit", "show", fmt.Sprint(runs[0].ID), "--config", e.config)
	for _, want := range []string{"tokens: 1800 uncached input, 0 cache read, 0 cache write, 120 output", "cost: $0.003000",
		"partial review: " + reason, "  1.1.1: 1800 / 0 / 0 / 120"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit show does not say %q:\n%s", want, out)
		}
	}
}
