package modelsim

import (
	"encoding/json"
	"strings"
	"testing"
)

const geminiBody = `{"contents":[
  {"role":"user","parts":[{"text":"review"}]},
  {"role":"model","parts":[{"text":"thinking","thought":true},{"functionCall":{"name":"mcp_aicr_aicr_fetch_more_context","args":{"path":"a.c"}}}]},
  {"role":"user","parts":[{"functionResponse":{"id":"call-1","name":"mcp_aicr_aicr_fetch_more_context","response":{"output":"ctx"}}}]}],
 "systemInstruction":{"role":"user","parts":[{"text":"be strict"}]},
 "tools":[{"functionDeclarations":[{"name":"mcp_aicr_aicr_report_problem","parametersJsonSchema":{"type":"object"}}]}],
 "generationConfig":{"maxOutputTokens":99,"temperature":1}}`

// geminiChunk is one GenerateContentResponse as the SDKs read it.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount, CandidatesTokenCount, TotalTokenCount int
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
}

func TestGeminiGenerateContent(t *testing.T) {
	s := Start(t, Step{Text: "looks fine", ToolCalls: []ToolCall{call}, Usage: Usage{Input: 12, Output: 5}})
	status, hdr, out := post(t, s.Root()+"/v1beta/models/gemini-ms:generateContent", geminiBody, nil)
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s", status, out)
	}
	var c geminiChunk
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	parts := c.Candidates[0].Content.Parts
	if c.Candidates[0].Content.Role != "model" || len(parts) != 2 || parts[0].Text != "looks fine" ||
		parts[1].FunctionCall == nil || parts[1].FunctionCall.Name != call.Name || parts[1].FunctionCall.Args["line"] != 3.0 ||
		c.Candidates[0].FinishReason != "STOP" || c.ModelVersion != "gemini-ms" {
		t.Errorf("answer %s", out)
	}
	if u := c.UsageMetadata; u == nil || u.PromptTokenCount != 12 || u.CandidatesTokenCount != 5 || u.TotalTokenCount != 17 {
		t.Errorf("usage %s", out)
	}
	r := s.Requests()[0]
	if r.API != APIGemini || r.Model != "gemini-ms" || r.Stream || r.System != "be strict" || r.MaxTokens != 99 ||
		len(r.Tools) != 1 || r.Offered("report_problem") != "mcp_aicr_aicr_report_problem" {
		t.Errorf("request %+v", r)
	}
	if len(r.Messages) != 3 || r.Messages[0].Text != "review" || r.Messages[1].Role != "assistant" || r.Messages[1].Text != "" ||
		r.Messages[1].ToolCalls[0].Arguments != `{"path":"a.c"}` || r.Messages[2].Role != "tool" ||
		r.Messages[2].ToolCallID != "call-1" || r.Messages[2].Text != "ctx" || r.ToolResults() != 1 {
		t.Errorf("messages %+v", r.Messages)
	}
}

func TestGeminiStreamGenerateContent(t *testing.T) {
	s := Start(t, Step{Text: "two findings", Usage: Usage{Input: 7, Output: 3}}, Step{ToolCalls: []ToolCall{call, call}})
	url := s.Root() + "/v1beta/models/gemini-ms:streamGenerateContent?alt=sse"
	status, hdr, out := post(t, url, geminiBody, nil)
	if status != 200 || hdr.Get("Content-Type") != "text/event-stream" || !strings.Contains(out, "\r\n\r\n") {
		t.Fatalf("%d %q", status, out)
	}
	var text string
	evs := events(t, strings.ReplaceAll(out, "\r", ""))
	for i, e := range evs {
		var c geminiChunk
		if err := json.Unmarshal([]byte(e[1]), &c); err != nil || e[0] != "" {
			t.Fatalf("event %d: %v %q", i, err, e)
		}
		text += c.Candidates[0].Content.Parts[0].Text
		last := i == len(evs)-1
		if (c.UsageMetadata != nil) != last || (c.Candidates[0].FinishReason == "STOP") != last {
			t.Errorf("event %d of %d: usage/finishReason only on the last: %s", i, len(evs), e[1])
		}
	}
	if len(evs) < 2 || text != "two findings" {
		t.Errorf("%d events joining to %q", len(evs), text)
	}
	if !s.Requests()[0].Stream {
		t.Error("streamGenerateContent not recorded as streaming")
	}

	_, _, out = post(t, url, geminiBody, nil)
	evs = events(t, strings.ReplaceAll(out, "\r", ""))
	var c geminiChunk
	if len(evs) != 1 || json.Unmarshal([]byte(evs[0][1]), &c) != nil || len(c.Candidates[0].Content.Parts) != 2 ||
		c.Candidates[0].Content.Parts[1].FunctionCall == nil {
		t.Errorf("two calls: %s", out)
	}
}

