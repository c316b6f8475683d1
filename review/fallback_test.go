package review_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

// callsOf renders calls as "name args" lines with compacted arguments.
func callsOf(t *testing.T, calls []review.ToolCall) []string {
	t.Helper()
	out := []string{}
	for _, c := range calls {
		var v any
		if err := json.Unmarshal(c.Arguments, &v); err != nil {
			t.Fatalf("call %s: arguments %q are not JSON: %v", c.Name, c.Arguments, err)
		}
		b, _ := json.Marshal(v)
		out = append(out, c.Name+" "+string(b))
	}
	return out
}

func TestParseAgentOutputToolCalls(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		calls []string
	}{
		{
			name: "bare JSON in prose",
			in: `I reviewed the change. Here are my findings:
{"toolCalls":[{"name":"aicr.report_problem","arguments":{"file":"a.go","line":3,"severity":"high","category":"x","message":"m"}},
 {"name":"aicr.publish_summary","arguments":{"markdown":"done"}}]}
Thanks!`,
			calls: []string{
				`aicr.report_problem {"category":"x","file":"a.go","line":3,"message":"m","severity":"high"}`,
				`aicr.publish_summary {"markdown":"done"}`,
			},
		},
		{
			name:  "fenced JSON, snake_case key, Kilo and Claude names",
			in:    "Result:\n```json\n{\n  \"tool_calls\": [\n    {\"name\": \"aicr-output_aicr_skip\", \"arguments\": {\"reason\": \"lgtm\"}},\n    {\"name\": \"mcp__aicr__try_blame\", \"arguments\": {\"path\": \"a.go\", \"reason\": \"r\"}}\n  ]\n}\n```\n",
			calls: []string{`aicr.skip {"reason":"lgtm"}`, `aicr.try_blame {"path":"a.go","reason":"r"}`},
		},
		{
			name:  "key not first in its object",
			in:    `{"version": 1, "toolCalls": [{"name": "aicr_skip", "arguments": {"reason": "lgtm"}}]}`,
			calls: []string{`aicr.skip {"reason":"lgtm"}`},
		},
		{
			name:  "arguments as a JSON string (OpenAI style)",
			in:    `{"toolCalls":[{"name":"aicr.skip","arguments":"{\"reason\":\"lgtm\"}"}]}`,
			calls: []string{`aicr.skip {"reason":"lgtm"}`},
		},
		{
			name:  "missing arguments become an empty object",
			in:    `{"toolCalls":[{"name":"aicr.skip"}]}`,
			calls: []string{`aicr.skip {}`},
		},
		{
			name: "XML blocks with name attribute and with JSON body",
			in: `<tool_call name="aicr.report_problem">{"file":"a.go","line":2,"severity":"low","category":"c","message":"m"}</tool_call>
Some words.
<TOOL_CALL>
{"name": "aicr_publish_summary", "arguments": {"markdown": "s"}}
</TOOL_CALL>
<tool_call name='mcp__aicr__skip'></tool_call>`,
			calls: []string{
				`aicr.report_problem {"category":"c","file":"a.go","line":2,"message":"m","severity":"low"}`,
				`aicr.publish_summary {"markdown":"s"}`,
				`aicr.skip {}`,
			},
		},
		{
			name:  "XML body in a fence",
			in:    "<tool_call name=\"aicr.skip\">\n```json\n{\"reason\": \"lgtm\"}\n```\n</tool_call>",
			calls: []string{`aicr.skip {"reason":"lgtm"}`},
		},
		{
			name: "XML and JSON keep the order of the text",
			in: `{"toolCalls":[{"name":"aicr.publish_summary","arguments":{"markdown":"first"}}]}
<tool_call name="aicr.skip">{"reason":"second"}</tool_call>`,
			calls: []string{`aicr.publish_summary {"markdown":"first"}`, `aicr.skip {"reason":"second"}`},
		},
		{
			name: "think blocks are not output",
			in: `<think>Maybe {"toolCalls":[{"name":"aicr.skip","arguments":{"reason":"draft"}}]}</think>
{"toolCalls":[{"name":"aicr.publish_summary","arguments":{"markdown":"final"}}]}`,
			calls: []string{`aicr.publish_summary {"markdown":"final"}`},
		},
		{
			name:  "closing think tag without opening one",
			in:    `reasoning <tool_call name="aicr.skip">{"reason":"draft"}</tool_call></think><tool_call name="aicr.skip">{"reason":"lgtm"}</tool_call>`,
			calls: []string{`aicr.skip {"reason":"lgtm"}`},
		},
		{
			name:  "unknown tool kept as written for the validator to refuse",
			in:    `{"toolCalls":[{"name":"shell.exec","arguments":{"cmd":"rm"}}]}`,
			calls: []string{`shell.exec {"cmd":"rm"}`},
		},
		{
			name:  "explicit empty list",
			in:    "```json\n{\"toolCalls\": []}\n```",
			calls: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := review.ParseAgentOutput(tt.in)
			if got.Kind != review.FallbackToolCalls {
				t.Fatalf("kind = %s (%s), want tool_calls", got.Kind, got.Reason)
			}
			if calls := callsOf(t, got.Calls); !reflect.DeepEqual(calls, tt.calls) {
				t.Errorf("calls:\n got %q\nwant %q", calls, tt.calls)
			}
		})
	}
}

