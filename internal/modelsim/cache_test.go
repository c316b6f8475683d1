package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// anthropicBody builds a Messages request: a system prompt of sysBytes,
// a first user message of userBytes and n tool round trips after it, with
// cache_control on the blocks whose index (0 = system, 1 = first user
// block, then each later block) is in marks.
func anthropicBody(sysBytes, userBytes, n int, marks ...int) string {
	marked := map[int]bool{}
	for _, m := range marks {
		marked[m] = true
	}
	block := func(i int, b map[string]any) map[string]any {
		if marked[i] {
			b["cache_control"] = map[string]any{"type": "ephemeral"}
		}
		return b
	}
	msgs := []any{map[string]any{"role": "user", "content": []any{block(1, map[string]any{"type": "text", "text": strings.Repeat("u", userBytes)})}}}
	idx := 2
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{block(idx, map[string]any{"type": "tool_use", "id": id, "name": "aicr_report_problem", "input": map[string]any{"n": i}})}},
			map[string]any{"role": "user", "content": []any{block(idx+1, map[string]any{"type": "tool_result", "tool_use_id": id, "content": "recorded " + strings.Repeat("r", 200)})}})
		idx += 2
	}
	body, _ := json.Marshal(map[string]any{"model": "claude-modelsim", "max_tokens": 100,
		"system":   []any{block(0, map[string]any{"type": "text", "text": strings.Repeat("s", sysBytes)})},
		"messages": msgs})
	return string(body)
}

// Anthropic's cache as documented: the first request writes the prefix
// up to its last breakpoint, the next reads it and writes only what is
// new; a prefix under 1024 tokens is never cached; the usage parts add
// up to the prompt.
func TestAnthropicPromptCache(t *testing.T) {
	c := &caches{anthropic: map[[32]byte]bool{}, prefixes: map[string][][]byte{}}
	first := c.anthropicUsage([]byte(anthropicBody(8000, 20000, 0, 0, 1)))
	if first.CacheRead != 0 || first.CacheWrite == 0 || first.Input > 2 {
		t.Fatalf("first request: %+v, want everything written", first)
	}
	second := c.anthropicUsage([]byte(anthropicBody(8000, 20000, 1, 0, 1, 3)))
	if second.CacheRead != first.CacheWrite {
		t.Errorf("second request read %d, want the %d written before", second.CacheRead, first.CacheWrite)
	}
	if second.CacheWrite == 0 || second.CacheWrite > 100 || second.Input > 2 {
		t.Errorf("second request: %+v, want only the new round trip written", second)
	}
	// Without breakpoints nothing is cached, however long the prompt.
	plain := c.anthropicUsage([]byte(anthropicBody(8000, 20000, 1)))
	if plain.CacheRead != 0 || plain.CacheWrite != 0 || plain.Input != second.prompt() {
		t.Errorf("no breakpoints: %+v, want %d uncached", plain, second.prompt())
	}
	// A short prefix (under 1024 tokens) is not cached.
	short := &caches{anthropic: map[[32]byte]bool{}, prefixes: map[string][][]byte{}}
	for i := 0; i < 2; i++ {
		if u := short.anthropicUsage([]byte(anthropicBody(100, 200, 0, 0, 1))); u.CacheRead+u.CacheWrite != 0 {
			t.Errorf("short prompt %d: %+v, want nothing cached", i, u)
		}
	}
}

// More than four cache_control blocks is Anthropic's 400, with its body;
// four are fine. The refusal uses up no step.
func TestAnthropicBreakpointLimit(t *testing.T) {
	s := Start(t, Step{Text: "ok"})
	headers := map[string]string{"anthropic-version": "2023-06-01"}
	status, _, body := post(t, s.URL+"/messages", anthropicBody(10, 10, 2, 0, 1, 2, 3, 4), headers)
	want := `{"error":{"message":"A maximum of 4 blocks with cache_control may be provided. Found 5.","type":"invalid_request_error"},"request_id":"req_011modelsim","type":"error"}`
	if status != http.StatusBadRequest || body != want {
		t.Errorf("five breakpoints: %d %s\nwant 400 %s", status, body, want)
	}
	if status, _, body := post(t, s.URL+"/messages", anthropicBody(10, 10, 2, 0, 1, 2, 3), headers); status != http.StatusOK {
		t.Errorf("four breakpoints: %d %s", status, body)
	}
	if err := s.Err(); err != nil {
		t.Error(err)
	}
}

