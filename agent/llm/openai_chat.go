package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// openAIChat speaks OpenAI Chat Completions, the API vLLM, Ollama,
// LM Studio and most gateways serve.
type openAIChat struct {
	o   ModelOptions
	svc openai.ChatCompletionService
}

func newOpenAIChat(o ModelOptions) *openAIChat {
	return &openAIChat{o: o, svc: openai.NewChatCompletionService(openAIOptions(o)...)}
}

func (m *openAIChat) Turn(ctx context.Context, req Request) (Response, error) {
	params, err := m.params(req)
	if err != nil {
		return Response{}, err
	}
	return parallelTurn(m.o.Quirks, len(req.Tools) > 0, func(parallel bool) (Response, error) {
		params.ParallelToolCalls = param.Opt[bool]{}
		if parallel {
			params.ParallelToolCalls = openai.Bool(true)
		}
		return m.turn(ctx, params)
	})
}

func (m *openAIChat) turn(ctx context.Context, params openai.ChatCompletionNewParams) (Response, error) {
	var err error
	var completion *openai.ChatCompletion
	if m.o.Stream {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := m.svc.NewStreaming(ctx, params)
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			if !acc.AddChunk(stream.Current()) {
				return Response{}, fmt.Errorf("%w (%s: the stream sent a chunk that does not continue the answer)", ErrBadRequest, APIOpenAIChat)
			}
		}
		if err := stream.Err(); err != nil {
			return Response{}, openAIError(ctx, APIOpenAIChat, m.o, err)
		}
		completion = &acc.ChatCompletion
	} else {
		completion, err = m.svc.New(ctx, params)
		if err != nil {
			return Response{}, openAIError(ctx, APIOpenAIChat, m.o, err)
		}
	}
	return chatResponse(completion)
}

func (m *openAIChat) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: m.o.Model}
	if req.MaxOutputTokens > 0 {
		// max_completion_tokens is the current field; OpenAI's reasoning
		// models refuse the older max_tokens, and vLLM accepts both.
		p.MaxCompletionTokens = openai.Int(int64(req.MaxOutputTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(msg.Text))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if msg.Text != "" {
				a.Content.OfString = openai.String(msg.Text)
			}
			for _, c := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: arguments(c)},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			if msg.ToolResult == nil {
				return p, fmt.Errorf("llm: message %d: tool message without a result", i)
			}
			// Chat has no error flag on a tool result; the {code,
			// message, remedy} envelope in the content says it.
			p.Messages = append(p.Messages, openai.ToolMessage(msg.ToolResult.Content, msg.ToolResult.CallID))
		default:
			return p, fmt.Errorf("llm: message %d: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := toolSchema(t)
		if err != nil {
			return p, err
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	return p, nil
}

func chatResponse(c *openai.ChatCompletion) (Response, error) {
	r := Response{Model: c.Model, Usage: cachedUsage(c.Usage.PromptTokens, c.Usage.PromptTokensDetails.CachedTokens, c.Usage.CompletionTokens)}
	if len(c.Choices) == 0 {
		return r, fmt.Errorf("%w (%s: %w)", ErrTransient, APIOpenAIChat, ErrEmptyAnswer)
	}
	choice := c.Choices[0]
	r.Text = choice.Message.Content
	r.StopReason = choice.FinishReason
	for _, call := range choice.Message.ToolCalls {
		if call.Type != "" && call.Type != "function" {
			continue
		}
		args := rawArguments(call.Function.Arguments)
		// Some servers send the arguments as a JSON object instead of a
		// string; the SDK then leaves the string empty and keeps the raw
		// value, which would otherwise read as "no arguments".
		if raw := strings.TrimSpace(call.Function.JSON.Arguments.Raw()); strings.HasPrefix(raw, "{") {
			args = json.RawMessage(raw)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: call.ID, Name: call.Function.Name, Arguments: args})
	}
	return r, nil
}

// rawArguments keeps the model's arguments as sent; a model that sent
// nothing called with no arguments.
func rawArguments(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}
