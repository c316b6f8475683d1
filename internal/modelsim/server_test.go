package modelsim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends a raw request as curl would and returns status, headers, body.
func post(t *testing.T, url, body string, headers map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// events parses an SSE body into (event, data) pairs.
func events(t *testing.T, body string) [][2]string {
	t.Helper()
	var out [][2]string
	var event string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{event, strings.TrimPrefix(line, "data: ")})
			event = ""
		}
	}
	return out
}

var call = ToolCall{Name: "aicr_report_problem", Arguments: `{"file":"a.c","line":3}`}

const chatBody = `{"model":"m1","max_completion_tokens":99,%s,
 "messages":[{"role":"system","content":"be strict"},{"role":"user","content":"review"},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"aicr_fetch_more_context","arguments":"{}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"ctx"}],
 "tools":[{"type":"function","function":{"name":"aicr_report_problem","parameters":{"type":"object"}}}]}`

const (
	chatUnstreamed = `"stream":false`
	chatStreamed   = `"stream":true,"stream_options":{"include_usage":true}`
)

func TestChatCompletions(t *testing.T) {
	s := Start(t, Step{ToolCalls: []ToolCall{call}, Usage: Usage{Input: 10, Output: 5}}, Step{Text: "no problems found", Usage: Usage{Input: 12, Output: 3}})
	status, _, body := post(t, s.URL+"/chat/completions", strings.Replace(chatBody, "%s", chatUnstreamed, 1), nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var out struct {
		Object  string
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	c := out.Choices[0]
	if out.Object != "chat.completion" || c.FinishReason != "tool_calls" || c.Message.ToolCalls[0].Function.Name != call.Name ||
		c.Message.ToolCalls[0].Function.Arguments != call.Arguments || c.Message.ToolCalls[0].ID == "" || out.Usage.PromptTokens != 10 {
		t.Fatalf("answer: %s", body)
	}

	status, hdr, body := post(t, s.URL+"/chat/completions", strings.Replace(chatBody, "%s", chatStreamed, 1), nil)
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream status %d %s", status, hdr)
	}
	evs := events(t, body)
	if last := evs[len(evs)-1][1]; last != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %s", last)
	}
	var text strings.Builder
	var sawUsage bool
	for _, e := range evs[:len(evs)-1] {
		var ch struct {
			Object  string
			Choices []struct {
				Delta struct{ Content string }
			}
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(e[1]), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", e[1], err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
		}
		if ch.Usage != nil && ch.Usage.CompletionTokens == 3 {
			sawUsage = true
		}
	}
	if text.String() != "no problems found" || !sawUsage {
		t.Fatalf("streamed text %q usage %v", text.String(), sawUsage)
	}

	reqs := s.Requests()
	r := reqs[0]
	if r.API != APIOpenAIChat || r.Model != "m1" || r.System != "be strict" || r.MaxTokens != 99 || r.Stream ||
		len(r.Tools) != 1 || r.Tools[0] != "aicr_report_problem" || len(r.Messages) != 3 ||
		r.Messages[1].ToolCalls[0].Name != "aicr_fetch_more_context" || r.Messages[2].Role != "tool" || r.Messages[2].ToolCallID != "call_1" || r.Messages[2].Text != "ctx" {
		t.Fatalf("decoded %+v", r)
	}
	if !reqs[1].Stream {
		t.Fatal("second request not recorded as streaming")
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestResponses(t *testing.T) {
	s := Start(t, Step{Text: "checking", ToolCalls: []ToolCall{call}, Usage: Usage{Input: 7, Output: 2}}, Step{ToolCalls: []ToolCall{call}})
	body := `{"model":"m2","instructions":"sys","max_output_tokens":50,"stream":%s,"store":false,
	 "input":[{"role":"user","content":"review"},{"type":"function_call","call_id":"call_9","name":"aicr_try_blame","arguments":"{}"},
	  {"type":"function_call_output","call_id":"call_9","output":"blame"}],
	 "tools":[{"type":"function","name":"aicr_report_problem","parameters":{"type":"object"},"strict":false}]}`
	status, _, out := post(t, s.URL+"/responses", strings.Replace(body, "%s", "false", 1), nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, out)
	}
	var resp struct {
		Object, Status string
		Output         []struct{ Type, Name, Arguments, CallID string }
		Usage          struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "response" || resp.Status != "completed" || len(resp.Output) != 2 || resp.Output[0].Type != "message" ||
		resp.Output[1].Type != "function_call" || resp.Output[1].Arguments != call.Arguments || resp.Usage.InputTokens != 7 {
		t.Fatalf("answer: %s", out)
	}

	_, _, out = post(t, s.URL+"/responses", strings.Replace(body, "%s", "true", 1), nil)
	var types []string
	var args strings.Builder
	for _, e := range events(t, out) {
		var ev struct {
			Type  string
			Delta string
		}
		if err := json.Unmarshal([]byte(e[1]), &ev); err != nil || ev.Type != e[0] {
			t.Fatalf("event %v: %v", e, err)
		}
		types = append(types, ev.Type)
		if ev.Type == "response.function_call_arguments.delta" {
			args.WriteString(ev.Delta)
		}
	}
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" ||
		!strings.Contains(strings.Join(types, " "), "response.output_item.added response.function_call_arguments.delta") || args.String() != call.Arguments {
		t.Fatalf("events %v args %q", types, args.String())
	}

	r := s.Requests()[0]
	if r.System != "sys" || r.MaxTokens != 50 || len(r.Messages) != 3 || r.Messages[1].Role != "assistant" ||
		r.Messages[1].ToolCalls[0].Name != "aicr_try_blame" || r.Messages[2].ToolCallID != "call_9" || r.Messages[2].Text != "blame" {
		t.Fatalf("decoded %+v", r)
	}
}

func TestAnthropicMessages(t *testing.T) {
	s := Start(t, Step{ToolCalls: []ToolCall{call}, Usage: Usage{Input: 20, Output: 4}}, Step{Text: "done", ToolCalls: []ToolCall{call}, Usage: Usage{Input: 20, Output: 4}})
	body := `{"model":"claude","max_tokens":64,"stream":%s,"system":[{"type":"text","text":"rules"}],
	 "messages":[{"role":"user","content":"review"},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"aicr_fetch_more_context","input":{"path":"a"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"bad path","is_error":true}]}],
	 "tools":[{"name":"aicr_report_problem","input_schema":{"type":"object"}}]}`
	hdr := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	status, _, out := post(t, s.URL+"/messages", strings.Replace(body, "%s", "false", 1), hdr)
	if status != 200 {
		t.Fatalf("status %d: %s", status, out)
	}
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Name string
			Input      json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(out), &msg); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "tool_use" || msg.Content[0].Type != "tool_use" || string(msg.Content[0].Input) != call.Arguments {
		t.Fatalf("answer %s", out)
	}

	_, _, out = post(t, s.URL+"/messages", strings.Replace(body, "%s", "true", 1), hdr)
	var names []string
	var partial strings.Builder
	for _, e := range events(t, out) {
		var ev struct {
			Type  string
			Delta struct {
				Type        string
				PartialJSON string `json:"partial_json"`
			}
		}
		if err := json.Unmarshal([]byte(e[1]), &ev); err != nil || ev.Type != e[0] {
			t.Fatalf("event %v: %v", e, err)
		}
		names = append(names, ev.Type)
		if ev.Delta.Type == "input_json_delta" {
			partial.WriteString(ev.Delta.PartialJSON)
		}
	}
	joined := strings.Join(names, " ")
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" || !strings.Contains(joined, "message_delta message_stop") ||
		!strings.Contains(joined, "content_block_start content_block_delta") || partial.String() != call.Arguments {
		t.Fatalf("events %s, json %q", joined, partial.String())
	}

	r := s.Requests()[0]
	if r.System != "rules" || r.MaxTokens != 64 || len(r.Messages) != 3 || r.Messages[1].ToolCalls[0].Arguments != `{"path":"a"}` ||
		r.Messages[2].Role != "tool" || r.Messages[2].ToolCallID != "toolu_1" || !r.Messages[2].IsError || r.Messages[2].Text != "bad path" {
		t.Fatalf("decoded %+v", r)
	}
}

func TestErrorBodies(t *testing.T) {
	cases := []struct {
		path, api  string
		step       Step
		status     int
		errType    string
		code       string
		retryAfter bool
	}{
		{"/chat/completions", APIOpenAIChat, Step{Status: 429}, 429, "tokens", "rate_limit_exceeded", true},
		{"/chat/completions", APIOpenAIChat, Step{ErrorType: "context_length_exceeded"}, 400, "invalid_request_error", "context_length_exceeded", false},
		{"/responses", APIOpenAIResponses, Step{Status: 500}, 500, "server_error", "", false},
		{"/messages", APIAnthropic, Step{Status: 529}, 529, "overloaded_error", "", false},
		{"/messages", APIAnthropic, Step{Status: 429}, 429, "rate_limit_error", "", true},
		{"/messages", APIAnthropic, Step{ErrorType: "context_length_exceeded"}, 400, "invalid_request_error", "", false},
	}
	for _, c := range cases {
		s := Start(t, c.step)
		body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"input":"x"}`
		status, hdr, out := post(t, s.URL+c.path, body, map[string]string{"anthropic-version": "2023-06-01"})
		if status != c.status || (hdr.Get("retry-after") != "") != c.retryAfter {
			t.Errorf("%s %+v: status %d retry-after %q", c.path, c.step, status, hdr.Get("retry-after"))
		}
		if c.api == APIAnthropic {
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if json.Unmarshal([]byte(out), &e) != nil || e.Type != "error" || e.Error.Type != c.errType || e.Error.Message == "" {
				t.Errorf("%s: body %s", c.path, out)
			}
			continue
		}
		var e struct {
			Error struct {
				Message, Type string
				Code          *string
				Param         *string
			}
		}
		if json.Unmarshal([]byte(out), &e) != nil || e.Error.Type != c.errType || e.Error.Message == "" ||
			(c.code != "" && (e.Error.Code == nil || *e.Error.Code != c.code)) || !strings.Contains(out, `"param"`) {
			t.Errorf("%s: body %s", c.path, out)
		}
	}
}

func TestAuthAndScriptEnd(t *testing.T) {
	const key = "sk-modelsim-secret-0123456789"
	s := Start(t, Step{Text: "ok"})
	s.RequireKey(key)
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	status, _, out := post(t, s.URL+"/chat/completions", body, map[string]string{"Authorization": "Bearer wrong-key-000000000"})
	if status != 401 || !strings.Contains(out, `"invalid_api_key"`) {
		t.Fatalf("wrong key: %d %s", status, out)
	}
	if status, _, out := post(t, s.URL+"/chat/completions", body, map[string]string{"Authorization": "Bearer " + key}); status != 200 {
		t.Fatalf("right key: %d %s", status, out)
	}
	// The script is used up: the next request is an error the test sees.
	if status, _, _ := post(t, s.URL+"/chat/completions", body, map[string]string{"Authorization": "Bearer " + key}); status != 500 {
		t.Fatalf("request beyond the script: %d", status)
	}
	if s.Err() == nil {
		t.Fatal("Err() does not report the request beyond the script")
	}

	a := Start(t, Step{Text: "ok"})
	a.RequireKey(key)
	msgs := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	status, _, out = post(t, a.URL+"/messages", msgs, map[string]string{"x-api-key": "nope", "anthropic-version": "2023-06-01"})
	if status != 401 || !strings.Contains(out, `"authentication_error"`) {
		t.Fatalf("anthropic wrong key: %d %s", status, out)
	}
	status, _, out = post(t, a.URL+"/messages", msgs, map[string]string{"x-api-key": key})
	if status != 400 || !strings.Contains(out, "anthropic-version") {
		t.Fatalf("anthropic without version: %d %s", status, out)
	}
}

func TestHangEndsWithTheRequest(t *testing.T) {
	s := Start(t, Step{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	_, err := http.DefaultClient.Do(req)
	if err == nil || ctx.Err() == nil {
		t.Fatalf("hang answered: %v", err)
	}
}

func TestCheckFailureIsReported(t *testing.T) {
	s := Start(t, Step{Check: func(r Request) error {
		if r.System == "" {
			return io.ErrUnexpectedEOF
		}
		return nil
	}})
	status, _, _ := post(t, s.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
	if status != 400 || s.Err() == nil {
		t.Fatalf("failed check: status %d err %v", status, s.Err())
	}
}

// A tool result must answer a call the conversation made, as the real
// APIs insist; a client that mixes up ids is refused and Err() says so.
func TestToolResultWithoutItsCallIsRefused(t *testing.T) {
	cases := map[string]string{
		"/chat/completions": `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"call_x","content":"r"}]}`,
		"/responses":        `{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"call_x","output":"r"}]}`,
		"/messages": `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"r"}]}]}`,
	}
	for path, body := range cases {
		s := Start(t, Step{Text: "never"})
		status, _, out := post(t, s.URL+path, body, map[string]string{"anthropic-version": "2023-06-01"})
		if status != 400 || s.Err() == nil {
			t.Errorf("%s: status %d, Err %v: %s", path, status, s.Err(), out)
		}
	}
	s := Start(t, Step{Text: "never"})
	status, _, _ := post(t, s.URL+"/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"x"}]}]}`,
		map[string]string{"anthropic-version": "2023-06-01"})
	if status != 400 {
		t.Errorf("tool_use input that is not an object: status %d", status)
	}
}

