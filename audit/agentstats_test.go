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

// The prompt split (uncached, cache reads, cache writes) adds up over the
// attempts next to the cost, and every turn of every attempt and pass is
// kept, in order.
func TestAgentStatsCacheSplitAndTurns(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	enq := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	first := AgentStats{Agent: "llm", Model: "m", Passes: 2, Turns: 3, InputTokens: 700, CacheReadTokens: 0, CacheWriteTokens: 6000, OutputTokens: 90,
		PerTurn: []TurnUsage{
			{Attempt: 1, Pass: 1, Turn: 1, InputTokens: 500, CacheWriteTokens: 6000, OutputTokens: 40},
			{Attempt: 1, Pass: 1, Turn: 2, InputTokens: 100, OutputTokens: 30},
			{Attempt: 1, Pass: 2, Turn: 1, InputTokens: 100, OutputTokens: 20},
		}}
	second := AgentStats{Agent: "llm", Model: "m", Passes: 1, Turns: 1, InputTokens: 50, CacheReadTokens: 6000, OutputTokens: 10,
		PerTurn: []TurnUsage{{Attempt: 2, Pass: 1, Turn: 1, InputTokens: 50, CacheReadTokens: 6000, OutputTokens: 10}}}
	// Out of order on purpose: the trail reads them back by attempt, pass, turn.
	for _, st := range []AgentStats{second, first} {
		if err := s.AddAgentStats(ctx, enq.RunID, st); err != nil {
			t.Fatal(err)
		}
	}
	d, err := s.GetRun(ctx, enq.RunID)
	if err != nil {
		t.Fatal(err)
	}
	a := d.Agent
	if a.InputTokens != 750 || a.CacheReadTokens != 6000 || a.CacheWriteTokens != 6000 || a.OutputTokens != 100 || a.PromptTokens() != 12750 {
		t.Errorf("summed split %+v", a)
	}
	want := append(append([]TurnUsage{}, first.PerTurn...), second.PerTurn...)
	if len(a.PerTurn) != len(want) {
		t.Fatalf("turns %+v, want %+v", a.PerTurn, want)
	}
	for i := range want {
		if a.PerTurn[i] != want[i] {
			t.Errorf("turn %d = %+v, want %+v", i, a.PerTurn[i], want[i])
		}
	}
	// Re-sent, a turn replaces itself rather than counting twice.
	if err := s.AddAgentStats(ctx, enq.RunID, AgentStats{Agent: "llm", PerTurn: second.PerTurn}); err != nil {
		t.Fatal(err)
	}
	if d, _ = s.GetRun(ctx, enq.RunID); len(d.Agent.PerTurn) != len(want) {
		t.Errorf("re-sent turn duplicated: %+v", d.Agent.PerTurn)
	}
}