func TestParseAgentOutputProse(t *testing.T) {
	tests := []struct {
		in   string
		kind review.FallbackKind
	}{
		{"LGTM", review.FallbackLGTM},
		{"lgtm!", review.FallbackLGTM},
		{"**LGTM** 👍", review.FallbackLGTM},
		{"Looks good to me.", review.FallbackLGTM},
		{"I reviewed the change and found no issues.", review.FallbackLGTM},
		{"No issues found.", review.FallbackLGTM},
		{"No problems found in this change.", review.FallbackLGTM},
		{"I didn’t find any actionable problems. Nothing to report.", review.FallbackLGTM},
		{"Overall the code looks fine; there are no concerns.", review.FallbackLGTM},
		{"<think>Let me check line 3... the key is a placeholder.</think>\nLGTM", review.FallbackLGTM},
		{"未发现问题。", review.FallbackLGTM},
		{"没有发现问题", review.FallbackLGTM},
		{"本次提交的代码没有问题。", review.FallbackLGTM},
		{"代码看起来不错！", review.FallbackLGTM},
		{"经过审查，未发现任何问题。", review.FallbackLGTM},

		{"There is no reviewable code in this change.", review.FallbackNoReviewableCode},
		{"The change contains only binary files.", review.FallbackNoReviewableCode},
		{"Nothing to review.", review.FallbackNoReviewableCode},
		{"没有可审查的代码。", review.FallbackNoReviewableCode},
		{"本次提交只有二进制文件", review.FallbackNoReviewableCode},

		{"", review.FallbackUnparsable},
		{"   \n\t", review.FallbackUnparsable},
		{"<think>LGTM</think>", review.FallbackUnparsable},
		{"no issues found, but line 3 leaks a key", review.FallbackUnparsable},
		{"No issues found. However, the password on line 7 is hard-coded.", review.FallbackUnparsable},
		{"Not LGTM.", review.FallbackUnparsable},
		{"LGTM except for the SQL injection in query.go", review.FallbackUnparsable},
		{"Looks good to me, although the error is ignored.", review.FallbackUnparsable},
		{"I can't say it looks good to me.", review.FallbackUnparsable},
		{"No problems found in 3 files", review.FallbackUnparsable},
		{"未发现问题，但第3行泄露了密钥", review.FallbackUnparsable},
		{"不是没有问题", review.FallbackUnparsable},
		{"代码看起来不错，不过缺少错误处理。", review.FallbackUnparsable},
		{"There is a SQL injection on line 12 of db.go.", review.FallbackUnparsable},
		{"I reviewed the change.", review.FallbackUnparsable},
		{`{"toolCalls":[{"name":"aicr.skip","arguments":{"reason":"lgtm"}}`, review.FallbackUnparsable}, // truncated
		{`LGTM {"toolCalls": "soon"}`, review.FallbackUnparsable},
		{`<tool_call name="aicr.skip">{"reason":`, review.FallbackUnparsable},
		{`<tool_call name="aicr.skip">{"reason": lgtm}</tool_call>`, review.FallbackUnparsable},
		{`<tool_call>{"arguments": {}}</tool_call>`, review.FallbackUnparsable},
	}
	for _, tt := range tests {
		got := review.ParseAgentOutput(tt.in)
		if got.Kind != tt.kind {
			t.Errorf("ParseAgentOutput(%q) = %s (%s), want %s", tt.in, got.Kind, got.Reason, tt.kind)
			continue
		}
		switch tt.kind {
		case review.FallbackUnparsable:
			if got.Reason == "" || len(got.Calls) != 0 {
				t.Errorf("ParseAgentOutput(%q): unparsable without reason or with calls: %+v", tt.in, got)
			}
		default:
			want := []string{`aicr.skip {"reason":"` + string(tt.kind) + `"}`}
			if calls := callsOf(t, got.Calls); !reflect.DeepEqual(calls, want) {
				t.Errorf("ParseAgentOutput(%q) calls = %q, want %q", tt.in, calls, want)
			}
		}
	}
}

