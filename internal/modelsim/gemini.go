package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// APIGemini is the Gemini API (generativelanguage.googleapis.com):
// POST /v1beta/models/<model>:generateContent and
// :streamGenerateContent?alt=sse, the key in x-goog-api-key.
const APIGemini = "gemini"

// geminiPrefix is where the Gemini API's model methods live; clients add
// it to the server root themselves.
const geminiPrefix = "/v1beta/models/"

// Root is the server's root URL, the base URL Gemini clients take
// (GOOGLE_GEMINI_BASE_URL): they add /v1beta/models/... themselves.
func (s *Server) Root() string { return s.srv.URL }

// geminiAPI is the Gemini API. The model and whether the answer streams
// are in the URL, not the body, so decodeURL completes what decode reads.
type geminiAPI struct{}

type geminiPart struct {
	Text         string          `json:"text,omitempty"`
	Thought      bool            `json:"thought,omitempty"`
	FunctionCall *geminiFuncCall `json:"functionCall,omitempty"`
	FunctionResp *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiFuncCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

func (geminiAPI) decode(raw []byte, req *Request) error {
	var in geminiRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("Invalid JSON payload received. %w", err)
	}
	if len(in.Contents) == 0 {
		return fmt.Errorf("* GenerateContentRequest.contents: contents is not specified")
	}
	if in.SystemInstruction != nil {
		req.System = geminiText(in.SystemInstruction.Parts)
	}
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	req.MaxTokens = in.GenerationConfig.MaxOutputTokens
	for i, c := range in.Contents {
		// The API names only these two roles; a function's answer is a
		// functionResponse part of a user turn.
		if c.Role != "user" && c.Role != "model" {
			return fmt.Errorf("Please use a valid role: user, model. (contents[%d].role %q)", i, c.Role)
		}
		if len(c.Parts) == 0 {
			return fmt.Errorf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		msg := Message{Role: "user"}
		if c.Role == "model" {
			msg.Role = "assistant"
		}
		for j, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				if c.Role != "model" {
					return fmt.Errorf("contents[%d].parts[%d]: functionCall belongs to a model turn", i, j)
				}
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{Name: p.FunctionCall.Name, Arguments: string(p.FunctionCall.Args)})
			case p.FunctionResp != nil:
				if p.FunctionResp.Name == "" {
					return fmt.Errorf("* GenerateContentRequest.contents[%d].parts[%d].function_response.name: Name cannot be empty.", i, j)
				}
				text, isErr := geminiResponseText(p.FunctionResp.Response)
				id := p.FunctionResp.ID
				if id == "" {
					id = p.FunctionResp.Name
				}
				req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: id, Text: text, IsError: isErr})
			case !p.Thought:
				msg.Text = joinSystem(msg.Text, p.Text)
			}
		}
		if msg.Text != "" || len(msg.ToolCalls) > 0 {
			req.Messages = append(req.Messages, msg)
		}
	}
	return nil
}

// geminiResponseText is a functionResponse.response as text: clients put
// the tool's output under "output" and a failure under "error".
func geminiResponseText(raw json.RawMessage) (string, bool) {
	var r map[string]json.RawMessage
	if json.Unmarshal(raw, &r) != nil {
		return string(raw), false
	}
	for _, k := range []string{"error", "output", "content"} {
		if v, ok := r[k]; ok {
			var s string
			if json.Unmarshal(v, &s) == nil {
				return s, k == "error"
			}
			return string(v), k == "error"
		}
	}
	return string(raw), false
}

func geminiText(parts []geminiPart) string {
	var texts []string
	for _, p := range parts {
		if p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// decodeURL reads "<model>:<method>" from the path: only the two
// generating methods reach a script.
func (geminiAPI) decodeURL(r *http.Request, req *Request) error {
	model, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, geminiPrefix), ":")
	if !ok || model == "" {
		return fmt.Errorf("modelsim: %s is not a Gemini model method", r.URL.Path)
	}
	switch method {
	case "generateContent":
	case "streamGenerateContent":
		req.Stream = true
	default:
		return fmt.Errorf("modelsim: Gemini method %q is not served", method)
	}
	req.Model = model
	return nil
}

func (geminiAPI) authorized(h http.Header, key string) (bool, string) {
	token := h.Get("x-goog-api-key")
	return token == key, token
}

func (geminiAPI) writeError(w http.ResponseWriter, e apiError) { e.writeGemini(w) }

// writeAnswer answers as generativelanguage.googleapis.com does: one
// GenerateContentResponse, or with alt=sse a "data:" event per chunk,
// the last carrying finishReason and usageMetadata. The API gives calls
// no ids: the client numbers them.
func (geminiAPI) writeAnswer(w http.ResponseWriter, req Request, a answer) {
	usage := map[string]any{"promptTokenCount": a.usage.prompt(), "candidatesTokenCount": a.usage.Output,
		"totalTokenCount": a.usage.prompt() + a.usage.Output}
	if a.usage.CacheRead > 0 {
		// Implicit caching: part of promptTokenCount, reported apart.
		usage["cachedContentTokenCount"] = a.usage.CacheRead
	}
	responseID := fmt.Sprintf("ms%03dGeminiResponse", a.seq)
	chunk := func(parts []any, final bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": a.model, "responseId": responseID}
		if final {
			cand["finishReason"] = "STOP"
			out["usageMetadata"] = usage
		}
		return out
	}
	var calls []any
	for _, c := range a.toolCalls {
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": toolInput(c.Arguments)}})
	}
	if !req.Stream {
		var parts []any
		if a.text != "" {
			parts = append(parts, map[string]any{"text": a.text})
		}
		writeJSON(w, http.StatusOK, chunk(append(parts, calls...), true))
		return
	}
	startSSE(w)
	var pieces []string
	if a.text != "" {
		pieces = chunks(a.text)
	}
	for i, piece := range pieces {
		last := i == len(pieces)-1 && len(calls) == 0
		geminiSSE(w, chunk([]any{map[string]any{"text": piece}}, last))
	}
	if len(calls) > 0 {
		geminiSSE(w, chunk(calls, true))
	}
	if len(pieces) == 0 && len(calls) == 0 {
		geminiSSE(w, chunk([]any{map[string]any{"text": ""}}, true))
	}
}