// A streamed tool call arrives as OpenAI sends it and the AI SDK's
// openai-compatible provider (OpenCode, Kilo) assembles it: the first
// delta of each call carries its index, id and name, the arguments follow
// in pieces, the finish reason comes on a chunk of its own, and with
// include_usage every chunk has "usage": null until a last chunk without
// choices carries the usage.
func TestChatStreamedToolCall(t *testing.T) {
	second := ToolCall{Name: "aicr_publish_summary", Arguments: `{"markdown":"one problem"}`}
	s := Start(t, Step{ToolCalls: []ToolCall{call, second}, Usage: Usage{Input: 40, Output: 7}}, Step{Text: "done"})
	status, _, body := post(t, s.URL+"/chat/completions", strings.Replace(chatBody, "%s", chatStreamed, 1), nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	type delta struct {
		ToolCalls []struct {
			Index    *int    `json:"index"`
			ID       *string `json:"id"`
			Type     string  `json:"type"`
			Function struct {
				Name      *string `json:"name"`
				Arguments string  `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	type assembled struct{ id, name, args string }
	var calls []assembled
	var finish string
	var usageChunks, nullUsage int
	evs := events(t, body)
	for _, e := range evs[:len(evs)-1] {
		var ch struct {
			Choices []struct {
				Delta        delta   `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e[1]), &ch); err != nil {
			t.Fatal(err)
		}
		switch {
		case string(ch.Usage) == "null":
			nullUsage++
		case len(ch.Usage) > 0:
			usageChunks++
			var u struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			}
			_ = json.Unmarshal(ch.Usage, &u)
			if len(ch.Choices) != 0 || u.Prompt != 40 || u.Completion != 7 {
				t.Errorf("usage chunk %s", e[1])
			}
		}
		for _, c := range ch.Choices {
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool call delta without index: %s", e[1])
				}
				if tc.ID != nil {
					if *tc.Index != len(calls) || tc.Function.Name == nil || tc.Type != "function" {
						t.Fatalf("a call's first delta must carry index, id, type and name: %s", e[1])
					}
					calls = append(calls, assembled{id: *tc.ID, name: *tc.Function.Name})
				}
				calls[*tc.Index].args += tc.Function.Arguments
			}
		}
	}
	want := []ToolCall{call, second}
	if len(calls) != 2 {
		t.Fatalf("assembled %+v", calls)
	}
	for i, c := range calls {
		if c.id == "" || c.name != want[i].Name || c.args != want[i].Arguments {
			t.Errorf("call %d = %+v, want %+v", i, c, want[i])
		}
	}
	if finish != "tool_calls" || usageChunks != 1 || nullUsage == 0 {
		t.Errorf("finish %q, usage chunks %d, chunks with null usage %d", finish, usageChunks, nullUsage)
	}

	// Without stream_options there is no usage at all.
	status, _, body = post(t, s.URL+"/chat/completions", strings.Replace(chatBody, "%s", `"stream":true`, 1), nil)
	if status != 200 || strings.Contains(body, `"usage"`) {
		t.Errorf("stream without include_usage: status %d, body has usage: %s", status, body)
	}
}