func TestGeminiErrorBodies(t *testing.T) {
	cases := []struct {
		step        Step
		status      int
		rpcStatus   string
		message     string
		retryAfter  bool
		withDetails bool
	}{
		{Step{ErrorType: "context_length_exceeded"}, 400, "INVALID_ARGUMENT", "The input token count (", false, false},
		{Step{Status: 429}, 429, "RESOURCE_EXHAUSTED", "quota", true, false},
		{Step{Status: 503}, 503, "UNAVAILABLE", "overloaded", false, false},
		{Step{Status: 500}, 500, "INTERNAL", "internal error", false, false},
		{Step{Status: 404}, 404, "NOT_FOUND", "is not found for API version v1beta", false, false},
		{Step{ErrorType: "invalid_api_key"}, 400, "INVALID_ARGUMENT", "API key not valid", false, true},
	}
	for _, c := range cases {
		s := Start(t, c.step)
		status, hdr, out := post(t, s.Root()+"/v1beta/models/m:generateContent", geminiBody, nil)
		var e struct {
			Error struct {
				Code    int
				Message string
				Status  string
				Details []map[string]any
			}
		}
		if status != c.status || (hdr.Get("retry-after") != "") != c.retryAfter || json.Unmarshal([]byte(out), &e) != nil ||
			e.Error.Code != c.status || e.Error.Status != c.rpcStatus || !strings.Contains(e.Error.Message, c.message) ||
			(len(e.Error.Details) > 0) != c.withDetails {
			t.Errorf("%+v: %d %s", c.step, status, out)
		}
	}
}

func TestGeminiAuthAndCountTokens(t *testing.T) {
	const key = "AIzaSy-modelsim-0123456789"
	s := Start(t, Step{Text: "ok"})
	s.RequireKey(key)
	url := s.Root() + "/v1beta/models/m:generateContent"
	status, _, out := post(t, url, geminiBody, map[string]string{"x-goog-api-key": "AIzaSy-wrong"})
	if status != 400 || !strings.Contains(out, `"API_KEY_INVALID"`) || !strings.Contains(out, `"INVALID_ARGUMENT"`) || strings.Contains(out, "AIzaSy") {
		t.Fatalf("wrong key: %d %s", status, out)
	}
	status, _, out = post(t, url, geminiBody, nil)
	if status != 403 || !strings.Contains(out, `"PERMISSION_DENIED"`) || !strings.Contains(out, "unregistered callers") {
		t.Fatalf("no key: %d %s", status, out)
	}
	// countTokens is no model turn: it uses up no step.
	status, _, out = post(t, s.Root()+"/v1beta/models/m:countTokens", `{"contents":[{"role":"user","parts":[{"text":"0123456789abcdef"}]}]}`,
		map[string]string{"x-goog-api-key": key})
	if status != 200 || out != `{"totalTokens":4}` {
		t.Fatalf("countTokens: %d %s", status, out)
	}
	// The refusals used up no step either.
	if status, _, out := post(t, url, geminiBody, map[string]string{"x-goog-api-key": key}); status != 200 {
		t.Fatalf("right key: %d %s", status, out)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
}

func TestGeminiRefusesWhatTheAPIRefuses(t *testing.T) {
	for _, c := range []struct{ path, body string }{
		{"/v1beta/models/m:generateContent", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`},
		{"/v1beta/models/m:generateContent", `{"contents":[]}`},
		{"/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"functionResponse":{"response":{}}}]}]}`},
		{"/v1beta/models/m:embedContent", geminiBody},
	} {
		s := Start(t)
		status, _, out := post(t, s.Root()+c.path, c.body, nil)
		if status < 400 || !strings.Contains(out, `"status"`) || s.Err() == nil {
			t.Errorf("%s %s: %d %s (Err %v)", c.path, c.body, status, out, s.Err())
		}
	}
}
