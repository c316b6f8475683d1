package llm

import (
	"context"
	"errors"
	"io"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openAIOptions are the request options both OpenAI APIs share. The
// services are built from these alone, not through openai.NewClient,
// which would add OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID and
// OPENAI_CUSTOM_HEADERS from the environment.
func openAIOptions(o ModelOptions) []option.RequestOption {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithMiddleware(limitResponses(MaxResponseBytes))} //nolint:bodyclose // the middleware wraps the body and hands the response on; the SDK closes it
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	} else {
		opts = append(opts, option.WithEnvironmentProduction())
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
	return opts
}

// openAIError maps an OpenAI SDK error (either API) to a sentinel.
func openAIError(ctx context.Context, api string, o ModelOptions, err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		f := &apiFailure{status: apiErr.StatusCode, code: apiErr.Code, typ: apiErr.Type, message: apiErr.Message}
		if apiErr.Response != nil {
			f.retryAfter = apiErr.Response.Header.Get("Retry-After")
		}
		if f.message == "" && apiErr.Response != nil && apiErr.Response.Body != nil {
			// Some OpenAI-compatible servers and gateways answer without
			// the {"error":{...}} envelope; their body is the message.
			body, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 4096))
			f.message = bareErrorMessage(body)
		}
		return classify(ctx, api, o, f, err)
	}
	return classify(ctx, api, o, nil, err)
}

// cachedUsage splits an OpenAI prompt count (Chat's prompt_tokens,
// Responses' input_tokens, both including the cached part) into the
// uncached input and the cache read. A server that reports more cached
// tokens than prompt tokens is believed on the prompt.
func cachedUsage(prompt, cached, output int64) Usage {
	cached = min(max(cached, 0), prompt)
	return Usage{Input: int(prompt - cached), CacheRead: int(cached), Output: int(output)}
}

// parallelTurn makes one turn on an OpenAI API, asking for parallel tool
// calls when the request offers tools: the loop runs every call of an
// answer, so one answer may hold a whole review. A server that refuses the
// field (a 400 naming it) is asked once more without it, and never again
// with it (q remembers, across passes).
func parallelTurn(q *Quirks, tools bool, ask func(parallel bool) (Response, error)) (Response, error) {
	parallel := tools && !q.parallelOff()
	resp, err := ask(parallel)
	if parallel && refusesParallel(err) {
		q.setParallelOff()
		resp, err = ask(false)
	}
	return resp, err
}