func TestParseAgentOutputPartial(t *testing.T) {
	// One readable call and one broken block: the readable one stands,
	// and the broken one is named in Reason.
	got := review.ParseAgentOutput(`<tool_call name="aicr.skip">{"reason":"lgtm"}</tool_call>
<tool_call name="aicr.publish_summary">{markdown: x}</tool_call>`)
	if got.Kind != review.FallbackToolCalls || len(got.Calls) != 1 || !strings.Contains(got.Reason, "aicr.publish_summary") {
		t.Fatalf("partial: %+v", got)
	}
}

// The fallback path must not be a way around validation: the calls it
// recovers, applied with ApplyCalls, leave exactly the state the MCP server
// leaves for the same calls.
func TestApplyCallsMatchesServer(t *testing.T) {
	output := `<think>draft</think>
I found two things.
{"toolCalls":[
 {"name":"aicr-output_aicr_report_problem","arguments":{"file":"app/main.go","line":7,"severity":"high","category":"Resource Leak","message":"never closed"}},
 {"name":"mcp__aicr__report_problem","arguments":{"file":"app/main.go","line":15,"severity":"low","category":"style","message":"off the diff"}},
 {"name":"aicr_report_problem","arguments":{"file":"app/main.go","line":7,"severity":"low","category":"resource-leak","message":"reworded duplicate"}},
 {"name":"aicr.report_problem","arguments":{"file":"../etc/passwd","line":1,"severity":"low","category":"x","message":"m"}},
 {"name":"aicr.report_problem","arguments":{"file":"app/main.go","line":8,"severity":"low","category":"x","message":"m","author":"bob"}},
 {"name":"aicr.fetch_more_context","arguments":{"path":"lib/db.go","reason":"callers"}},
 {"name":"aicr.try_blame","arguments":{"path":"app/main.go","range":{"start_line":5,"end_line":9},"reason":"who"}},
 {"name":"aicr.publish_summary","arguments":{"markdown":"One leak."}},
 {"name":"shell.exec","arguments":{"cmd":"id"}}
]}`
	res := review.ParseAgentOutput(output)
	if res.Kind != review.FallbackToolCalls || len(res.Calls) != 9 {
		t.Fatalf("parse: %+v", res)
	}

	f := newFixture(t)
	v := review.NewValidator(f.change, f.srcDir, review.Limits{})
	viaFallback := review.NewState()
	outcomes := review.ApplyCalls(v, viaFallback, res.Calls)
	wantCodes := []string{"", review.CodeLineNotInDiff, "", review.CodePathOutOfScope, review.CodeInvalidInput, "", "", "", review.CodeInvalidInput}
	for i, o := range outcomes {
		code := ""
		if o.Err != nil {
			code = o.Err.Code
		}
		if code != wantCodes[i] {
			t.Errorf("call %d (%s): code %q (%+v), want %q", i, o.Tool, code, o.Err, wantCodes[i])
		}
	}
	if len(viaFallback.Problems) != 1 || viaFallback.Problems[0].Line != 7 || len(viaFallback.Rejected) != 4 ||
		len(viaFallback.ContextRequests) != 1 || len(viaFallback.AttributionRequests) != 1 || len(viaFallback.Summaries) != 1 {
		t.Fatalf("fallback state: %+v", viaFallback)
	}

	// The same aicr calls through a real server process.
	c := startServer(t, f, 0)
	for _, tc := range res.Calls[:8] {
		var args map[string]any
		if err := json.Unmarshal(tc.Arguments, &args); err != nil {
			t.Fatal(err)
		}
		call(t, c, tc.Name, args)
	}
	viaServer := loadState(t, f.statePath)
	viaFallback.Rejected = viaFallback.Rejected[:3] // the server has no shell.exec to call
	viaFallback.RejectedTotal = 3
	// Compared as JSON values: the client re-encodes the arguments, so
	// only their key order may differ.
	if a, b := asJSONValue(t, viaServer), asJSONValue(t, viaFallback); !reflect.DeepEqual(a, b) {
		t.Errorf("server and fallback disagree:\nserver   %v\nfallback %v", a, b)
	}
}

func asJSONValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
