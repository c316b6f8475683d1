package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicAPI is Anthropic Messages (POST /v1/messages).
type anthropicAPI struct{}

type anthropicRequest struct {
	Model     string          `json:"model"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (anthropicAPI) decode(raw []byte, req *Request) error {
	var in anthropicRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	if in.MaxTokens <= 0 {
		return fmt.Errorf("max_tokens: Field required")
	}
	req.Model, req.Stream, req.MaxTokens = in.Model, in.Stream, in.MaxTokens
	req.System = textOf(in.System)
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	calls := map[string]bool{}
	for i, m := range in.Messages {
		switch m.Role {
		case "user", "assistant":
		case "system":
			// Mid-conversation system messages: current models take a
			// role "system" turn right after a user turn (Claude Code
			// sends one on its first request); it is recorded as a
			// Message of role "system", apart from the top-level system.
			if i == 0 || in.Messages[i-1].Role != "user" {
				return fmt.Errorf("messages.%d: a system message must immediately follow a user turn", i)
			}
			req.Messages = append(req.Messages, Message{Role: "system", Text: textOf(m.Content)})
			continue
		default:
			return fmt.Errorf("messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			req.Messages = append(req.Messages, Message{Role: m.Role, Text: s})
			continue
		}
		var blocks []anthropicBlock
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return fmt.Errorf("messages.%d.content: %w", i, err)
		}
		msg := Message{Role: m.Role}
		var texts []string
		for j, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_use":
				if m.Role != "assistant" || b.ID == "" {
					return fmt.Errorf("messages.%d.content.%d: tool_use needs an id in an assistant message", i, j)
				}
				var input map[string]json.RawMessage
				if json.Unmarshal(b.Input, &input) != nil || input == nil {
					return fmt.Errorf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
				}
				calls[b.ID] = true
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{Name: b.Name, Arguments: string(b.Input)})
			case "tool_result":
				if m.Role != "user" || !calls[b.ToolUseID] {
					return fmt.Errorf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
				req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: b.ToolUseID, Text: textOf(b.Content), IsError: b.IsError})
			default:
				return fmt.Errorf("messages.%d.content.%d: unsupported block type %q", i, j, b.Type)
			}
		}
		msg.Text = strings.Join(texts, "\n")
		if msg.Text != "" || len(msg.ToolCalls) > 0 {
			req.Messages = append(req.Messages, msg)
		}
	}
	return nil
}

// UserAssistantRolesOnly makes the Anthropic endpoint refuse a role
// "system" message inside messages, as Anthropic-compatible servers that
// predate mid-conversation system messages do (an older model, a
// self-hosted server, a gateway): 400 naming the message's role. The
// refusal is recorded in Requests, uses up no step and is not an Err: it
// is the server's answer, not the client's mistake.
func (s *Server) UserAssistantRolesOnly() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userAssistantOnly = true
}

func (s *Server) refusesSystemMessages() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userAssistantOnly
}

// systemMessageIndex is the index of the first role "system" entry of an
// Anthropic request's messages, or -1.
func systemMessageIndex(raw []byte) int {
	var in struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return -1
	}
	for i, m := range in.Messages {
		if m.Role == "system" {
			return i
		}
	}
	return -1
}

func (anthropicAPI) authorized(h http.Header, key string) (bool, string) {
	token := h.Get("x-api-key")
	return token == key, token
}

func (anthropicAPI) writeError(w http.ResponseWriter, e apiError) { e.writeAnthropic(w) }

func anthropicToolID(seq, i int) string { return fmt.Sprintf("toolu_ms%03d%02d", seq, i) }

func anthropicStop(a answer) string {
	if len(a.toolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// toolInput is the call's arguments as the JSON object Anthropic's
// tool_use.input holds; a script's invalid arguments become a string so
// the answer still decodes.
func toolInput(arguments string) json.RawMessage {
	if json.Valid([]byte(arguments)) {
		return json.RawMessage(arguments)
	}
	s, _ := json.Marshal(arguments)
	return s
}

func (anthropicAPI) writeAnswer(w http.ResponseWriter, req Request, a answer) {
	id := fmt.Sprintf("msg_ms%03d", a.seq)
	message := func(content []any, stop any, usage map[string]any) map[string]any {
		return map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": a.model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		}
	}
	if !req.Stream {
		content := []any{}
		if a.text != "" {
			content = append(content, map[string]any{"type": "text", "text": a.text})
		}
		for i, c := range a.toolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": anthropicToolID(a.seq, i), "name": c.Name, "input": toolInput(c.Arguments)})
		}
		writeJSON(w, http.StatusOK, message(content, anthropicStop(a), map[string]any{
			"input_tokens": a.usage.Input, "output_tokens": a.usage.Output,
			"cache_creation_input_tokens": a.usage.CacheWrite, "cache_read_input_tokens": a.usage.CacheRead,
		}))
		return
	}

	startSSE(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": message([]any{}, nil, map[string]any{
		"input_tokens": a.usage.Input, "output_tokens": 1,
		"cache_creation_input_tokens": a.usage.CacheWrite, "cache_read_input_tokens": a.usage.CacheRead,
	})})
	sse(w, "ping", map[string]any{"type": "ping"})
	index := 0
	if a.text != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range chunks(a.text) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range a.toolCalls {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": anthropicToolID(a.seq, i), "name": c.Name, "input": map[string]any{},
		}})
		for _, piece := range append([]string{""}, chunks(string(toolInput(c.Arguments)))...) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(a), "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": a.usage.Input, "output_tokens": a.usage.Output,
			"cache_creation_input_tokens": a.usage.CacheWrite, "cache_read_input_tokens": a.usage.CacheRead}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
