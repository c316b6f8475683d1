package modelsim

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
)

// Prompt caching as the providers document it, simulated so a test can
// measure what a review would be billed:
//
//   - Anthropic caches the prefix up to each block marked cache_control
//     (tools, then system, then messages, in that order), at most four
//     marks a request (a fifth is a 400 with Anthropic's own body), only
//     prefixes of at least MinCacheTokens; a mark finds an earlier cache
//     entry at most 20 blocks back. usage reports input_tokens (after the
//     last mark, or everything not read when nothing is written),
//     cache_creation_input_tokens and cache_read_input_tokens apart.
//   - OpenAI (Chat and Responses, and vLLM's Chat) cache automatically the
//     longest prefix seen before, for prompts of at least MinCacheTokens,
//     in steps of 128 tokens; cached_tokens is part of the prompt count.
//   - Gemini's implicit cache reads the longest prefix seen before (at
//     least MinCacheTokens) and reports cachedContentTokenCount as part
//     of promptTokenCount.
//
// Tokens are counted deterministically as the bytes of each part's
// canonical JSON (object keys sorted, cache_control left out) divided by
// BytesPerToken, rounded up: not any tokenizer, but the same for every
// API, so ratios between runs are exact and repeatable.

// BytesPerToken is the simulated tokenizer: four bytes a token.
const BytesPerToken = 4

// MinCacheTokens is the shortest prefix the simulated caches keep
// (Anthropic's and OpenAI's documented minimum for most models).
const MinCacheTokens = 1024

// openAICacheStep is the granularity of OpenAI's cache hits.
const openAICacheStep = 128

// anthropicLookback is how many blocks before a breakpoint Anthropic
// checks for an earlier cache entry.
const anthropicLookback = 20

// maxPrefixes bounds the prompts kept for the automatic caches.
const maxPrefixes = 256

// MaxCacheBreakpoints is Anthropic's limit of cache_control blocks.
const MaxCacheBreakpoints = 4

// SimulateCaches makes the server count every request's prompt and
// report it split as the provider bills it, through the provider's own
// prompt cache (see above). A step whose Usage is set still reports that.
func (s *Server) SimulateCaches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caches = &caches{anthropic: map[[32]byte]bool{}, prefixes: map[string][][]byte{}}
}

type caches struct {
	anthropic map[[32]byte]bool
	// prefixes are earlier prompts per API, for the automatic caches.
	prefixes map[string][][]byte
}

func tokens(n int) int { return (n + BytesPerToken - 1) / BytesPerToken }

// canonical re-encodes a JSON value with sorted keys and without
// cache_control, so a breakpoint moving between requests changes nothing
// a cache compares.
func canonical(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "cache_control")
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// anthropicBlocks is an Anthropic request cut into the blocks the cache
// counts, each with whether it carries cache_control.
type cacheBlock struct {
	data []byte
	mark bool
}

func anthropicBlocks(raw []byte) ([]cacheBlock, error) {
	var in struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	var blocks []cacheBlock
	add := func(prefix string, b json.RawMessage) {
		var probe struct {
			CacheControl json.RawMessage `json:"cache_control"`
		}
		_ = json.Unmarshal(b, &probe)
		mark := len(probe.CacheControl) > 0 && string(probe.CacheControl) != "null"
		blocks = append(blocks, cacheBlock{data: append([]byte(prefix), canonical(b)...), mark: mark})
	}
	addContent := func(prefix string, content json.RawMessage) {
		var parts []json.RawMessage
		if json.Unmarshal(content, &parts) == nil {
			for _, p := range parts {
				add(prefix, p)
			}
			return
		}
		if len(content) > 0 && string(content) != "null" {
			add(prefix, content)
		}
	}
	for _, t := range in.Tools {
		add("tool:", t)
	}
	addContent("system:", in.System)
	for _, m := range in.Messages {
		addContent(m.Role+":", m.Content)
	}
	return blocks, nil
}

