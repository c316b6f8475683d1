package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/aicr-dev/aicr/secret"
)

// ModelOptions say which model server to talk to and how.
type ModelOptions struct {
	// API is one of APIOpenAIChat, APIOpenAIResponses, APIAnthropic.
	API string
	// BaseURL is the API root, e.g. http://gpu-box:8000/v1; empty means
	// the provider's public endpoint. For Anthropic a trailing /v1 is
	// accepted too, so one base_url style works for every API.
	BaseURL string
	// Model is the model name the server knows.
	Model string
	// APIKey travels only in the auth header (Authorization: Bearer for
	// OpenAI, x-api-key for Anthropic); empty sends none, for on-prem
	// servers without auth.
	APIKey string
	// Headers are extra request headers (a gateway's tenant header).
	Headers map[string]string
	// Timeout bounds one request (one Turn); zero leaves it to ctx.
	Timeout time.Duration
	// HTTPClient replaces the SDK's default transport (proxies, custom CAs).
	HTTPClient *http.Client
	// Stream asks for the answer as Server-Sent Events and assembles it;
	// the result is the same Response. Useful behind proxies that cut
	// long idle non-streaming requests.
	Stream bool
	// PromptCache marks Anthropic cache breakpoints ([agent.llm]
	// prompt_cache); the OpenAI APIs cache without being asked.
	PromptCache bool
	// Quirks remembers what the server refused (parallel_tool_calls) for
	// every client built with the same pointer, so the passes of one
	// agent ask only once; nil keeps it per client.
	Quirks *Quirks
}

// Quirks are the request fields a server turned out to refuse. Safe for
// concurrent use.
type Quirks struct {
	mu         sync.Mutex
	noParallel bool
}

func (q *Quirks) parallelOff() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.noParallel
}

func (q *Quirks) setParallelOff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.noParallel = true
}

// refusesParallel tells a 400 over parallel_tool_calls (a gateway or an
// older Azure API version: "Unrecognized request argument supplied:
// parallel_tool_calls"; llama.cpp-based servers that do not know it)
// from any other refusal.
func refusesParallel(err error) bool {
	return errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrToolsOff) &&
		strings.Contains(strings.ToLower(err.Error()), "parallel_tool_calls")
}

// NewModel returns the client for o.API, built on the official SDK of
// that API with its own retries off: one Turn is one request, and the
// daemon retries the run.
//
// The SDKs' environment defaults (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// *_BASE_URL, profiles) are never consulted: the key and the server come
// from aicr's configuration only, so an operator's shell variables cannot
// send a cloud key to an on-prem server or the diff to a cloud one.
func NewModel(o ModelOptions) (Model, error) {
	if strings.TrimSpace(o.Model) == "" {
		return nil, errors.New("llm: no model name; set [agent.llm] model to a model the server serves")
	}
	if o.Quirks == nil {
		o.Quirks = &Quirks{}
	}
	if o.BaseURL != "" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("llm: base_url %q is not an http(s) URL; set [agent.llm] base_url to the API root, e.g. http://gpu-box:8000/v1", o.BaseURL)
		}
	}
	for name, value := range o.Headers {
		if name == "" || strings.ContainsAny(name, " :\r\n") || strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("llm: extra header %q is not a valid HTTP header; fix the headers file named by [agent.llm]", name)
		}
	}
	switch o.API {
	case APIOpenAIChat:
		return newOpenAIChat(o), nil
	case APIOpenAIResponses:
		return newOpenAIResponses(o), nil
	case APIAnthropic:
		return newAnthropic(o), nil
	default:
		return nil, fmt.Errorf("llm: unknown api %q; set [agent.llm] api to %s, %s or %s",
			o.API, APIOpenAIChat, APIOpenAIResponses, APIAnthropic)
	}
}

