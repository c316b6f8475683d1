package cli_test

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/cli"
)

// Every CLI's usage is split as the provider bills it: the uncached
// prompt apart from what was read from or written to the cache, however
// the CLI words it (Anthropic's uncached input_tokens next to the cache
// counts; OpenAI's and Gemini's input that includes its cached part;
// OpenCode's cache object). The lines are the CLIs' own schemas, as in
// the captured streams under testdata, with cached tokens.
func TestCLIUsageSplitsCachedTokens(t *testing.T) {
	for _, tc := range []struct {
		kind                 string
		stream               string
		in, read, write, out int
	}{
		{kind: cli.KindClaudeCode, in: 300, read: 7000, write: 160, out: 90, stream: `{"type":"result","subtype":"success","num_turns":2,` +
			`"usage":{"input_tokens":300,"cache_creation_input_tokens":160,"cache_read_input_tokens":7000,"output_tokens":90}}`},
		{kind: cli.KindOpenCode, in: 340, read: 7000, write: 7160, out: 200, stream: `{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":40,"output":120,"cache":{"write":7000,"read":0}},"cost":0}}
{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":300,"output":80,"cache":{"write":160,"read":7000}},"cost":0}}`},
		{kind: cli.KindCodex, in: 1100, read: 3000, write: 0, out: 130, stream: `{"type":"turn.completed","usage":{"input_tokens":4100,"cached_input_tokens":3000,"cache_write_input_tokens":0,"output_tokens":130,"reasoning_output_tokens":0}}`},
		{kind: cli.KindGeminiCLI, in: 1100, read: 3000, out: 130, stream: `{"type":"result","status":"success","stats":{"total_tokens":4230,"input_tokens":4100,"output_tokens":130,"cached":3000,"input":1100,"tool_calls":0}}`},
		{kind: cli.KindQwenCode, in: 1100, read: 3000, out: 130, stream: `{"type":"result","subtype":"success","num_turns":1,"usage":{"input_tokens":4100,"output_tokens":130,"cache_read_input_tokens":3000,"total_tokens":4230}}`},
	} {
		a, ok := cli.Lookup(tc.kind)
		if !ok {
			t.Fatalf("no adapter %s", tc.kind)
		}
		ev, err := a.Parse(strings.NewReader(tc.stream + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if ev.InputTokens != tc.in || ev.CacheReadTokens != tc.read || ev.CacheWriteTokens != tc.write || ev.OutputTokens != tc.out {
			t.Errorf("%s: uncached/read/write/out = %d/%d/%d/%d, want %d/%d/%d/%d", tc.kind,
				ev.InputTokens, ev.CacheReadTokens, ev.CacheWriteTokens, ev.OutputTokens, tc.in, tc.read, tc.write, tc.out)
		}
	}
}
