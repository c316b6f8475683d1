package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
)

// kind = "llm" validates its [agent.llm] table, every error naming its
// key, and New builds the agent without contacting anything.
func TestLLMKind(t *testing.T) {
	err := agent.Config{Kind: "llm", LLM: llm.Config{API: "openai", BaseURL: "ftp://x", MaxTurns: -1}}.Validate()
	if err == nil {
		t.Fatal("an empty [agent.llm] must be refused")
	}
	for _, want := range []string{
		`agent.llm.api: unknown API "openai" (one of: openai-chat, openai-responses, anthropic)`,
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
