// Package llm is the direct model agent: aicr itself talks to a model
// server (an OpenAI-compatible one such as vLLM, Ollama or a gateway, or
// OpenAI's or Anthropic's API) through the official SDKs, offers the five
// aicr review tools as functions and executes every call in process with
// the review server's own code. No Node, no agent CLI, no container.
//
// This file is the seam between the provider clients (one per API, each
// turning a Request into that API's wire format through its SDK) and the
// tool loop that drives them.
package llm

import (
	"context"
	"encoding/json"
	"errors"
)

// APIs a [agent.llm] table may name.
const (
	APIOpenAIChat      = "openai-chat"
	APIOpenAIResponses = "openai-responses"
	APIAnthropic       = "anthropic"
	// APIGemini is Google's Gemini API (/v1beta/models/…:generateContent),
	// which only the gemini-cli agent speaks; base_url is the server root.
	APIGemini = "gemini"
)

// Model is one provider API. Turn makes one model round trip; the SDK's
// own retries are off (the run is retried by the daemon instead), so one
// Turn is one request.
type Model interface {
	Turn(ctx context.Context, req Request) (Response, error)
}

// Request is one round trip: the conversation so far and the tools.
type Request struct {
	System          string
	Messages        []Message
	Tools           []Tool
	MaxOutputTokens int
}

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the conversation.
type Message struct {
	Role string
	// Text is the message's text (user prompt, assistant prose).
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolResult answers one call (Role == RoleTool).
	ToolResult *ToolResult
	// Stable, for a user message, is how many leading bytes of Text stay
	// the same in every pass of the review (the change, before what the
	// pass asks); the Anthropic client ends a text block with a cache
	// breakpoint there, so a later pass reads them from the cache. Zero:
	// no such split. The OpenAI APIs send Text whole: their automatic
	// caches match any byte-identical prefix.
	Stable int
}

// Tool is one function offered to the model, under the name the
// provider allows (aicr_report_problem), with the seed's JSON schema.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// ToolCall is one function call the model made.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolResult is what a call returned: the tool's text, or the error
// envelope {code, message, remedy} with IsError set.
type ToolResult struct {
	CallID  string
	Name    string
	Content string
	IsError bool
}

// Response is the model's answer to one Turn.
type Response struct {
	// Model is the model that answered, as the server names it.
	Model     string
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
	// StopReason is the API's own (stop, tool_calls, end_turn, length...).
	StopReason string
}

// Usage counts the tokens of one Turn as the server reported them, split
// the way providers bill them. Input is the uncached prompt tokens only
// (Anthropic's input_tokens; OpenAI's prompt_tokens minus cached_tokens),
// so Input+CacheRead+CacheWrite is the whole prompt.
type Usage struct {
	Input  int
	Output int
	// CacheRead is the prompt read from the provider's cache (Anthropic
	// cache_read_input_tokens, OpenAI cached_tokens, Gemini
	// cachedContentTokenCount).
	CacheRead int
	// CacheWrite is the prompt written to the cache on this turn
	// (Anthropic cache_creation_input_tokens; other APIs report none).
	CacheWrite int
}

// Prompt is the whole prompt of the turn, cached or not.
func (u Usage) Prompt() int { return u.Input + u.CacheRead + u.CacheWrite }

// Errors a Model returns, wrapped with the server's own message, so the
// ladder and the daemon can tell them apart with errors.Is.
var (
	// ErrAuth: the key is missing, wrong or not allowed to use the model
	// (401/403). Retrying cannot help; the error names the remedy.
	ErrAuth = errors.New("model server refused the credentials")
	// ErrTransient: rate limited (429), server error (5xx), timeout or
	// connection failure. The run is retried later.
	ErrTransient = errors.New("model server unavailable")
	// ErrContextOverflow: the prompt does not fit the model's context.
	ErrContextOverflow = errors.New("prompt exceeds the model's context window")
	// ErrBadRequest: any other refusal (400/404/422), e.g. an unknown model.
	ErrBadRequest = errors.New("model server refused the request")
	// ErrEmptyAnswer: a Chat answer with "choices": [] (some gateways and
	// overloaded servers send one). Wrapped with ErrTransient; the tool
	// loop asks again a few times first.
	ErrEmptyAnswer = errors.New("the model server's answer has no choices")
	// ErrToolsOff: the server refuses tool calling (vLLM without a
	// tool-call parser, an Ollama model without tool support, llama.cpp
	// without --jinja). Wrapped with ErrBadRequest.
	ErrToolsOff = errors.New("tool calling is not enabled on the model server")
	// ErrUnknownModel: the server does not serve the configured model
	// (404). Wrapped with ErrBadRequest.
	ErrUnknownModel = errors.New("the model server does not serve that model")
)
