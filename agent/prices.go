package agent

import "github.com/aicr-dev/aicr/agent/pass"

// Prices are what the model charges per million tokens, for the cost the
// audit trail records. Zero prices mean the cost is unknown, not free.
type Prices struct {
	PerMTokIn  float64
	PerMTokOut float64
	// PerMTokCachedIn prices prompt tokens read from the provider's cache,
	// PerMTokCacheWrite those written to it. Config fills them from the
	// provider's published multipliers of PerMTokIn when the operator
	// gives only the input price.
	PerMTokCachedIn   float64
	PerMTokCacheWrite float64
}

// Cost is what s cost at p; ok is false when no price is configured.
func (p Prices) Cost(s pass.Stats) (usd float64, ok bool) {
	if p.PerMTokIn <= 0 && p.PerMTokOut <= 0 {
		return 0, false
	}
	return (float64(s.InputTokens)*p.PerMTokIn + float64(s.CacheReadTokens)*p.PerMTokCachedIn +
		float64(s.CacheWriteTokens)*p.PerMTokCacheWrite + float64(s.OutputTokens)*p.PerMTokOut) / 1e6, true
}

// Prices are the configured model prices ([agent.llm] price_per_mtok_in,
// _out, _cached_in and _cache_write), the cached rates defaulting to the
// API's published multiples of the input price (llm.CacheMultipliers). The builtin agent has
// no model and no prices; the llm agent and the agent CLIs are priced by
// the model they talk to.
func (c Config) Prices() Prices {
	if c.Kind == KindBuiltin || c.Kind == "" {
		return Prices{}
	}
	read, write := c.LLM.CachePrices()
	return Prices{PerMTokIn: c.LLM.PricePerMTokIn, PerMTokOut: c.LLM.PricePerMTokOut, PerMTokCachedIn: read, PerMTokCacheWrite: write}
}
