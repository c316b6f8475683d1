// Package pass describes one agent pass of the review ladder: what the
// orchestrator asks of the agent (a first review, a follow-up with the
// context it asked for, a repair of a result that is missing something)
// and what the pass cost. It is a leaf so that agent adapters (builtin,
// llm, the agent CLIs), the prompt builder and the ladder share the types
// without an import cycle.
package pass

import "slices"

// Kind is what a pass is for.
type Kind string

const (
	// Review is the first pass over the change.
	Review Kind = "review"
	// FollowUp gives the agent the answers to the context and attribution
	// requests it recorded in the previous pass.
	FollowUp Kind = "follow-up"
	// Repair asks the agent for the structured result a previous pass did
	// not produce (no summary, no skip, a summary that claims problems it
	// never reported), saying exactly what is missing.
	Repair Kind = "repair"
)

// Pass is one request to the agent. The run directory and its state file
// are the same for every pass of a review; the orchestrator clears nothing
// between passes, so what earlier passes recorded stays recorded.
type Pass struct {
	// Number counts passes of this review from 1.
	Number int
	Kind   Kind
	// Context is, for a FollowUp, the answers to the previous pass's
	// requests, rendered as untrusted data (code and blame output).
	Context []Answer
	// Missing is, for a Repair, what the previous pass left out, in words
	// the agent can act on.
	Missing string
	// BudgetScale shrinks the prompt budget of a model-backed agent for
	// this pass: 0 (the zero value) and 1 mean the configured budget, 0.5
	// half of it. The ladder sets it below 1 when the model answered the
	// same pass with llm.ErrContextOverflow, so the agent clips the diff
	// harder (prompt.Build's budget) and tries once more. Agents without
	// a prompt (builtin) ignore it.
	BudgetScale float64
	// Allowance is what is left of the review's per-review caps for this
	// pass; a model-backed agent stops between turns once it is used up.
	Allowance Allowance
}

// Allowance bounds what one pass may still spend ([agent]
// max_cost_per_review and max_input_tokens_per_review less what the
// review's earlier passes spent). Zero fields are no limit.
type Allowance struct {
	// PromptTokens is the prompt tokens, cached or not, the pass may send.
	PromptTokens int `json:"prompt_tokens,omitempty"`
	// CostUSD is what the pass may cost at the prices below.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Prices per million tokens (agent.Prices), to price the pass's turns.
	PerMTokIn         float64 `json:"per_mtok_in,omitempty"`
	PerMTokOut        float64 `json:"per_mtok_out,omitempty"`
	PerMTokCachedIn   float64 `json:"per_mtok_cached_in,omitempty"`
	PerMTokCacheWrite float64 `json:"per_mtok_cache_write,omitempty"`
}

// Stop reasons a pass gives in Stats.Stop.
const (
	StopCost          = "cost"
	StopPromptTokens  = "input_tokens"
	StopContextWindow = "context_window"
)

// Reached names the limit s has used up (StopCost, StopPromptTokens), or
// "" while the pass may go on.
func (a Allowance) Reached(s Stats) string {
	switch {
	case a.PromptTokens > 0 && s.PromptTokens() >= a.PromptTokens:
		return StopPromptTokens
	case a.CostUSD > 0 && s.CostAt(a.PerMTokIn, a.PerMTokCachedIn, a.PerMTokCacheWrite, a.PerMTokOut) >= a.CostUSD:
		return StopCost
	}
	return ""
}

// CostAt is what s costs in USD at these prices per million tokens: each
// part of the prompt at its own rate, as providers bill it.
func (s Stats) CostAt(in, cachedIn, cacheWrite, out float64) float64 {
	return (float64(s.InputTokens)*in + float64(s.CacheReadTokens)*cachedIn +
		float64(s.CacheWriteTokens)*cacheWrite + float64(s.OutputTokens)*out) / 1e6
}

// Scale is BudgetScale with its zero value read as 1.
func (p Pass) Scale() float64 {
	if p.BudgetScale <= 0 || p.BudgetScale > 1 {
		return 1
	}
	return p.BudgetScale
}

// Answer is the result of replaying one recorded context or attribution
// request through the VCS adapter at the reviewed revision.
type Answer struct {
	// Request names what was asked ("fetch_more_context src/a.go:10-40",
	// "try_blame src/a.go:12").
	Request string
	// Text is what the VCS returned (file lines with their numbers, or
	// blame lines); empty when Error is set.
	Text string
	// Error says why the request could not be answered.
	Error string
}

// Stats is what one pass cost, for the audit trail and the report footer.
type Stats struct {
	// Agent is the agent kind ("builtin", "llm", ...).
	Agent string `json:"agent"`
	// Model is the model that answered, as the server named it; empty for
	// agents without one.
	Model string `json:"model,omitempty"`
	// Turns counts model round trips.
	Turns int `json:"turns"`
	// InputTokens is the uncached prompt tokens; the cached ones are
	// CacheReadTokens and CacheWriteTokens, billed at their own rates.
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// TurnUsage is each model round trip's tokens, in order, for the audit
	// trail's per-turn accounting; empty for agents that report only
	// totals (agent CLIs).
	TurnUsage []TurnUsage `json:"turn_usage,omitempty"`
	// Stop says why the agent ended the pass before the model was done:
	// StopCost or StopPromptTokens (the pass's Allowance was used up),
	// StopContextWindow (the next request would not fit the model's
	// context); "" when it was not stopped.
	Stop string `json:"stop,omitempty"`
	// Clipped lists the files whose diff did not fit the model's prompt
	// budget (context_window), whole or in part: the model was told to read
	// them with fetch_more_context, and the report names them.
	Clipped []string `json:"clipped,omitempty"`
	// Text is the agent's final prose, kept for the ladder's prose
	// normalization when no structured result was recorded.
	Text string `json:"-"`
}

// Add accumulates another pass's cost into s (the model name is kept from
// the first pass that reported one).
func (s *Stats) Add(o Stats) {
	if s.Agent == "" {
		s.Agent = o.Agent
	}
	if s.Model == "" {
		s.Model = o.Model
	}
	s.Turns += o.Turns
	s.InputTokens += o.InputTokens
	s.OutputTokens += o.OutputTokens
	s.CacheReadTokens += o.CacheReadTokens
	s.CacheWriteTokens += o.CacheWriteTokens
	s.TurnUsage = append(s.TurnUsage, o.TurnUsage...)
	if o.Stop != "" {
		s.Stop = o.Stop
	}
	for _, c := range o.Clipped {
		if !slices.Contains(s.Clipped, c) {
			s.Clipped = append(s.Clipped, c)
		}
	}
}

// TurnUsage is what one model round trip sent and received, split as the
// provider bills it (Input is uncached).
type TurnUsage struct {
	Input      int `json:"input"`
	CacheRead  int `json:"cache_read,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
	Output     int `json:"output"`
}

// PromptTokens is every prompt token the stats cover, cached or not.
func (s Stats) PromptTokens() int { return s.InputTokens + s.CacheReadTokens + s.CacheWriteTokens }
