package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicDefaultMaxTokens fills max_tokens, which Messages requires,
// when the request names no limit.
const anthropicDefaultMaxTokens = 4096

// anthropicModel speaks Anthropic Messages.
type anthropicModel struct {
	o   ModelOptions
	svc anthropic.MessageService
}

func newAnthropic(o ModelOptions) *anthropicModel {
	// WithoutEnvironmentDefaults keeps ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
	// ANTHROPIC_BASE_URL and profile files out: aicr's config is the only source.
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithMaxRetries(0),
		option.WithMiddleware(limitResponses(MaxResponseBytes))} //nolint:bodyclose // the middleware wraps the body and hands the response on; the SDK closes it
	if o.BaseURL != "" {
		// The SDK appends v1/messages to the root; accept the /v1 form
		// the OpenAI APIs use so one base_url style fits all three.
		base := strings.TrimSuffix(strings.TrimSuffix(o.BaseURL, "/"), "/v1")
		opts = append(opts, option.WithBaseURL(base+"/"))
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	if o.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(o.Timeout))
	}
	for name, value := range o.Headers {
		opts = append(opts, option.WithHeader(name, value))
	}
	return &anthropicModel{o: o, svc: anthropic.NewMessageService(opts...)}
}

func (m *anthropicModel) Turn(ctx context.Context, req Request) (Response, error) {
	params, err := m.params(req)
	if err != nil {
		return Response{}, err
	}
	var msg *anthropic.Message
	if m.o.Stream {
		stream := m.svc.NewStreaming(ctx, params)
		defer stream.Close()
		msg = &anthropic.Message{}
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				return Response{}, fmt.Errorf("%w (%s: the stream does not assemble: %w)", ErrBadRequest, APIAnthropic, err)
			}
		}
		if err := stream.Err(); err != nil {
			return Response{}, anthropicError(ctx, m.o, err)
		}
	} else {
		var perCall []option.RequestOption
		if m.o.Timeout <= 0 {
			// Without a timeout the SDK refuses non-streaming requests
			// whose max_tokens might outlast ten minutes; ctx (the pass
			// timeout) bounds the request instead.
			perCall = append(perCall, option.WithRequestTimeout(24*time.Hour))
		}
		msg, err = m.svc.New(ctx, params, perCall...)
		if err != nil {
			return Response{}, anthropicError(ctx, m.o, err)
		}
	}
	r := Response{
		Model:      string(msg.Model),
		StopReason: string(msg.StopReason),
		// Messages reports the three prompt parts apart; input_tokens
		// is the uncached part only.
		Usage: Usage{Input: int(msg.Usage.InputTokens), Output: int(msg.Usage.OutputTokens),
			CacheRead: int(msg.Usage.CacheReadInputTokens), CacheWrite: int(msg.Usage.CacheCreationInputTokens)},
	}
	var texts []string
	for _, block := range msg.Content {
		switch block.Type {
		case "text":
			texts = append(texts, block.Text)
		case "tool_use":
			args := block.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			r.ToolCalls = append(r.ToolCalls, ToolCall{ID: block.ID, Name: block.Name, Arguments: args})
		}
	}
	r.Text = strings.Join(texts, "")
	return r, nil
}