// OpenAI's automatic cache: the longest prefix seen before, 1024 tokens
// at least, in steps of 128; cached_tokens inside prompt_tokens.
func TestOpenAIPromptCache(t *testing.T) {
	s := Start(t, Step{Text: "a"}, Step{Text: "b"}, Step{Text: "c"})
	s.SimulateCaches()
	msg := func(extra string) string {
		return fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":%q}]}`,
			strings.Repeat("s", 6000), strings.Repeat("u", 6000)+extra)
	}
	type usage struct {
		Prompt  int `json:"prompt_tokens"`
		Details struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	read := func(body string) usage {
		var out struct{ Usage usage }
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return out.Usage
	}
	_, _, b1 := post(t, s.URL+"/chat/completions", msg(""), nil)
	_, _, b2 := post(t, s.URL+"/chat/completions", msg(strings.Repeat("x", 2000)), nil)
	_, _, b3 := post(t, s.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"short"}]}`, nil)
	u1, u2, u3 := read(b1), read(b2), read(b3)
	if u1.Details.Cached != 0 || u1.Prompt < 3000 {
		t.Errorf("first request: %+v, want nothing cached", u1)
	}
	if u2.Details.Cached == 0 || u2.Details.Cached%128 != 0 || u2.Details.Cached > u1.Prompt || u1.Prompt-u2.Details.Cached >= 128+10 {
		t.Errorf("second request: %+v, want the first's %d tokens cached in 128-token steps", u2, u1.Prompt)
	}
	if u3.Details.Cached != 0 {
		t.Errorf("short request: %+v", u3)
	}
}

// The scripted reviewers: one call per answer takes K+1 answers for K
// problems; all at once takes one.
func TestScriptedReviewers(t *testing.T) {
	problems := []Problem{{File: "a.go", Line: 1, Message: "one"}, {File: "a.go", Line: 2, Message: "two"}}
	req := Request{Tools: []string{"aicr_report_problem", "aicr_publish_summary"}}
	one := OneCallPerAnswer(problems)
	for i := 0; i < 3; i++ {
		step := one(req)
		if len(step.ToolCalls) != 1 {
			t.Fatalf("answer %d: %+v", i, step)
		}
		if want := map[bool]string{true: "aicr_publish_summary", false: "aicr_report_problem"}[i == 2]; step.ToolCalls[0].Name != want {
			t.Errorf("answer %d calls %s, want %s", i, step.ToolCalls[0].Name, want)
		}
		req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: step.ToolCalls}, Message{Role: "tool"})
	}
	all := AllAtOnce(problems)(Request{Tools: req.Tools})
	if len(all.ToolCalls) != 3 || all.ToolCalls[2].Name != "aicr_publish_summary" {
		t.Errorf("all at once: %+v", all.ToolCalls)
	}
}

// A server that does not know parallel_tool_calls refuses it with a 400
// naming the field, and takes the same request without it.
func TestRefuseParallelToolCalls(t *testing.T) {
	s := Start(t, Step{Text: "ok"})
	s.RefuseParallelToolCalls()
	status, _, body := post(t, s.URL+"/chat/completions", `{"model":"m","parallel_tool_calls":true,"messages":[{"role":"user","content":"x"}]}`, nil)
	if status != http.StatusBadRequest || !strings.Contains(body, "Unrecognized request argument supplied: parallel_tool_calls") {
		t.Errorf("%d %s", status, body)
	}
	if status, _, body := post(t, s.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil); status != http.StatusOK {
		t.Errorf("without the field: %d %s", status, body)
	}
}

// Gemini's implicit cache reads the longest earlier prefix (no 128-token
// steps) and reports it as cachedContentTokenCount inside promptTokenCount.
func TestGeminiImplicitCache(t *testing.T) {
	s := Start(t, Step{Text: "a"}, Step{Text: "b"})
	s.SimulateCaches()
	body := func(extra string) string {
		return fmt.Sprintf(`{"systemInstruction":{"parts":[{"text":%q}]},"contents":[{"role":"user","parts":[{"text":%q}]}]}`,
			strings.Repeat("s", 6000), strings.Repeat("u", 6000)+extra)
	}
	var usage [2]struct {
		Prompt int `json:"promptTokenCount"`
		Cached int `json:"cachedContentTokenCount"`
	}
	for i, extra := range []string{"", "more"} {
		status, _, b := post(t, s.Root()+"/v1beta/models/gemini-2.5-flash:generateContent", body(extra), nil)
		var out struct {
			UsageMetadata json.RawMessage `json:"usageMetadata"`
		}
		if status != http.StatusOK || json.Unmarshal([]byte(b), &out) != nil || json.Unmarshal(out.UsageMetadata, &usage[i]) != nil {
			t.Fatalf("request %d: %d %s", i+1, status, b)
		}
	}
	if usage[0].Cached != 0 || usage[1].Cached < usage[0].Prompt-8 || usage[1].Cached > usage[1].Prompt {
		t.Errorf("usage %+v, want the second request to read the first's prompt", usage)
	}
	if err := s.Err(); err != nil {
		t.Error(err)
	}
}
