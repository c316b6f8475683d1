package modelsim

import (
	"net/http"
	"strings"
)

// apiError is one refusal, rendered by each API in its own body shape:
// OpenAI {"error":{"message","type","param","code"}}, Anthropic
// {"type":"error","error":{"type","message"},"request_id"}.
type apiError struct {
	status     int
	typ        string // OpenAI error.type / Anthropic error.type
	code       string // OpenAI error.code; empty renders null
	param      string // OpenAI error.param; empty renders null
	message    string
	retryAfter string // seconds, for 429
}

// statusOf is the status the real APIs use for an error type the script
// names without a status.
func statusOf(errorType string) int {
	switch errorType {
	case "context_length_exceeded", "prompt_too_long", "invalid_request_error":
		return http.StatusBadRequest
	case "model_not_found", "not_found_error":
		return http.StatusNotFound
	case "invalid_api_key", "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota":
		return http.StatusTooManyRequests
	case "overloaded_error":
		return 529
	default:
		return http.StatusInternalServerError
	}
}

// errorFor builds the refusal a real server of that API gives for status
// (or the status implied by errorType); message, when set, replaces the
// canned text.
func errorFor(apiName string, status int, errorType, message string) apiError {
	if apiName == APIGemini {
		return geminiErrorFor(status, errorType, message)
	}
	if status < 300 {
		status = statusOf(errorType)
	}
	var e apiError
	if apiName == APIAnthropic {
		e = anthropicError(status, errorType)
	} else {
		e = openaiError(apiName, status, errorType)
	}
	e.status = status
	if message != "" {
		e.message = message
	}
	return e
}

// openaiError follows the bodies api.openai.com returns for each class.
func openaiError(apiName string, status int, errorType string) apiError {
	inputParam := "messages"
	if apiName == APIOpenAIResponses {
		inputParam = "input"
	}
	switch {
	case errorType == "context_length_exceeded" || errorType == "prompt_too_long":
		return apiError{typ: "invalid_request_error", code: "context_length_exceeded", param: inputParam,
			message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. Please reduce the length of the messages."}
	case status == http.StatusUnauthorized:
		return apiError{typ: "invalid_request_error", code: "invalid_api_key",
			message: "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."}
	case status == http.StatusForbidden:
		return apiError{typ: "invalid_request_error", code: "model_not_found",
			message: "Project does not have access to model `gpt-modelsim`."}
	case status == http.StatusNotFound:
		return apiError{typ: "invalid_request_error", code: "model_not_found",
			message: "The model `gpt-modelsim` does not exist or you do not have access to it."}
	case status == http.StatusTooManyRequests && errorType == "insufficient_quota":
		return apiError{typ: "insufficient_quota", code: "insufficient_quota",
			message: "You exceeded your current quota, please check your plan and billing details."}
	case status == http.StatusTooManyRequests:
		return apiError{typ: "tokens", code: "rate_limit_exceeded", retryAfter: "2",
			message: "Rate limit reached for gpt-modelsim in organization org-modelsim on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 2s."}
	case status == http.StatusServiceUnavailable:
		return apiError{typ: "server_error",
			message: "The engine is currently overloaded, please try again later."}
	case status >= 500:
		return apiError{typ: "server_error",
			message: "The server had an error while processing your request. Sorry about that!"}
	default:
		return apiError{typ: "invalid_request_error",
			message: "Invalid request: modelsim refused it (" + http.StatusText(status) + ")."}
	}
}

// anthropicError follows the bodies api.anthropic.com returns per status.
func anthropicError(status int, errorType string) apiError {
	switch {
	case errorType == "context_length_exceeded" || errorType == "prompt_too_long":
		return apiError{typ: "invalid_request_error", message: "prompt is too long: 215000 tokens > 200000 maximum"}
	case status == http.StatusUnauthorized:
		return apiError{typ: "authentication_error", message: "invalid x-api-key"}
	case status == http.StatusForbidden:
		return apiError{typ: "permission_error", message: "Your API key does not have permission to use the specified resource."}
	case status == http.StatusNotFound:
		return apiError{typ: "not_found_error", message: "model: claude-modelsim"}
	case status == http.StatusRequestEntityTooLarge:
		return apiError{typ: "request_too_large", message: "Request exceeds the maximum allowed number of bytes."}
	case status == http.StatusTooManyRequests:
		return apiError{typ: "rate_limit_error", retryAfter: "2",
			message: "Number of request tokens has exceeded your per-minute rate limit. Please try again later."}
	case status == 529:
		return apiError{typ: "overloaded_error", message: "Overloaded"}
	case status >= 500:
		return apiError{typ: "api_error", message: "Internal server error"}
	default:
		return apiError{typ: "invalid_request_error", message: "modelsim refused the request (" + http.StatusText(status) + ")"}
	}
}

// authError is the 401 for a missing or wrong key. OpenAI echoes a masked
// form of a wrong key, as the real API does, so clients must not pass the
// server's message through unexamined.
func authError(apiName, token string) apiError {
	if apiName == APIGemini {
		return geminiAuthError(token)
	}
	e := errorFor(apiName, http.StatusUnauthorized, "", "")
	if apiName == APIAnthropic {
		if token == "" {
			e.message = "x-api-key header is required"
		}
		return e
	}
	if token == "" {
		e.code = ""
		e.message = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
		return e
	}
	e.message = "Incorrect API key provided: " + mask(token) + ". You can find your API key at https://platform.openai.com/account/api-keys."
	return e
}

func mask(token string) string {
	if len(token) < 12 {
		return strings.Repeat("*", len(token))
	}
	return token[:3] + strings.Repeat("*", len(token)-7) + token[len(token)-4:]
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (e apiError) writeOpenAI(w http.ResponseWriter) {
	if e.retryAfter != "" {
		w.Header().Set("retry-after", e.retryAfter)
	}
	w.Header().Set("x-request-id", "req_modelsim")
	writeJSON(w, e.status, map[string]any{"error": map[string]any{
		"message": e.message, "type": e.typ, "param": nullable(e.param), "code": nullable(e.code),
	}})
}

func (e apiError) writeAnthropic(w http.ResponseWriter) {
	if e.retryAfter != "" {
		w.Header().Set("retry-after", e.retryAfter)
	}
	w.Header().Set("request-id", "req_011modelsim")
	writeJSON(w, e.status, map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": e.typ, "message": e.message},
		"request_id": "req_011modelsim",
	})
}