// breakpointRefusal is Anthropic's 400 for more than four cache_control
// blocks, or nil.
func breakpointRefusal(raw []byte) *apiError {
	blocks, err := anthropicBlocks(raw)
	if err != nil {
		return nil
	}
	n := 0
	for _, b := range blocks {
		if b.mark {
			n++
		}
	}
	if n <= MaxCacheBreakpoints {
		return nil
	}
	e := errorFor(APIAnthropic, http.StatusBadRequest, "invalid_request_error",
		fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", MaxCacheBreakpoints, n))
	return &e
}

// anthropicUsage is what Anthropic bills for raw, updating the cache.
func (c *caches) anthropicUsage(raw []byte) Usage {
	blocks, err := anthropicBlocks(raw)
	if err != nil {
		return Usage{Input: tokens(len(raw))}
	}
	cum := make([]int, len(blocks))
	hash := make([][32]byte, len(blocks))
	var h [32]byte
	size := 0
	var marks []int
	for i, b := range blocks {
		size += len(b.data)
		cum[i] = tokens(size)
		h = sha256.Sum256(append(h[:], b.data...))
		hash[i] = h
		if b.mark {
			marks = append(marks, i)
		}
	}
	total := tokens(size)
	read := 0
	for _, m := range marks {
		for j := m; j >= 0 && j > m-anthropicLookback; j-- {
			if c.anthropic[hash[j]] {
				read = max(read, cum[j])
				break
			}
		}
	}
	write := 0
	if len(marks) > 0 {
		if last := cum[marks[len(marks)-1]]; last >= MinCacheTokens && last > read {
			write = last - read
		}
	}
	for _, m := range marks {
		if cum[m] >= MinCacheTokens {
			c.anthropic[hash[m]] = true
		}
	}
	return Usage{Input: total - read - write, CacheRead: read, CacheWrite: write}
}

// promptBytes is the prompt an automatic cache compares: tools, system
// and conversation in the order the server renders them.
func promptBytes(apiName string, raw []byte) []byte {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return raw
	}
	var keys []string
	switch apiName {
	case APIOpenAIChat:
		keys = []string{"tools", "messages"}
	case APIOpenAIResponses:
		keys = []string{"tools", "instructions", "input"}
	case APIGemini:
		keys = []string{"tools", "systemInstruction", "contents"}
	}
	var out []byte
	for _, k := range keys {
		v, ok := in[k]
		if !ok {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(v, &list) == nil {
			for _, item := range list {
				out = append(out, canonical(item)...)
			}
			continue
		}
		out = append(out, canonical(v)...)
	}
	return out
}

// automaticUsage is an OpenAI or Gemini prompt read through its automatic
// prefix cache; Input is the uncached part, CacheRead the cached one.
func (c *caches) automaticUsage(apiName string, raw []byte) Usage {
	prompt := promptBytes(apiName, raw)
	total := tokens(len(prompt))
	longest := 0
	for _, p := range c.prefixes[apiName] {
		n := 0
		for n < len(p) && n < len(prompt) && p[n] == prompt[n] {
			n++
		}
		longest = max(longest, n)
	}
	cached := longest / BytesPerToken
	if total < MinCacheTokens || cached < MinCacheTokens {
		cached = 0
	}
	if apiName != APIGemini {
		cached -= cached % openAICacheStep
	}
	if total >= MinCacheTokens {
		list := append(c.prefixes[apiName], prompt)
		if len(list) > maxPrefixes {
			list = list[1:]
		}
		c.prefixes[apiName] = list
	}
	return Usage{Input: total - cached, CacheRead: cached}
}

// simulatedUsage is the usage of one answered request when the server
// simulates caches and the step names none; ok is false otherwise.
func (s *Server) simulatedUsage(req Request, a answer) (Usage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caches == nil || a.usage != (Usage{}) {
		return a.usage, false
	}
	var u Usage
	if req.API == APIAnthropic {
		u = s.caches.anthropicUsage(req.Raw)
	} else {
		u = s.caches.automaticUsage(req.API, req.Raw)
	}
	out := len(a.text)
	for _, c := range a.toolCalls {
		out += len(c.Name) + len(c.Arguments) + 16
	}
	u.Output = max(1, tokens(out))
	return u, true
}
