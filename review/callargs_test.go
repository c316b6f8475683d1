package review_test

import (
	"encoding/json"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

func TestCallArgumentsReadsTheFormsModelsSend(t *testing.T) {
	obj := `{"reason":"lgtm"}`
	quoted, _ := json.Marshal(obj)
	fencedQuoted, _ := json.Marshal("```json\n" + obj + "\n```")
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{obj, obj, true},
		{string(quoted), obj, true},
		{"```json\n" + obj + "\n```", obj, true},
		{"```\n" + obj + "\n```", obj, true},
		{string(fencedQuoted), obj, true},
		{"", "{}", true},
		{"null", "{}", true},
		{`{"reason":"lg`, "", false},
		{`[1,2]`, "", false},
		{"```json\n{\"reason\":\n```", "", false},
	}
	for _, c := range cases {
		got, ok := review.CallArguments(json.RawMessage(c.in))
		if ok != c.ok || (ok && string(got) != c.want) {
			t.Errorf("CallArguments(%q) = %s, %v; want %s, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestTextToolCallsReadsHermesBlocks(t *testing.T) {
	calls, prose, problem := review.TextToolCalls("<think>hm <tool_call>{}</tool_call></think>Done.\n<tool_call>\n" +
		"```json\n{\"name\": \"aicr_skip\", \"arguments\": {\"reason\": \"lgtm\"}}\n```\n</tool_call><tool_call>{\"name\":")
	if len(calls) != 1 || calls[0].Name != review.ToolSkip || string(calls[0].Arguments) != `{"reason": "lgtm"}` {
		t.Fatalf("calls %+v", calls)
	}
	if prose != "Done.\n<tool_call>{\"name\":" || problem != "unterminated <tool_call> block" {
		t.Errorf("prose %q, problem %q", prose, problem)
	}
}
