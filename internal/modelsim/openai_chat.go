package modelsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// chatAPI is OpenAI Chat Completions (POST /v1/chat/completions), the API
// vLLM, Ollama, LM Studio and most gateways also serve.
type chatAPI struct{}

type chatRequest struct {
	Model               string `json:"model"`
	Stream              bool   `json:"stream"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	Messages            []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (chatAPI) decode(raw []byte, req *Request) error {
	var in chatRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	if len(in.Messages) == 0 {
		return fmt.Errorf("messages: empty")
	}
	// OpenAI and vLLM both refuse usage options for an answer that is not
	// streamed; a client must only ask for the usage chunk when streaming.
	if in.StreamOptions != nil && !in.Stream {
		return fmt.Errorf("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	for i, t := range in.Tools {
		if t.Function.Name == "" {
			return fmt.Errorf("Missing required parameter: 'tools[%d].function.name'.", i)
		}
	}
	req.Model, req.Stream = in.Model, in.Stream
	req.MaxTokens = in.MaxCompletionTokens
	if req.MaxTokens == 0 {
		req.MaxTokens = in.MaxTokens
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	calls := map[string]bool{}
	for i, m := range in.Messages {
		switch m.Role {
		case "system", "developer":
			req.System = joinSystem(req.System, textOf(m.Content))
		case "user", "assistant", "tool":
			msg := Message{Role: m.Role, Text: textOf(m.Content), ToolCallID: m.ToolCallID}
			for _, c := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments})
				calls[c.ID] = true
			}
			if m.Role == "tool" && !calls[m.ToolCallID] {
				return fmt.Errorf("messages[%d]: Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id %q)", i, m.ToolCallID)
			}
			req.Messages = append(req.Messages, msg)
		default:
			return fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return nil
}

func (chatAPI) authorized(h http.Header, key string) (bool, string) {
	token, _ := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	return token == key, token
}

func (chatAPI) writeError(w http.ResponseWriter, e apiError) { e.writeOpenAI(w) }

func chatCallID(seq, i int) string { return fmt.Sprintf("call_ms%03d%02d", seq, i) }

func chatFinish(a answer) string {
	if len(a.toolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(u Usage, noDetails bool) map[string]any {
	if noDetails {
		return map[string]any{"prompt_tokens": u.prompt(), "completion_tokens": u.Output, "total_tokens": u.prompt() + u.Output,
			"prompt_tokens_details": nil}
	}
	return map[string]any{
		"prompt_tokens": u.prompt(), "completion_tokens": u.Output, "total_tokens": u.prompt() + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheRead},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
	}
}

func (chatAPI) writeAnswer(w http.ResponseWriter, req Request, a answer) {
	id := fmt.Sprintf("chatcmpl-ms%03d", a.seq)
	created := time.Now().Unix()
	if !req.Stream {
		writeChatCompletion(w, id, created, a)
		return
	}
	streamChatCompletion(w, req, id, created, a)
}

// writeChatCompletion is the answer as one chat.completion object; a
// padded one streams its filler inside the content instead of building
// it in memory.
func writeChatCompletion(w http.ResponseWriter, id string, created int64, a answer) {
	const padMark = "<<modelsim-pad-7f3a>>" // marshals as itself
	text := a.text
	if a.pad > 0 {
		text += padMark
	}
	msg := map[string]any{"role": "assistant", "content": nullable(text), "refusal": nil}
	if len(a.toolCalls) > 0 {
		var calls []map[string]any
		for i, c := range a.toolCalls {
			calls = append(calls, map[string]any{
				"id": chatCallID(a.seq, i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": chatArguments(c)},
			})
		}
		msg["tool_calls"] = calls
	}
	choices := []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": chatFinish(a)}}
	if a.noChoices {
		choices = []any{}
	}
	body := map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": a.model,
		"choices": choices, "usage": chatUsage(a.usage, a.noDetails),
	}
	if a.pad == 0 {
		writeJSON(w, http.StatusOK, body)
		return
	}
	enc, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	head, tail, _ := strings.Cut(string(enc), padMark)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, head); err == nil && writeFiller(w, a.pad) == nil {
		_, _ = io.WriteString(w, tail)
	}
}

// streamChatCompletion is the answer as chat.completion.chunk events:
// role, content pieces, filler, tool calls, finish, usage when asked.
func streamChatCompletion(w http.ResponseWriter, req Request, id string, created int64, a answer) {
	var in chatRequest
	_ = json.Unmarshal(req.Raw, &in) // decoded once already
	includeUsage := in.StreamOptions != nil && in.StreamOptions.IncludeUsage
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if includeUsage {
			c["usage"] = nil
		}
		return c
	}
	startSSE(w)
	if a.noChoices {
		// The gateways that answer with no choices stream no chunk with one.
		sse(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": a.model, "choices": []any{}})
		sse(w, "", "[DONE]")
		return
	}
	sse(w, "", chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	if a.text != "" {
		for _, piece := range chunks(a.text) {
			sse(w, "", chunk(map[string]any{"content": piece}, nil))
		}
	}
	for left := a.pad; left > 0; left -= int64(len(fillerChunk)) {
		piece := fillerChunk[:min(int64(len(fillerChunk)), left)]
		if !sseOK(w, chunk(map[string]any{"content": piece}, nil)) {
			return // the client hung up
		}
	}
	for i, c := range a.toolCalls {
		sse(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": chatCallID(a.seq, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil))
		args := c.Arguments
		if len(c.ObjectArguments) > 0 {
			args = string(c.ObjectArguments)
		}
		for _, piece := range chunks(args) {
			sse(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": piece},
			}}}, nil))
		}
	}
	sse(w, "", chunk(map[string]any{}, chatFinish(a)))
	if includeUsage {
		sse(w, "", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": a.model,
			"choices": []any{}, "usage": chatUsage(a.usage, a.noDetails),
		})
	}
	sse(w, "", "[DONE]")
}

// chatArguments is a call's "arguments" member: the string, or the raw
// value when the script sends an object. A streamed call always carries
// text fragments, so there the object is sent as its text.
func chatArguments(c ToolCall) any {
	if len(c.ObjectArguments) > 0 {
		return c.ObjectArguments
	}
	return c.Arguments
}

// fillerChunk is one piece of PadBytes filler.
var fillerChunk = strings.Repeat("pad ", 16<<10)

// writeFiller writes n bytes of filler, stopping when the client hangs up.
func writeFiller(w io.Writer, n int64) error {
	for n > 0 {
		piece := fillerChunk[:min(int64(len(fillerChunk)), n)]
		if _, err := io.WriteString(w, piece); err != nil {
			return err
		}
		n -= int64(len(piece))
	}
	return nil
}
