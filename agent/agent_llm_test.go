package agent_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// kind = "llm" validates its [agent.llm] table, every error naming its
// key, and New builds the agent without contacting anything.
func TestLLMKind(t *testing.T) {
	err := agent.Config{Kind: "llm", LLM: llm.Config{API: "openai", BaseURL: "ftp://x", MaxTurns: -1}}.Validate()
	if err == nil {
		t.Fatal("an empty [agent.llm] must be refused")
	}
	for _, want := range []string{
		`agent.llm.api: unknown API "openai" (one of: openai-chat, openai-responses, anthropic, gemini)`,
		`agent.llm.base_url: must be an http:// or https:// URL, got "ftp://x"`,
		"agent.llm.model: is required",
		"agent.llm.max_turns: must not be negative, got -1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	good := agent.Config{Kind: "llm", Timeout: time.Minute, LLM: llm.Config{API: llm.APIAnthropic, Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(good, agent.Deps{})
	if err != nil || a == nil {
		t.Fatalf("New: %v", err)
	}
}

// The [agent.llm] prices price the review; builtin has none.
func TestLLMPrices(t *testing.T) {
	c := agent.Config{Kind: "llm", LLM: llm.Config{PricePerMTokIn: 3, PricePerMTokOut: 15}}
	cost, ok := c.Prices().Cost(pass.Stats{InputTokens: 2_000_000, OutputTokens: 100_000})
	if !ok || cost != 7.5 {
		t.Errorf("cost %v %v, want 7.5", cost, ok)
	}
	c.Kind = "builtin"
	if _, ok := c.Prices().Cost(pass.Stats{InputTokens: 1}); ok {
		t.Error("builtin has no price")
	}
}

// [agent.llm] timeout bounds the llm agent's pass in place of [agent]
// timeout, and the error names the key that set it: a model server that
// never answers does not hold a worker for the longer limit.
func TestLLMTimeoutBoundsThePass(t *testing.T) {
	sim := modelsim.Start(t, modelsim.Step{Hang: true})
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "1", Files: []vcs.FileChange{
		{Path: "a.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 1}}, Hunks: []vcs.LineRange{{Start: 1, End: 1}}}}}
	if err := run.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Kind: "llm", Timeout: time.Hour, LLM: llm.Config{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "m", Timeout: 300 * time.Millisecond}}
	a, err := agent.New(cfg, agent.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Review(context.Background(), run, pass.Pass{Number: 1, Kind: pass.Review})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the pass outlived [agent.llm] timeout by far")
	}
	if !errors.Is(err, agent.ErrTimeout) || !strings.Contains(err.Error(), "[agent.llm] timeout") || !strings.Contains(err.Error(), "300ms") {
		t.Errorf("err = %v", err)
	}
}

// The cached rates default to each API's published multiples of the
// input price; an operator's own rates win.
func TestCachedPriceDefaults(t *testing.T) {
	s := pass.Stats{InputTokens: 1_000_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 4_000_000, OutputTokens: 100_000}
	for _, tc := range []struct {
		api         string
		cached, wr  float64
		read, write float64
	}{
		{api: llm.APIAnthropic, read: 0.3, write: 3.75},
		{api: llm.APIOpenAIChat, read: 1.5, write: 3},
		{api: llm.APIOpenAIResponses, read: 1.5, write: 3},
		{api: llm.APIGemini, read: 0.75, write: 3},
		{api: llm.APIAnthropic, cached: 0.5, wr: 4, read: 0.5, write: 4},
	} {
		c := agent.Config{Kind: "llm", LLM: llm.Config{API: tc.api, PricePerMTokIn: 3, PricePerMTokOut: 15,
			PricePerMTokCachedIn: tc.cached, PricePerMTokCacheWrite: tc.wr}}
		p := c.Prices()
		if math.Abs(p.PerMTokCachedIn-tc.read) > 1e-12 || math.Abs(p.PerMTokCacheWrite-tc.write) > 1e-12 {
			t.Errorf("%s (%g, %g): cached %g write %g, want %g %g", tc.api, tc.cached, tc.wr, p.PerMTokCachedIn, p.PerMTokCacheWrite, tc.read, tc.write)
		}
		want := (1e6*3 + 2e6*tc.read + 4e6*tc.write + 1e5*15) / 1e6
		if got, ok := p.Cost(s); !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: cost %v %v, want %v", tc.api, got, ok, want)
		}
	}
	bad := agent.Config{Kind: "llm", LLM: llm.Config{API: llm.APIAnthropic, Model: "m", PricePerMTokCachedIn: -1, PricePerMTokCacheWrite: -2}}
	err := bad.Validate()
	for _, want := range []string{"agent.llm.price_per_mtok_cached_in: must not be negative, got -1", "agent.llm.price_per_mtok_cache_write: must not be negative, got -2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}
