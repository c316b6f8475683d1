package modelsim

import (
	"encoding/json"
	"strings"
	"testing"
)

// codexBody is a Responses request shaped as Codex 0.169.0 sends it:
// developer messages with ids, an MCP server's tools in a namespace, a
// replayed namespaced call whose output is a list of input_text parts,
// reasoning, a custom tool call and hosted tools.
const codexBody = `{"model":"scripted-model","stream":%s,"store":false,"tool_choice":"auto","parallel_tool_calls":false,
 "reasoning":{"summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k","client_metadata":{"session_id":"s"},
 "input":[
  {"type":"message","id":"msg_1","role":"developer","content":[{"type":"input_text","text":"be strict"}]},
  {"type":"message","id":"msg_2","role":"user","content":[{"type":"input_text","text":"review"}]},
  {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},
  {"type":"function_call","status":"completed","id":"fc_1","name":"aicr_report_problem","namespace":"mcp__aicr","arguments":"{\"line\":3}","call_id":"call_1"},
  {"type":"function_call_output","id":"fco_1","call_id":"call_1","output":[{"type":"input_text","text":"Wall time: 0.0082 seconds\nOutput:"},{"type":"input_text","text":"recorded problem 1"}]},
  {"type":"custom_tool_call","id":"ctc_1","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch"},
  {"type":"custom_tool_call_output","call_id":"call_2","output":"unsupported call: apply_patch"},
  {"type":"local_shell_call","id":"lsh_1","call_id":"call_3","status":"completed","action":{"type":"exec","command":["ls"]}},
  {"type":"function_call_output","call_id":"call_3","output":"aborted"},
  {"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"x"}}
 ],
 "tools":[
  {"type":"function","name":"read_mcp_resource","strict":false,"parameters":{"type":"object"}},
  {"type":"namespace","name":"mcp__aicr","description":"aicr","tools":[
    {"type":"function","name":"aicr_report_problem","strict":false,"parameters":{"type":"object"}},
    {"type":"function","name":"aicr_publish_summary","strict":false,"parameters":{"type":"object"}}]},
  {"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},
  {"type":"web_search","external_web_access":false},
  {"type":"local_shell"}
 ]}`

func TestResponsesDecodesWhatCodexSends(t *testing.T) {
	s := Start(t, Step{Text: "ok"})
	status, _, out := post(t, s.URL+"/responses", strings.Replace(codexBody, "%s", "false", 1), nil)
	if status != 200 || s.Err() != nil {
		t.Fatalf("status %d (%v): %s", status, s.Err(), out)
	}
	r := s.Requests()[0]
	wantTools := []string{"read_mcp_resource", "mcp__aicr__aicr_report_problem", "mcp__aicr__aicr_publish_summary", "apply_patch", "web_search", "local_shell"}
	if strings.Join(r.Tools, ",") != strings.Join(wantTools, ",") {
		t.Errorf("tools = %v, want %v", r.Tools, wantTools)
	}
	if r.Offered("report_problem") != "mcp__aicr__aicr_report_problem" {
		t.Errorf("Offered(report_problem) = %q", r.Offered("report_problem"))
	}
	if r.System != "be strict" || r.ToolResults() != 3 {
		t.Errorf("system %q, %d tool results; want be strict, 3", r.System, r.ToolResults())
	}
	var names []string
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			names = append(names, c.Name)
		}
	}
	if strings.Join(names, ",") != "mcp__aicr__aicr_report_problem,apply_patch,"+LocalShellCall {
		t.Errorf("replayed calls = %v", names)
	}
	if m := r.Messages[2]; m.Role != "tool" || m.ToolCallID != "call_1" || m.Text != "Wall time: 0.0082 seconds\nOutput:\nrecorded problem 1" {
		t.Errorf("tool result = %+v", m)
	}
}

