package llm

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// openAIResponses speaks OpenAI Responses. Each Turn sends the whole
// conversation with store=false: the server keeps nothing of the code
// under review, and no state lives outside the run.
type openAIResponses struct {
	o   ModelOptions
	svc responses.ResponseService
}

func newOpenAIResponses(o ModelOptions) *openAIResponses {
	return &openAIResponses{o: o, svc: responses.NewResponseService(openAIOptions(o)...)}
}

func (m *openAIResponses) Turn(ctx context.Context, req Request) (Response, error) {
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

func (m *openAIResponses) turn(ctx context.Context, params responses.ResponseNewParams) (Response, error) {
	if !m.o.Stream {
		resp, err := m.svc.New(ctx, params)
		if err != nil {
			return Response{}, openAIError(ctx, APIOpenAIResponses, m.o, err)
		}
		return responsesResponse(resp)
	}
	stream := m.svc.NewStreaming(ctx, params)
	defer stream.Close()
	var done []responses.ResponseOutputItemUnion
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_item.done":
			done = append(done, ev.Item)
		case "response.completed", "response.incomplete":
			// The final event carries the whole Response, so the deltas
			// before it need no assembling; a server that leaves its
			// output out still sent every finished item.
			resp := ev.Response
			if len(resp.Output) == 0 {
				resp.Output = done
			}
			return responsesResponse(&resp)
		case "response.failed":
			e := ev.Response.Error
			return Response{}, classify(ctx, APIOpenAIResponses, m.o,
				&apiFailure{status: 500, code: string(e.Code), message: e.Message}, nil)
		case "error":
			e := ev.AsError()
			return Response{}, classify(ctx, APIOpenAIResponses, m.o,
				&apiFailure{status: 500, code: e.Code, message: e.Message}, nil)
		}
	}
	if err := stream.Err(); err != nil {
		return Response{}, openAIError(ctx, APIOpenAIResponses, m.o, err)
	}
	return Response{}, fmt.Errorf("%w (%s: the stream ended without response.completed)", ErrTransient, APIOpenAIResponses)
}

func (m *openAIResponses) params(req Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{Model: m.o.Model, Store: openai.Bool(false)}
	if req.System != "" {
		p.Instructions = openai.String(req.System)
	}
	if req.MaxOutputTokens > 0 {
		p.MaxOutputTokens = openai.Int(int64(req.MaxOutputTokens))
	}
	var input responses.ResponseInputParam
	for i, msg := range req.Messages {
		switch msg.Role {
		case RoleUser:
			input = append(input, responses.ResponseInputItemParamOfMessage(msg.Text, responses.EasyInputMessageRoleUser))
		case RoleAssistant:
			if msg.Text != "" {
				input = append(input, responses.ResponseInputItemParamOfMessage(msg.Text, responses.EasyInputMessageRoleAssistant))
			}
			for _, c := range msg.ToolCalls {
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(arguments(c), c.ID, c.Name))
			}
		case RoleTool:
			if msg.ToolResult == nil {
				return p, fmt.Errorf("llm: message %d: tool message without a result", i)
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput(msg.ToolResult.Content)
			out.OfFunctionCallOutput.CallID = openai.String(msg.ToolResult.CallID)
			input = append(input, out)
		default:
			return p, fmt.Errorf("llm: message %d: unknown role %q", i, msg.Role)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	for _, t := range req.Tools {
		schema, err := toolSchema(t)
		if err != nil {
			return p, err
		}
		// strict=false: the seed schemas are not written for OpenAI's
		// strict mode (optional fields, open objects); aicr validates.
		fn := &responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: openai.Bool(false)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: fn})
	}
	return p, nil
}

func responsesResponse(resp *responses.Response) (Response, error) {
	r := Response{
		Model:      resp.Model,
		Text:       resp.OutputText(),
		Usage:      cachedUsage(resp.Usage.InputTokens, resp.Usage.InputTokensDetails.CachedTokens, resp.Usage.OutputTokens),
		StopReason: string(resp.Status),
	}
	if resp.Status == "incomplete" && resp.IncompleteDetails.Reason != "" {
		r.StopReason = string(resp.IncompleteDetails.Reason)
	}
	for _, item := range resp.Output {
		if item.Type != "function_call" {
			continue
		}
		call := item.AsFunctionCall()
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: call.CallID, Name: call.Name, Arguments: rawArguments(call.Arguments)})
	}
	if len(r.ToolCalls) > 0 && r.StopReason == "completed" {
		r.StopReason = "tool_calls"
	}
	return r, nil
}
