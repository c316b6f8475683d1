package llm

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/pass"
)

// The turn guard stops a pass whose allowance is spent, and a request
// the context window cannot hold with its answer, before it is sent.
func TestTurnGuard(t *testing.T) {
	if newTurnGuard(pass.Allowance{}, 0) != nil {
		t.Error("a guard with nothing to check")
	}
	g := newTurnGuard(pass.Allowance{CostUSD: 0.001, PerMTokIn: 1, PerMTokOut: 10}, 1000)
	small := Request{System: strings.Repeat("s", 400), MaxOutputTokens: 500}
	if stop, why := g(pass.Stats{InputTokens: 500, OutputTokens: 40}, small); stop != "" {
		t.Errorf("stopped within the allowance and the window: %s %s", stop, why)
	}
	if stop, _ := g(pass.Stats{InputTokens: 500, OutputTokens: 50}, small); stop != pass.StopCost {
		t.Errorf("stop %q at $0.001 spent, want %q", stop, pass.StopCost)
	}
	// 2004 bytes are about 501 tokens: with 500 for the answer, one past the window.
	big := Request{System: strings.Repeat("s", 2004), MaxOutputTokens: 500}
	stop, why := g(pass.Stats{Turns: 2}, big)
	if stop != pass.StopContextWindow || !strings.Contains(why, "before turn 3") || !strings.Contains(why, "agent.llm.context_window = 1000") {
		t.Errorf("stop %q %q, want the context window named", stop, why)
	}
	if stop, _ := newTurnGuard(pass.Allowance{PromptTokens: 10}, 0)(pass.Stats{CacheReadTokens: 10}, small); stop != pass.StopPromptTokens {
		t.Errorf("cached prompt tokens count against max_input_tokens_per_review: %q", stop)
	}
}