// A call of a namespaced tool comes back as the real API sends it:
// namespace and name in two fields, streamed or not.
func TestResponsesAnswersNamespacedCalls(t *testing.T) {
	calls := []ToolCall{
		{Name: "mcp__aicr__aicr_report_problem", Arguments: `{"file":"a.c","line":3}`},
		{Name: "apply_patch", Arguments: "*** Begin Patch\n*** End Patch"},
		{Name: "exec_command", Arguments: `{"cmd":"ls"}`},
		{Name: LocalShellCall, Arguments: `{"type":"exec","command":["ls"]}`},
	}
	s := Start(t, Step{ToolCalls: calls}, Step{ToolCalls: calls})
	type item struct {
		Type, ID, Name, Namespace, Arguments, Input string
		CallID                                      string `json:"call_id"`
		Action                                      json.RawMessage
	}
	check := func(how string, items []item) {
		t.Helper()
		if len(items) != 4 {
			t.Fatalf("%s: %d items: %+v", how, len(items), items)
		}
		if it := items[0]; it.Type != "function_call" || it.Namespace != "mcp__aicr" || it.Name != "aicr_report_problem" || it.Arguments != calls[0].Arguments || it.CallID == "" {
			t.Errorf("%s: namespaced call = %+v", how, it)
		}
		if it := items[1]; it.Type != "custom_tool_call" || it.Name != "apply_patch" || it.Input != calls[1].Arguments {
			t.Errorf("%s: custom call = %+v", how, it)
		}
		// A name nobody offered is still a plain function call: a real
		// model may call tools that were not offered.
		if it := items[2]; it.Type != "function_call" || it.Namespace != "" || it.Name != "exec_command" {
			t.Errorf("%s: unoffered call = %+v", how, it)
		}
		if it := items[3]; it.Type != "local_shell_call" || string(it.Action) != calls[3].Arguments || it.CallID == "" {
			t.Errorf("%s: local shell call = %+v", how, it)
		}
	}

	status, _, out := post(t, s.URL+"/responses", strings.Replace(codexBody, "%s", "false", 1), nil)
	var resp struct{ Output []item }
	if status != 200 || json.Unmarshal([]byte(out), &resp) != nil {
		t.Fatalf("status %d: %s", status, out)
	}
	check("json", resp.Output)

	_, _, out = post(t, s.URL+"/responses", strings.Replace(codexBody, "%s", "true", 1), nil)
	var done []item
	var final struct{ Output []item }
	var input strings.Builder
	for _, e := range events(t, out) {
		var ev struct {
			Type     string
			Delta    string
			Item     item
			Response struct{ Output []item }
		}
		if err := json.Unmarshal([]byte(e[1]), &ev); err != nil || ev.Type != e[0] {
			t.Fatalf("event %v: %v", e, err)
		}
		switch ev.Type {
		case "response.output_item.done":
			done = append(done, ev.Item)
		case "response.custom_tool_call_input.delta":
			input.WriteString(ev.Delta)
		case "response.completed":
			final.Output = ev.Response.Output
		}
	}
	check("stream items", done)
	check("stream response", final.Output)
	if input.String() != calls[1].Arguments {
		t.Errorf("custom tool input deltas = %q", input.String())
	}
}

func TestResponsesRefusesUnknownItems(t *testing.T) {
	s := Start(t)
	body := `{"model":"m","input":[{"type":"telepathy","content":"x"}]}`
	status, _, out := post(t, s.URL+"/responses", body, nil)
	if status != 400 || !strings.Contains(out, "telepathy") || s.Err() == nil {
		t.Errorf("status %d, server err %v: %s", status, s.Err(), out)
	}
	s = Start(t)
	body = `{"model":"m","input":"x","tools":[{"type":"namespace","name":"mcp__x","tools":[{"type":"function"}]}]}`
	if status, _, out := post(t, s.URL+"/responses", body, nil); status != 400 || !strings.Contains(out, "name") {
		t.Errorf("a namespace tool without a name: status %d: %s", status, out)
	}
}
