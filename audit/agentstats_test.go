package audit

import (
	"context"
	"errors"
	"testing"

	"github.com/aicr-dev/aicr/triggers"
)

// A run's agent cost adds up over its attempts; no price means no cost
// (unknown), not a cost of zero.
func TestAgentStatsAddUp(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	enq := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	d, err := s.GetRun(ctx, enq.RunID)
	if err != nil || d.Agent != nil {
		t.Fatalf("before any agent ran: %+v %v", d.Agent, err)
	}
	if err := s.AddAgentStats(ctx, enq.RunID, AgentStats{Agent: "llm", Model: "m-1", Passes: 2, Turns: 5, InputTokens: 1000, OutputTokens: 100}); err != nil {
		t.Fatal(err)
	}
	if d, _ = s.GetRun(ctx, enq.RunID); d.Agent == nil || d.Agent.CostUSD != nil || d.Agent.Passes != 2 {
		t.Fatalf("unpriced: %+v", d.Agent)
	}
	cost := 0.25
	if err := s.AddAgentStats(ctx, enq.RunID, AgentStats{Agent: "llm", Model: "m-2", Passes: 1, Turns: 1, InputTokens: 500, OutputTokens: 50, CostUSD: &cost}); err != nil {
		t.Fatal(err)
	}
	d, err = s.GetRun(ctx, enq.RunID)
	if err != nil {
		t.Fatal(err)
	}
	a := d.Agent
	if a.Model != "m-2" || a.Passes != 3 || a.Turns != 6 || a.InputTokens != 1500 || a.OutputTokens != 150 || a.CostUSD == nil || *a.CostUSD != 0.25 {
		t.Errorf("summed stats %+v", a)
	}
	if err := s.AddAgentStats(ctx, 999, AgentStats{Agent: "llm"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}
