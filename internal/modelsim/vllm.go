package modelsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// VLLMOptions say how the server differs from OpenAI the way vLLM's
// OpenAI-compatible server (vllm serve) does.
type VLLMOptions struct {
	// NoToolParser is a server started without --enable-auto-tool-choice
	// and --tool-call-parser: a request offering tools with tool_choice
	// "auto" (vLLM's default when tools are given) is refused with 400.
	NoToolParser bool
	// Models are the names the server serves, listed by GET /v1/models;
	// a request for another one is vLLM's 404. Empty accepts any.
	Models []string
	// PromptTokensDetails is vllm serve --enable-prompt-tokens-details:
	// only then does the usage carry prompt_tokens_details.cached_tokens
	// (vLLM's prefix cache still works without it, unreported).
	PromptTokensDetails bool
}

// VLLM makes /v1/chat/completions behave as vLLM's does where it differs
// from OpenAI: errors in vLLM's body ({"object":"error","message",
// "type","param","code"}), the "auto" tool choice refused without a tool
// parser, unknown models refused, and the arguments of assistant tool
// calls in the history parsed as JSON (vLLM calls json.loads on them to
// render the chat template; a string that is not JSON fails the request
// with the decoder's message).
func (s *Server) VLLM(o VLLMOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vllm = &o
}

// vllmError is vLLM's ErrorResponse, which has no {"error":{…}} envelope.
type vllmError struct {
	status  int
	typ     string
	message string
}

func (e vllmError) write(w http.ResponseWriter) {
	writeJSON(w, e.status, map[string]any{
		"object": "error", "message": e.message, "type": e.typ, "param": nil, "code": e.status,
	})
}

// vllmRefusal is the refusal vLLM gives a decoded Chat request, or nil.
func vllmRefusal(o *VLLMOptions, raw []byte, req Request) *vllmError {
	var in struct {
		ToolChoice json.RawMessage `json:"tool_choice"`
		Tools      []json.RawMessage
		Messages   []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				Function struct {
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return &vllmError{http.StatusBadRequest, "BadRequestError", err.Error()}
	}
	if len(o.Models) > 0 && !contains(o.Models, req.Model) {
		return &vllmError{http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model)}
	}
	choice := "none"
	if len(in.Tools) > 0 {
		choice = "auto"
	}
	if len(in.ToolChoice) > 0 {
		var s string
		if json.Unmarshal(in.ToolChoice, &s) == nil {
			choice = s
		} else {
			choice = "named"
		}
	}
	if o.NoToolParser && choice == "auto" {
		return &vllmError{http.StatusBadRequest, "BadRequestError",
			`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`}
	}
	for _, m := range in.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, c := range m.ToolCalls {
			var s string
			if json.Unmarshal(c.Function.Arguments, &s) != nil || s == "" {
				continue // an object, or empty (vLLM makes that {})
			}
			if msg := pyJSONError(s); msg != "" {
				// serving_chat.py: create_error_response(f"{e} {e.__cause__}")
				return &vllmError{http.StatusBadRequest, "BadRequestError", msg + " None"}
			}
		}
	}
	return nil
}

// pyJSONError is what Python's json.loads says of s, or "" when s is
// JSON. The wording follows CPython's decoder for the common cases.
func pyJSONError(s string) string {
	var v any
	err := json.Unmarshal([]byte(s), &v)
	if err == nil {
		return ""
	}
	off := 0
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
		if off > 0 {
			off--
		}
	}
	if strings.Contains(err.Error(), "unexpected end of JSON input") {
		off = len(s)
	}
	line, col := 1, 1
	for _, r := range s[:min(off, len(s))] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	what := "Expecting value"
	if off >= len(s) && len(strings.TrimSpace(s)) > 0 {
		what = "Unterminated string starting at"
		if strings.Count(s, `"`)%2 == 0 {
			what = "Expecting ',' delimiter"
		}
	}
	return fmt.Sprintf("%s: line %d column %d (char %d)", what, line, col, off)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// handleModels answers GET /v1/models as vLLM does, with the names
// VLLMOptions.Models gives; without them the route is unknown (404).
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o := s.vllm
	s.mu.Unlock()
	if o == nil || len(o.Models) == 0 || r.Method != http.MethodGet {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
		return
	}
	var data []any
	for _, m := range o.Models {
		data = append(data, map[string]any{"id": m, "object": "model", "created": time.Now().Unix(),
			"owned_by": "vllm", "root": m, "parent": nil, "max_model_len": 32768})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
