package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// responsesAPI is OpenAI Responses (POST /v1/responses).
type responsesAPI struct{}

type responsesRequest struct {
	Model           string          `json:"model"`
	Stream          bool            `json:"stream"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Input           json.RawMessage `json:"input"`
	Tools           []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

func (responsesAPI) decode(raw []byte, req *Request) error {
	var in responsesRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	req.Model, req.Stream, req.MaxTokens = in.Model, in.Stream, in.MaxOutputTokens
	req.System = in.Instructions
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
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
	for i, it := range items {
		switch {
		case it.Type == "function_call":
			call := ToolCall{Name: it.Name, Arguments: it.Arguments}
			calls[it.CallID] = true
			// Calls following assistant text belong to that assistant turn.
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
				req.Messages[n-1].ToolCalls = append(req.Messages[n-1].ToolCalls, call)
			} else {
				req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{call}})
			}
		case it.Type == "function_call_output":
			if !calls[it.CallID] {
				return fmt.Errorf("input[%d]: No tool call found for function call output with call_id %q", i, it.CallID)
			}
			req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: it.CallID, Text: textOf(it.Output)})
		case it.Type == "message" || it.Type == "":
			switch it.Role {
			case "system", "developer":
				req.System = joinSystem(req.System, textOf(it.Content))
			case "user", "assistant":
				req.Messages = append(req.Messages, Message{Role: it.Role, Text: textOf(it.Content)})
			default:
				return fmt.Errorf("input[%d]: unknown role %q", i, it.Role)
			}
		default:
			return fmt.Errorf("input[%d]: unsupported item type %q", i, it.Type)
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
			"input_tokens": a.usage.Input, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": a.usage.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": a.usage.Input + a.usage.Output,
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

func functionCallItem(a answer, i int, status, arguments string) map[string]any {
	c := a.toolCalls[i]
	return map[string]any{
		"id": fmt.Sprintf("fc_ms%03d%02d", a.seq, i), "type": "function_call", "status": status,
		"call_id": chatCallID(a.seq, i), "name": c.Name, "arguments": arguments,
	}
}

func (responsesAPI) writeAnswer(w http.ResponseWriter, req Request, a answer) {
	created := time.Now().Unix()
	var done []any
	if a.text != "" {
		done = append(done, messageItem(a, "completed", a.text))
	}
	for i, c := range a.toolCalls {
		done = append(done, functionCallItem(a, i, "completed", c.Arguments))
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
		itemID := fmt.Sprintf("fc_ms%03d%02d", a.seq, i)
		emit("response.output_item.added", map[string]any{"output_index": index, "item": functionCallItem(a, i, "in_progress", "")})
		for _, piece := range chunks(c.Arguments) {
			emit("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": index, "delta": piece})
		}
		emit("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": index, "name": c.Name, "arguments": c.Arguments})
		emit("response.output_item.done", map[string]any{"output_index": index, "item": functionCallItem(a, i, "completed", c.Arguments)})
		index++
	}
	emit("response.completed", map[string]any{"response": responseObject(req, a, "completed", done, created)})
}
