package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
)

// audit show splits a run's tokens as the provider bills them, with the
// cost and each turn, in text and in JSON.
func TestAuditShowSplitsTokens(t *testing.T) {
	configPath, dataDir, _ := writeFileChannelConfig(t)
	ctx := context.Background()
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "7", User: "alice"}, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.0123
	st := audit.AgentStats{Agent: "llm", Model: "claude-x", Passes: 2, Turns: 3, InputTokens: 1240, CacheReadTokens: 14000, CacheWriteTokens: 7160, OutputTokens: 260,
		CostUSD: &cost, Clipped: []string{"src/big.c", "src/huge.c"}, Stopped: "stopped at the review's cost limit of $0.01 (agent.max_cost_per_review)",
		PerTurn: []audit.TurnUsage{
			{Attempt: 1, Pass: 1, Turn: 1, InputTokens: 40, CacheWriteTokens: 7000, OutputTokens: 120},
			{Attempt: 1, Pass: 1, Turn: 2, InputTokens: 300, CacheReadTokens: 7000, CacheWriteTokens: 160, OutputTokens: 80},
			{Attempt: 1, Pass: 2, Turn: 1, InputTokens: 900, CacheReadTokens: 7000, OutputTokens: 60},
		}}
	if err := store.AddAgentStats(ctx, run.ID, st); err != nil {
		t.Fatal(err)
	}
	store.Close()

	f, out, _ := testFactory(t, configPath)
	if err := auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: run.ID, Format: formatText}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"agent: llm (model claude-x), passes 2, turns 3",
		"tokens: 1240 uncached input, 14000 cache read, 7160 cache write, 260 output (62% of the prompt read from cache)",
		"cost: $0.012300",
		"partial review: stopped at the review's cost limit of $0.01 (agent.max_cost_per_review)",
		"  1.1.1: 40 / 0 / 7000 / 120\n  1.1.2: 300 / 7000 / 160 / 80\n  1.2.1: 900 / 7000 / 0 / 60\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit show does not say %q:\n%s", want, out)
		}
	}
	f, out, _ = testFactory(t, configPath)
	if err := auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: run.ID, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var d audit.RunDetail
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Agent == nil || !reflect.DeepEqual(*d.Agent, st) {
		t.Errorf("json agent %+v, want %+v", d.Agent, st)
	}
	for _, key := range []string{`"cache_read_tokens": 14000`, `"cache_write_tokens": 7160`, `"per_turn"`, `"stopped"`} {
		if !strings.Contains(out.String(), key) {
			t.Errorf("json lacks %s:\n%s", key, out)
		}
	}
}