// geminiSSE writes one event the way Google's front end does: CRLF line
// ends, no event names, no end marker.
func geminiSSE(w http.ResponseWriter, data any) {
	body, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", body)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// handleGemini serves /v1beta/models/: :countTokens is answered from the
// request's size (it is no model turn, so it uses up no step); the
// generating methods go through the script.
func (s *Server) handleGemini() http.HandlerFunc {
	generate := s.handle(APIGemini)
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ":countTokens") {
			s.countTokens(w, r)
			return
		}
		generate(w, r)
	}
}

func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Contents               []geminiContent `json:"contents"`
		GenerateContentRequest *geminiRequest  `json:"generateContentRequest"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		geminiErrorFor(http.StatusBadRequest, "", "Invalid JSON payload received. "+err.Error()).writeGemini(w)
		return
	}
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key != "" {
		if ok, token := (geminiAPI{}).authorized(r.Header, key); !ok {
			geminiAuthError(token).writeGemini(w)
			return
		}
	}
	contents := in.Contents
	if in.GenerateContentRequest != nil {
		contents = in.GenerateContentRequest.Contents
	}
	chars := 0
	for _, c := range contents {
		for _, p := range c.Parts {
			chars += len(p.Text)
			if p.FunctionCall != nil {
				chars += len(p.FunctionCall.Name) + len(p.FunctionCall.Args)
			}
			if p.FunctionResp != nil {
				chars += len(p.FunctionResp.Response)
			}
		}
	}
	// About four characters a token, as Google documents for its models.
	writeJSON(w, http.StatusOK, map[string]any{"totalTokens": (chars + 3) / 4})
}

// geminiErrorFor follows the google.rpc.Status bodies the Gemini API
// returns: {"error":{"code","message","status","details"}}.
func geminiErrorFor(status int, errorType, message string) apiError {
	if status < 300 {
		status = statusOf(errorType)
	}
	var e apiError
	switch {
	case errorType == "context_length_exceeded" || errorType == "prompt_too_long":
		e = apiError{status: http.StatusBadRequest, typ: "INVALID_ARGUMENT",
			message: "The input token count (1050153) exceeds the maximum number of tokens allowed (1048576)."}
	case errorType == "invalid_api_key":
		// Google refuses a wrong key with 400, not 401.
		e = geminiAuthError("wrong")
	case status == http.StatusBadRequest:
		e = apiError{typ: "INVALID_ARGUMENT", message: "Request contains an invalid argument."}
	case status == http.StatusUnauthorized:
		e = apiError{typ: "UNAUTHENTICATED",
			message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."}
	case status == http.StatusForbidden:
		e = apiError{typ: "PERMISSION_DENIED", message: "The caller does not have permission"}
	case status == http.StatusNotFound:
		e = apiError{typ: "NOT_FOUND",
			message: "models/modelsim is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."}
	case status == http.StatusTooManyRequests:
		e = apiError{typ: "RESOURCE_EXHAUSTED", retryAfter: "2",
			message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."}
	case status == http.StatusServiceUnavailable || status == 529:
		e = apiError{typ: "UNAVAILABLE", message: "The model is overloaded. Please try again later."}
	case status >= 500:
		e = apiError{typ: "INTERNAL", message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"}
	default:
		e = apiError{typ: "FAILED_PRECONDITION", message: "modelsim refused the request (" + http.StatusText(status) + ")."}
	}
	if e.status == 0 {
		e.status = status
	}
	if message != "" {
		e.message = message
	}
	return e
}

// geminiAuthError is Google's answer to a missing key (403, unregistered
// caller) or a wrong one (400 INVALID_ARGUMENT, reason API_KEY_INVALID).
func geminiAuthError(token string) apiError {
	if token == "" {
		return apiError{status: http.StatusForbidden, typ: "PERMISSION_DENIED",
			message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}
	}
	return apiError{status: http.StatusBadRequest, typ: "INVALID_ARGUMENT", code: "API_KEY_INVALID",
		message: "API key not valid. Please pass a valid API key."}
}

// writeGemini renders e as a google.rpc.Status; code, when set, is the
// ErrorInfo reason in details.
func (e apiError) writeGemini(w http.ResponseWriter) {
	if e.retryAfter != "" {
		w.Header().Set("retry-after", e.retryAfter)
	}
	body := map[string]any{"code": e.status, "message": e.message, "status": e.typ}
	if e.code != "" {
		body["details"] = []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": e.code,
				"domain": "googleapis.com", "metadata": map[string]any{"service": "generativelanguage.googleapis.com"}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": e.message},
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.status)
	b, _ := json.Marshal(map[string]any{"error": body})
	_, _ = w.Write(b)
}