// MaxResponseBytes bounds what aicr reads of one model answer, streamed
// or not, error bodies included. An answer within max_output_tokens is a
// few hundred KiB even as Server-Sent Events; a server that sends far more
// is broken, and reading it whole once took gigabytes of memory.
const MaxResponseBytes = 32 << 20

// ErrResponseTooLarge: the answer passed MaxResponseBytes.
var ErrResponseTooLarge = fmt.Errorf("the model server's answer is larger than %d MiB, aicr's limit on one response", MaxResponseBytes>>20)

// limitResponses is SDK middleware (the same func type for both SDKs)
// that caps every response body at limit bytes.
func limitResponses(limit int64) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		resp, err := next(req)
		if resp != nil && resp.Body != nil {
			resp.Body = &limitedBody{rc: resp.Body, left: limit}
		}
		return resp, err
	}
}

// limitedBody fails with ErrResponseTooLarge instead of ending quietly
// (io.LimitReader's EOF would read as a truncated answer).
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// apiFailure is what a provider's error says, independent of the SDK.
type apiFailure struct {
	status     int
	code       string // OpenAI error.code (may be empty)
	typ        string // error.type of either API
	message    string
	retryAfter string
}

// classify turns an SDK or transport error into one of the sentinels,
// wrapped with the server's own message. Nothing from the request is
// quoted, and the key is scrubbed from whatever the server echoed.
func classify(ctx context.Context, api string, o ModelOptions, f *apiFailure, err error) error {
	scrub := func(s string) string { return secret.Scrub(s, o.APIKey) }
	if f != nil {
		msg := scrub(strings.TrimSpace(f.message))
		if msg == "" {
			msg = http.StatusText(f.status)
		}
		where := fmt.Sprintf("%s %d", api, f.status)
		if f.typ != "" {
			where += " " + f.typ
		}
		if f.code != "" && f.code != f.typ {
			where += "/" + f.code
		}
		switch {
		case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
			// The remedy, naming the key's source, is added once by the
			// agent, which knows where the key came from.
			return fmt.Errorf("%w (%s: %s)", ErrAuth, where, msg)
		case isToolsOff(f):
			return fmt.Errorf("%w: %w (%s: %s)", ErrBadRequest, ErrToolsOff, where, msg)
		case f.status == http.StatusNotFound && isUnknownModel(f):
			return fmt.Errorf("%w: %w (%s: %s)", ErrBadRequest, ErrUnknownModel, where, msg)
		case isContextOverflow(f):
			return fmt.Errorf("%w (%s: %s)", ErrContextOverflow, where, msg)
		case f.status == http.StatusTooManyRequests || f.status == http.StatusRequestTimeout || f.status >= 500:
			if f.retryAfter != "" {
				msg += " (retry after " + f.retryAfter + "s)"
			}
			return fmt.Errorf("%w (%s: %s)", ErrTransient, where, msg)
		default:
			return fmt.Errorf("%w (%s: %s)", ErrBadRequest, where, msg)
		}
	}
	if errors.Is(err, ErrResponseTooLarge) {
		// Asking again gets the same flood; the server needs looking at.
		return fmt.Errorf("%w (%s: %w; the server sent far more than max_output_tokens allows: check the model server at base_url)",
			ErrBadRequest, api, ErrResponseTooLarge)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("%w (%s: no answer before the deadline: %w)", ErrTransient, api, ctxErr)
		}
		return fmt.Errorf("%s: %w", api, ctxErr)
	}
	var netErr net.Error
	var opErr *net.OpError
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &opErr) || errors.As(err, &urlErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w (%s: %s; nothing listens there: check [agent.llm] base_url and that the model server runs)",
				ErrTransient, api, scrub(err.Error()))
		}
		return fmt.Errorf("%w (%s: %s)", ErrTransient, api, scrub(err.Error()))
	}
	return fmt.Errorf("%w (%s: the answer could not be read: %s)", ErrBadRequest, api, scrub(err.Error()))
}