// The real API refuses what a careless client sends: usage options for an
// answer that is not streamed, a tool without a name.
func TestChatRefusesMalformedRequests(t *testing.T) {
	cases := map[string]string{
		"stream_options": `{"model":"m","stream":false,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`,
		"function.name":  `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"parameters":{}}}]}`,
	}
	for want, body := range cases {
		s := Start(t, Step{Text: "never"})
		status, _, out := post(t, s.URL+"/chat/completions", body, nil)
		if status != 400 || !strings.Contains(out, want) || s.Err() == nil {
			t.Errorf("%s: status %d, Err %v: %s", want, status, s.Err(), out)
		}
	}
}

// Anthropic takes a role "system" message inside messages right after a
// user turn (a mid-conversation system message, which Claude Code sends
// on its first request), and refuses one anywhere else.
func TestAnthropicMidConversationSystem(t *testing.T) {
	hdr := map[string]string{"anthropic-version": "2023-06-01"}
	s := Start(t, Step{Text: "ok"})
	status, _, out := post(t, s.URL+"/messages", `{"model":"m","max_tokens":5,"system":"top",
	 "messages":[{"role":"user","content":"review"},
	  {"role":"system","content":[{"type":"text","text":"# Environment","cache_control":{"type":"ephemeral"}}]}]}`, hdr)
	if status != 200 || s.Err() != nil {
		t.Fatalf("system turn after a user turn: status %d, Err %v: %s", status, s.Err(), out)
	}
	r := s.Requests()[0]
	if r.System != "top" || len(r.Messages) != 2 || r.Messages[1].Role != "system" || r.Messages[1].Text != "# Environment" {
		t.Fatalf("decoded %+v", r)
	}

	for name, messages := range map[string]string{
		"first":           `[{"role":"system","content":"x"},{"role":"user","content":"review"}]`,
		"after assistant": `[{"role":"user","content":"review"},{"role":"assistant","content":"ok"},{"role":"system","content":"x"}]`,
		"unknown role":    `[{"role":"user","content":"review"},{"role":"developer","content":"x"}]`,
	} {
		s := Start(t, Step{Text: "never"})
		status, _, out := post(t, s.URL+"/messages", `{"model":"m","max_tokens":5,"messages":`+messages+`}`, hdr)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if status != 400 || json.Unmarshal([]byte(out), &e) != nil || e.Error.Type != "invalid_request_error" ||
			!strings.Contains(e.Error.Message, "messages.") {
			t.Errorf("%s: status %d: %s", name, status, out)
		}
	}
}

// A server that predates mid-conversation system messages refuses them
// with 400 and the message's index; a request without one goes through.
func TestAnthropicUserAssistantRolesOnly(t *testing.T) {
	hdr := map[string]string{"anthropic-version": "2023-06-01"}
	s := Start(t, Step{Text: "ok"})
	s.UserAssistantRolesOnly()
	status, _, out := post(t, s.URL+"/messages", `{"model":"m","max_tokens":5,
	 "messages":[{"role":"user","content":"review"},{"role":"system","content":"env"}]}`, hdr)
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if status != 400 || json.Unmarshal([]byte(out), &e) != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" ||
		e.Error.Message != "messages.1.role: Input should be 'user' or 'assistant'" {
		t.Fatalf("status %d: %s", status, out)
	}
	if s.Err() != nil || len(s.Requests()) != 1 {
		t.Fatalf("Err %v, %d requests", s.Err(), len(s.Requests()))
	}
	status, _, out = post(t, s.URL+"/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"review\nenv"}]}`, hdr)
	if status != 200 || s.Err() != nil {
		t.Fatalf("folded request: status %d, Err %v: %s", status, s.Err(), out)
	}
}