func (m *anthropicModel) params(req Request) (anthropic.MessageNewParams, error) {
	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		// Messages requires max_tokens; this is the [agent.llm] default.
		maxTokens = anthropicDefaultMaxTokens
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(m.o.Model), MaxTokens: int64(maxTokens)}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case RoleUser:
			if m.o.PromptCache && msg.Stable > 0 && msg.Stable < len(msg.Text) {
				// The stable part is a block of its own with a breakpoint,
				// so the next pass, which shares it, reads it from the cache.
				stable := anthropic.NewTextBlock(msg.Text[:msg.Stable])
				*stable.GetCacheControl() = anthropic.NewCacheControlEphemeralParam()
				p.Messages = appendBlocks(p.Messages, anthropic.MessageParamRoleUser, stable, anthropic.NewTextBlock(msg.Text[msg.Stable:]))
				continue
			}
			p.Messages = appendBlocks(p.Messages, anthropic.MessageParamRoleUser, anthropic.NewTextBlock(msg.Text))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if msg.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(msg.Text))
			}
			for _, c := range msg.ToolCalls {
				// tool_use.input must be an object; a model's unreadable
				// arguments are sent back as none, and the tool's error
				// result tells it what was wrong.
				var input any = map[string]any{}
				if isJSONObject(c.Arguments) {
					input = c.Arguments
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
			if len(blocks) == 0 {
				continue
			}
			p.Messages = appendBlocks(p.Messages, anthropic.MessageParamRoleAssistant, blocks...)
		case RoleTool:
			if msg.ToolResult == nil {
				return p, fmt.Errorf("llm: message %d: tool message without a result", i)
			}
			// Results go in a user message; consecutive ones share it, as
			// the API wants every result of a turn in the next message.
			block := anthropic.NewToolResultBlock(msg.ToolResult.CallID, msg.ToolResult.Content, msg.ToolResult.IsError)
			p.Messages = appendBlocks(p.Messages, anthropic.MessageParamRoleUser, block)
		default:
			return p, fmt.Errorf("llm: message %d: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := toolSchema(t)
		if err != nil {
			return p, err
		}
		in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "type" && k != "properties" && k != "required" {
				in.ExtraFields[k] = v
			}
		}
		tool := &anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}
	if m.o.PromptCache {
		markBreakpoints(&p)
	}
	return p, nil
}

// maxBreakpoints is how many blocks with cache_control one Messages
// request may carry; one more is a 400 ("A maximum of 4 blocks with
// cache_control may be provided. Found 5.").
const maxBreakpoints = 4

// markBreakpoints sets Anthropic's cache breakpoints: the end of the
// system prompt (which caches the tools before it too) and the last block
// of the conversation, a breakpoint that moves with every turn so each
// turn reads all earlier ones from the cache and writes only its own.
// With the stable block of the first user message that makes three; any
// beyond four are taken off the earliest message blocks, which the later
// breakpoints' cache lookups reach anyway.
func markBreakpoints(p *anthropic.MessageNewParams) {
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	if n := len(p.Messages); n > 0 {
		if blocks := p.Messages[n-1].Content; len(blocks) > 0 {
			if cc := blocks[len(blocks)-1].GetCacheControl(); cc != nil {
				*cc = anthropic.NewCacheControlEphemeralParam()
			}
		}
	}
	excess := countBreakpoints(*p) - maxBreakpoints
	for i := 0; i < len(p.Messages) && excess > 0; i++ {
		for j := range p.Messages[i].Content {
			cc := p.Messages[i].Content[j].GetCacheControl()
			if excess > 0 && cc != nil && cc.Type != "" && !(i == len(p.Messages)-1 && j == len(p.Messages[i].Content)-1) {
				*cc = anthropic.CacheControlEphemeralParam{}
				excess--
			}
		}
	}
}

// countBreakpoints counts the blocks of p that carry cache_control.
func countBreakpoints(p anthropic.MessageNewParams) int {
	n := 0
	for _, t := range p.Tools {
		if t.OfTool != nil && t.OfTool.CacheControl.Type != "" {
			n++
		}
	}
	for _, b := range p.System {
		if b.CacheControl.Type != "" {
			n++
		}
	}
	for _, m := range p.Messages {
		for _, b := range m.Content {
			if cc := b.GetCacheControl(); cc != nil && cc.Type != "" {
				n++
			}
		}
	}
	return n
}

// appendBlocks adds blocks to the last message when it has the same role
// (Messages alternates user and assistant), else starts a new one.
func appendBlocks(msgs []anthropic.MessageParam, role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) []anthropic.MessageParam {
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		return msgs
	}
	return append(msgs, anthropic.MessageParam{Role: role, Content: blocks})
}

func anthropicError(ctx context.Context, o ModelOptions, err error) error {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return classify(ctx, APIAnthropic, o, nil, err)
	}
	f := &apiFailure{status: apiErr.StatusCode, typ: string(apiErr.Type())}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(apiErr.RawJSON()), &body) == nil && body.Error.Message != "" {
		f.message = body.Error.Message
		f.typ = body.Error.Type
	} else {
		f.message = bareErrorMessage([]byte(apiErr.RawJSON()))
	}
	if apiErr.Response != nil {
		f.retryAfter = apiErr.Response.Header.Get("Retry-After")
	}
	return classify(ctx, APIAnthropic, o, f, err)
}

// isJSONObject tells whether raw is a JSON object, the only form
// tool_use.input may take.
func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