// isToolsOff recognises a server that cannot take tools, in the words of
// vLLM ("\"auto\" tool choice requires --enable-auto-tool-choice and
// --tool-call-parser to be set"), Ollama ("… does not support tools") and
// llama.cpp ("tools param requires --jinja flag", a 500).
func isToolsOff(f *apiFailure) bool {
	m := strings.ToLower(f.message)
	for _, s := range []string{"enable-auto-tool-choice", "tool-call-parser", "does not support tools", "requires --jinja"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// isUnknownModel tells a 404 for the model (OpenAI's model_not_found,
// vLLM's "The model `x` does not exist.", Ollama's "model \"x\" not
// found") from one for a wrong path.
func isUnknownModel(f *apiFailure) bool {
	m := strings.ToLower(f.message)
	return f.code == "model_not_found" || f.typ == "not_found_error" ||
		(strings.Contains(m, "model") && (strings.Contains(m, "not exist") || strings.Contains(m, "not found")))
}

// isContextOverflow recognises "prompt too long" in the forms the servers
// use: OpenAI's code, Anthropic's message, and the texts of vLLM, Ollama
// and llama.cpp, which often answer 400 without a code.
func isContextOverflow(f *apiFailure) bool {
	if f.code == "context_length_exceeded" || f.typ == "context_length_exceeded" {
		return true
	}
	if f.status != http.StatusBadRequest && f.status != http.StatusRequestEntityTooLarge && f.status != 422 {
		return false
	}
	m := strings.ToLower(f.message)
	for _, s := range []string{"prompt is too long", "maximum context length", "context length", "context window", "too many tokens", "exceeds the context", "context_length_exceeded"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// toolSchema decodes a tool's JSON schema for the SDKs, which take maps;
// a tool without a schema takes an empty object.
func toolSchema(t Tool) (map[string]any, error) {
	if len(t.Schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil {
		return nil, fmt.Errorf("llm: tool %s: schema is not a JSON object: %w", t.Name, err)
	}
	return m, nil
}

// arguments returns a call's arguments as the JSON text the OpenAI APIs
// carry; a call without arguments sends an empty object.
func arguments(c ToolCall) string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	return string(c.Arguments)
}

// bareErrorMessage reads the message of an error body that lacks the
// API's envelope: {"message": ...}, {"error": "..."}, {"detail": ...}, or
// plain text.
func bareErrorMessage(body []byte) string {
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		for _, k := range []string{"message", "error", "detail"} {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// maxListedModels bounds what ServerModels returns: enough to spot the
// right name, short enough for a message.
const maxListedModels = 50

// ServerModels asks the server which models it serves (GET
// <base_url>/models, which vLLM, Ollama, llama.cpp, LM Studio, gateways
// and OpenAI answer), for the remedy when the configured model is
// unknown. Only the OpenAI APIs are asked; the key and headers are read
// as a pass reads them.
func ServerModels(ctx context.Context, c Config, httpClient *http.Client) ([]string, error) {
	if c.API != APIOpenAIChat && c.API != APIOpenAIResponses {
		return nil, fmt.Errorf("llm: listing models is only done for %s and %s", APIOpenAIChat, APIOpenAIResponses)
	}
	key, err := c.ReadAPIKey()
	if err != nil {
		return nil, err
	}
	headers, err := c.ReadHeaders()
	if err != nil {
		return nil, err
	}
	o := ModelOptions{API: c.API, BaseURL: c.BaseURL, Model: c.Model, APIKey: key.Reveal(), Headers: headers,
		Timeout: c.Timeout, HTTPClient: httpClient}
	svc := openai.NewModelService(openAIOptions(o)...)
	pager := svc.ListAutoPaging(ctx)
	var names []string
	for pager.Next() && len(names) < maxListedModels {
		names = append(names, pager.Current().ID)
	}
	if err := pager.Err(); err != nil {
		return nil, openAIError(ctx, c.API, o, err)
	}
	return names, nil
}
