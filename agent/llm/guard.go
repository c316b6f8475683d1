package llm

import (
	"fmt"

	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/prompt"
)

// turnGuard is the loop's check before every model turn: it stops the
// pass (a pass.Stop reason and the sentence for the pass's prose) once the
// pass's allowance of the per-review caps is used up, or when the request
// would not fit the model's context window with room for its answer, so
// no request is sent that the server could only refuse with a 400.
// Nothing stops: "".
type turnGuard func(stats pass.Stats, req Request) (stop, why string)

// newTurnGuard guards a pass with allowance a and the configured context
// window (0: unknown, not checked); nil when there is nothing to check.
func newTurnGuard(a pass.Allowance, contextWindow int) turnGuard {
	if a == (pass.Allowance{}) && contextWindow <= 0 {
		return nil
	}
	return func(stats pass.Stats, req Request) (string, string) {
		switch a.Reached(stats) {
		case pass.StopCost:
			return pass.StopCost, "aicr stopped the pass: the review reached its cost limit (agent.max_cost_per_review)"
		case pass.StopPromptTokens:
			return pass.StopPromptTokens, "aicr stopped the pass: the review reached its prompt token limit (agent.max_input_tokens_per_review)"
		}
		if contextWindow > 0 {
			if need := EstimateTokens(req) + req.MaxOutputTokens; need > contextWindow {
				return pass.StopContextWindow, fmt.Sprintf("aicr stopped the pass before turn %d: the request (about %d tokens with room for the answer) would not fit agent.llm.context_window = %d",
					stats.Turns+1, need, contextWindow)
			}
		}
		return "", ""
	}
}

// EstimateTokens is about how many prompt tokens req is: its text,
// tool calls, tool results and tool schemas at prompt.BytesPerToken, the
// estimate the prompt budget is built with.
func EstimateTokens(req Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Text)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments) + len(c.ID)
		}
		if r := m.ToolResult; r != nil {
			n += len(r.Content) + len(r.CallID) + len(r.Name)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return n / prompt.BytesPerToken
}
