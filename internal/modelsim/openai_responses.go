package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// responsesAPI is OpenAI Responses (POST /v1/responses).
//
// Besides plain function tools it takes what agent CLIs send: Codex
// groups an MCP server's tools in one tool of type "namespace"
// ({"type":"namespace","name":"mcp__aicr","tools":[{"type":"function",
// "name":"aicr_report_problem",…}]}) and expects a call of one of them
// back as a function_call item whose namespace and name are two separate
// fields. Request.Tools lists such a tool flattened as namespace + "__" +
// name ("mcp__aicr__aicr_report_problem"), so a responder finds it like
// any other; a ToolCall naming the flattened form is answered with the
// two fields split again. Built-in tools without a name (web_search,
// local_shell, image_generation…) are listed under their type.
type responsesAPI struct{}

// namespaceSep joins a namespace and a tool name in Request.Tools.
const namespaceSep = "__"

// LocalShellCall is the ToolCall.Name that makes the answer a
// local_shell_call item (Arguments is its "action" object, e.g.
// {"type":"exec","command":["touch","x"]}) instead of a function_call:
// what the API sends when a client offered the local_shell tool, and what
// a hostile endpoint can send whatever was offered.
const LocalShellCall = "local_shell"

type responsesRequest struct {
	Model           string          `json:"model"`
	Stream          bool            `json:"stream"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Input           json.RawMessage `json:"input"`
	Tools           []responsesTool `json:"tools"`
}

type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Action    json.RawMessage `json:"action"`
	Output    json.RawMessage `json:"output"`
}

// offeredTool is what a flattened tool name stands for.
type offeredTool struct {
	typ, namespace, name string
}

// flatten lists the tools as Request.Tools names them.
func flatten(tools []responsesTool) (map[string]offeredTool, []string, error) {
	byName := map[string]offeredTool{}
	var names []string
	add := func(flat string, t offeredTool) {
		byName[flat] = t
		names = append(names, flat)
	}
	for i, t := range tools {
		switch t.Type {
		case "function", "custom":
			if t.Name == "" {
				return nil, nil, fmt.Errorf("tools[%d]: Missing required parameter: 'tools[%d].name'", i, i)
			}
			add(t.Name, offeredTool{typ: t.Type, name: t.Name})
		case "namespace":
			if t.Name == "" {
				return nil, nil, fmt.Errorf("tools[%d]: Missing required parameter: 'tools[%d].name'", i, i)
			}
			for j, sub := range t.Tools {
				if sub.Name == "" {
					return nil, nil, fmt.Errorf("tools[%d].tools[%d]: Missing required parameter: 'name'", i, j)
				}
				add(t.Name+namespaceSep+sub.Name, offeredTool{typ: sub.Type, namespace: t.Name, name: sub.Name})
			}
		case "":
			return nil, nil, fmt.Errorf("tools[%d]: Missing required parameter: 'tools[%d].type'", i, i)
		default:
			// Hosted and built-in tools (web_search, local_shell,
			// file_search, image_generation, mcp, tool_search…).
			name := t.Type
			if t.Name != "" {
				name = t.Name
			}
			add(name, offeredTool{typ: t.Type, name: name})
		}
	}
	return byName, names, nil
}

func (responsesAPI) decode(raw []byte, req *Request) error {
	var in responsesRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	req.Model, req.Stream, req.MaxTokens = in.Model, in.Stream, in.MaxOutputTokens
	req.System = in.Instructions
	_, names, err := flatten(in.Tools)
	if err != nil {
		return err
	}
	req.Tools = names
	var prompt string
	if json.Unmarshal(in.Input, &prompt) == nil {
		req.Messages = []Message{{Role: "user", Text: prompt}}
		return nil
	}
	var items []responsesItem
	if err := json.Unmarshal(in.Input, &items); err != nil {
		return fmt.Errorf("input: neither a string nor a list of items: %w", err)
	}
	calls := map[string]bool{}
	addCall := func(callID string, call ToolCall) {
		calls[callID] = true
		// Calls following assistant text belong to that assistant turn.
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
			req.Messages[n-1].ToolCalls = append(req.Messages[n-1].ToolCalls, call)
		} else {
			req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{call}})
		}
	}
	addOutput := func(i int, callID string, output json.RawMessage) error {
		if !calls[callID] {
			return fmt.Errorf("input[%d]: No tool call found for function call output with call_id %q", i, callID)
		}
		req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: callID, Text: textOf(output)})
		return nil
	}
	for i, it := range items {
		switch it.Type {
		case "function_call":
			name := it.Name
			if it.Namespace != "" {
				name = it.Namespace + namespaceSep + it.Name
			}
			addCall(it.CallID, ToolCall{Name: name, Arguments: it.Arguments})
		case "custom_tool_call":
			addCall(it.CallID, ToolCall{Name: it.Name, Arguments: it.Input})
		case "local_shell_call":
			addCall(it.CallID, ToolCall{Name: LocalShellCall, Arguments: string(it.Action)})
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			if err := addOutput(i, it.CallID, it.Output); err != nil {
				return err
			}
		case "message", "":
			switch it.Role {
			case "system", "developer":
				req.System = joinSystem(req.System, textOf(it.Content))
			case "user", "assistant":
				req.Messages = append(req.Messages, Message{Role: it.Role, Text: textOf(it.Content)})
			default:
				return fmt.Errorf("input[%d]: unknown role %q", i, it.Role)
			}
		case "reasoning", "web_search_call", "file_search_call", "image_generation_call", "code_interpreter_call",
			"computer_call", "computer_call_output", "tool_search_call", "tool_search_output", "mcp_list_tools",
			"mcp_call", "mcp_approval_request", "mcp_approval_response", "compaction", "item_reference":
			// Carried along by clients (reasoning replayed with its
			// encrypted content, hosted tool calls, compaction summaries);
			// nothing in them is the conversation a responder scripts.
		default:
			return fmt.Errorf("input[%d]: Invalid value: '%s'. Supported values are: 'message', 'function_call', 'function_call_output', 'reasoning', …", i, it.Type)
		}
	}
	return nil
}

func (responsesAPI) authorized(h http.Header, key string) (bool, string) {
	return chatAPI{}.authorized(h, key)
}

func (responsesAPI) writeError(w http.ResponseWriter, e apiError) { e.writeOpenAI(w) }

// responseObject is the Response resource in a given state; items are the
// output items so far.
func responseObject(req Request, a answer, status string, items []any, created int64) map[string]any {
	if items == nil {
		items = []any{}
	}
	r := map[string]any{
		"id": fmt.Sprintf("resp_ms%03d", a.seq), "object": "response", "created_at": created,
		"status": status, "model": a.model, "output": items,
		"error": nil, "incomplete_details": nil, "instructions": nullable(req.System),
		"max_output_tokens": nil, "parallel_tool_calls": true, "tool_choice": "auto",
		"tools": []any{}, "temperature": 1.0, "top_p": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"truncation": "disabled", "metadata": map[string]any{}, "usage": nil,
	}
	if req.MaxTokens > 0 {
		r["max_output_tokens"] = req.MaxTokens
	}
	if status == "completed" {
		r["usage"] = map[string]any{
			"input_tokens": a.usage.prompt(), "input_tokens_details": map[string]any{"cached_tokens": a.usage.CacheRead},
			"output_tokens": a.usage.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": a.usage.prompt() + a.usage.Output,
		}
	}
	return r
}

func messageItem(a answer, status, text string) map[string]any {
	content := []any{}
	if status == "completed" {
		content = []any{outputText(text)}
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_ms%03d", a.seq), "type": "message", "status": status,
		"role": "assistant", "content": content,
	}
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// callItem is the output item of the i-th call in the form the offered
// tool takes: a function_call (with namespace and name split for a
// namespaced tool), a custom_tool_call carrying raw input, or a
// local_shell_call.
func callItem(offered map[string]offeredTool, a answer, i int, status, arguments string) map[string]any {
	c := a.toolCalls[i]
	callID := chatCallID(a.seq, i)
	if c.Name == LocalShellCall {
		if _, asFunction := offered[c.Name]; !asFunction || offered[c.Name].typ == "local_shell" {
			action := json.RawMessage(arguments)
			if !json.Valid(action) {
				action = json.RawMessage(`{}`)
			}
			return map[string]any{"id": fmt.Sprintf("lsh_ms%03d%02d", a.seq, i), "type": "local_shell_call",
				"status": status, "call_id": callID, "action": action}
		}
	}
	t, ok := offered[c.Name]
	if ok && t.typ == "custom" {
		return map[string]any{"id": fmt.Sprintf("ctc_ms%03d%02d", a.seq, i), "type": "custom_tool_call",
			"status": status, "call_id": callID, "name": t.name, "input": arguments}
	}
	item := map[string]any{
		"id": fmt.Sprintf("fc_ms%03d%02d", a.seq, i), "type": "function_call", "status": status,
		"call_id": callID, "name": c.Name, "arguments": arguments,
	}
	if ok && t.namespace != "" {
		item["namespace"], item["name"] = t.namespace, t.name
	}
	return item
}

// offeredTools re-reads the request's tools: the answer needs to know
// which calls go to a namespace or a custom tool.
func offeredTools(req Request) map[string]offeredTool {
	var in struct {
		Tools []responsesTool `json:"tools"`
	}
	if json.Unmarshal(req.Raw, &in) != nil {
		return nil
	}
	byName, _, err := flatten(in.Tools)
	if err != nil {
		return nil
	}
	return byName
}

func (responsesAPI) writeAnswer(w http.ResponseWriter, req Request, a answer) {
	created := time.Now().Unix()
	offered := offeredTools(req)
	var done []any
	if a.text != "" {
		done = append(done, messageItem(a, "completed", a.text))
	}
	for i, c := range a.toolCalls {
		done = append(done, callItem(offered, a, i, "completed", c.Arguments))
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, responseObject(req, a, "completed", done, created))
		return
	}

	seq := 0
	emit := func(event string, fields map[string]any) {
		fields["type"] = event
		fields["sequence_number"] = seq
		seq++
		sse(w, event, fields)
	}
	startSSE(w)
	emit("response.created", map[string]any{"response": responseObject(req, a, "in_progress", nil, created)})
	emit("response.in_progress", map[string]any{"response": responseObject(req, a, "in_progress", nil, created)})
	index := 0
	if a.text != "" {
		itemID := fmt.Sprintf("msg_ms%03d", a.seq)
		emit("response.output_item.added", map[string]any{"output_index": index, "item": messageItem(a, "in_progress", "")})
		emit("response.content_part.added", map[string]any{"item_id": itemID, "output_index": index, "content_index": 0, "part": outputText("")})
		for _, piece := range chunks(a.text) {
			emit("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": index, "content_index": 0, "delta": piece, "logprobs": []any{}})
		}
		emit("response.output_text.done", map[string]any{"item_id": itemID, "output_index": index, "content_index": 0, "text": a.text, "logprobs": []any{}})
		emit("response.content_part.done", map[string]any{"item_id": itemID, "output_index": index, "content_index": 0, "part": outputText(a.text)})
		emit("response.output_item.done", map[string]any{"output_index": index, "item": messageItem(a, "completed", a.text)})
		index++
	}
	for i, c := range a.toolCalls {
		final := callItem(offered, a, i, "completed", c.Arguments)
		itemID, _ := final["id"].(string)
		emit("response.output_item.added", map[string]any{"output_index": index, "item": callItem(offered, a, i, "in_progress", "")})
		switch final["type"] {
		case "function_call":
			for _, piece := range chunks(c.Arguments) {
				emit("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": index, "delta": piece})
			}
			emit("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": index, "name": final["name"], "arguments": c.Arguments})
		case "custom_tool_call":
			for _, piece := range chunks(c.Arguments) {
				emit("response.custom_tool_call_input.delta", map[string]any{"item_id": itemID, "output_index": index, "delta": piece})
			}
			emit("response.custom_tool_call_input.done", map[string]any{"item_id": itemID, "output_index": index, "input": c.Arguments})
		}
		emit("response.output_item.done", map[string]any{"output_index": index, "item": final})
		index++
	}
	emit("response.completed", map[string]any{"response": responseObject(req, a, "completed", done, created)})
}
