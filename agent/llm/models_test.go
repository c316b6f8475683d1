package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/secret"
)

const testKey = "sk-aicr-test-9f8e7d6c5b4a3210"

var apis = []string{APIOpenAIChat, APIOpenAIResponses, APIAnthropic}

// each runs f once per API, streaming and not.
func each(t *testing.T, f func(t *testing.T, api string, stream bool)) {
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", api, stream), func(t *testing.T) { f(t, api, stream) })
		}
	}
}

func newModel(t *testing.T, s *modelsim.Server, api string, stream bool, tweak ...func(*ModelOptions)) Model {
	t.Helper()
	o := ModelOptions{API: api, BaseURL: s.URL, Model: "review-model", APIKey: testKey,
		Headers: map[string]string{"X-Tenant": "games"}, Stream: stream}
	for _, f := range tweak {
		f(&o)
	}
	m, err := NewModel(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var reportTool = Tool{
	Name:        "aicr_report_problem",
	Description: "Report one problem",
	Schema:      json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"},"line":{"type":"integer"}},"required":["file","line"],"additionalProperties":false}`),
}

const reportArgs = `{"file":"src/a.c","line":12}`

// assertKeyOnlyInAuthHeader fails if the key travels anywhere but the
// API's auth header.
func assertKeyOnlyInAuthHeader(t *testing.T, api string, r modelsim.Request) {
	t.Helper()
	authHeader := "Authorization"
	want := "Bearer " + testKey
	if api == APIAnthropic {
		authHeader, want = "X-Api-Key", testKey
	}
	if got := r.Header.Get(authHeader); got != want {
		t.Errorf("%s header = %q, want the key", authHeader, got)
	}
	for name, values := range r.Header {
		if http.CanonicalHeaderKey(name) == authHeader {
			continue
		}
		for _, v := range values {
			if strings.Contains(v, testKey) {
				t.Errorf("key leaked in header %s", name)
			}
		}
	}
	if strings.Contains(string(r.Raw), testKey) {
		t.Error("key leaked in the request body")
	}
}

func TestToolCallTurnThenResultsThenText(t *testing.T) {
	each(t, func(t *testing.T, api string, stream bool) {
		s := modelsim.Start(t,
			modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", Arguments: reportArgs}}, Usage: modelsim.Usage{Input: 120, Output: 30}},
			modelsim.Step{Text: "Reviewed; one problem reported.", Usage: modelsim.Usage{Input: 180, Output: 9}},
		)
		s.RequireKey(testKey)
		m := newModel(t, s, api, stream)
		ctx := context.Background()
		req := Request{System: "You review code.", Tools: []Tool{reportTool}, MaxOutputTokens: 512,
			Messages: []Message{{Role: RoleUser, Text: "Review change 42."}}}

		first, err := m.Turn(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "aicr_report_problem" || first.ToolCalls[0].ID == "" {
			t.Fatalf("tool calls = %+v", first.ToolCalls)
		}
		var args, want any
		_ = json.Unmarshal(first.ToolCalls[0].Arguments, &args)
		_ = json.Unmarshal([]byte(reportArgs), &want)
		if fmt.Sprint(args) != fmt.Sprint(want) {
			t.Errorf("arguments = %s, want %s", first.ToolCalls[0].Arguments, reportArgs)
		}
		if first.Usage != (Usage{Input: 120, Output: 30}) || first.Model != "review-model" || first.StopReason == "" {
			t.Errorf("response = %+v", first)
		}

		call := first.ToolCalls[0]
		req.Messages = append(req.Messages,
			Message{Role: RoleAssistant, ToolCalls: first.ToolCalls},
			Message{Role: RoleTool, ToolResult: &ToolResult{CallID: call.ID, Name: call.Name,
				Content: `{"code":"line_not_changed","message":"line 12 is not changed","remedy":"report a changed line"}`, IsError: true}})
		second, err := m.Turn(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if second.Text != "Reviewed; one problem reported." || len(second.ToolCalls) != 0 || second.Usage.Output != 9 {
			t.Errorf("second response = %+v", second)
		}

		reqs := s.Requests()
		if len(reqs) != 2 || s.Err() != nil {
			t.Fatalf("%d requests, err %v", len(reqs), s.Err())
		}
		for _, r := range reqs {
			if r.API != api || r.Model != "review-model" || r.Stream != stream || r.System != "You review code." ||
				r.MaxTokens != 512 || len(r.Tools) != 1 || r.Tools[0] != "aicr_report_problem" {
				t.Errorf("request = %+v", r)
			}
			if r.Header.Get("X-Tenant") != "games" {
				t.Errorf("extra header missing: %v", r.Header)
			}
			assertKeyOnlyInAuthHeader(t, api, r)
		}
		msgs := reqs[1].Messages
		if len(msgs) != 3 || msgs[0].Role != "user" || msgs[0].Text != "Review change 42." ||
			msgs[1].Role != "assistant" || len(msgs[1].ToolCalls) != 1 || msgs[1].ToolCalls[0].Name != "aicr_report_problem" ||
			msgs[2].Role != "tool" || msgs[2].ToolCallID != call.ID || !strings.Contains(msgs[2].Text, "line_not_changed") {
			t.Fatalf("second request messages = %+v", msgs)
		}
		if api == APIAnthropic && !msgs[2].IsError {
			t.Error("anthropic tool_result lost is_error")
		}
		if !strings.Contains(string(reqs[0].Raw), "additionalProperties") {
			t.Errorf("tool schema not sent whole: %s", reqs[0].Raw)
		}
	})
}

func TestErrorClasses(t *testing.T) {
	cases := []struct {
		name string
		step modelsim.Step
		want error
		only string
	}{
		{"401", modelsim.Step{Status: 401}, ErrAuth, ""},
		{"403", modelsim.Step{Status: 403}, ErrAuth, ""},
		{"429", modelsim.Step{Status: 429}, ErrTransient, ""},
		{"500", modelsim.Step{Status: 500}, ErrTransient, ""},
		{"503", modelsim.Step{Status: 503}, ErrTransient, ""},
		{"529", modelsim.Step{Status: 529}, ErrTransient, APIAnthropic},
		{"context", modelsim.Step{ErrorType: "context_length_exceeded"}, ErrContextOverflow, ""},
		{"404", modelsim.Step{Status: 404}, ErrBadRequest, ""},
		{"400", modelsim.Step{Status: 400}, ErrBadRequest, ""},
	}
	each(t, func(t *testing.T, api string, stream bool) {
		for _, c := range cases {
			if c.only != "" && c.only != api {
				continue
			}
			s := modelsim.Start(t, c.step)
			_, err := newModel(t, s, api, stream).Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
			if !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
				continue
			}
			// The SDKs retry 429 and 5xx by default; one Turn must be one
			// request, the daemon owns retries.
			if n := len(s.Requests()); n != 1 || s.Err() != nil {
				t.Errorf("%s: %d requests (server: %v), want exactly 1", c.name, n, s.Err())
			}
			for _, other := range []error{ErrAuth, ErrTransient, ErrContextOverflow, ErrBadRequest} {
				if !errors.Is(other, c.want) && errors.Is(err, other) {
					t.Errorf("%s: err is also %v", c.name, other)
				}
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("%s: key in error: %v", c.name, err)
			}
			// The remedy is the agent's to add, once (explain), where the
			// key's source is known.
			if errors.Is(c.want, ErrAuth) && strings.Contains(err.Error(), "api_key_") {
				t.Errorf("%s: the model layer adds a remedy of its own: %v", c.name, err)
			}
			if c.name == "429" && !strings.Contains(err.Error(), "retry after") {
				t.Errorf("429 error drops retry-after: %v", err)
			}
		}
	})
}

func TestWrongKeyIsAuthErrorWithoutTheKey(t *testing.T) {
	each(t, func(t *testing.T, api string, stream bool) {
		s := modelsim.Start(t, modelsim.Step{Text: "never"})
		s.RequireKey("sk-the-right-one-000000000000")
		_, err := newModel(t, s, api, stream).Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
		if !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), testKey) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestHangIsBoundedAndTransient(t *testing.T) {
	each(t, func(t *testing.T, api string, stream bool) {
		s := modelsim.Start(t, modelsim.Step{Hang: true}, modelsim.Step{Hang: true})
		m := newModel(t, s, api, stream, func(o *ModelOptions) { o.Timeout = 300 * time.Millisecond })
		if _, err := m.Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}); !errors.Is(err, ErrTransient) {
			t.Errorf("request timeout: err = %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		m = newModel(t, s, api, stream)
		if _, err := m.Turn(ctx, Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}); !errors.Is(err, ErrTransient) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("context deadline: err = %v", err)
		}
	})
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String() + "/v1"
	l.Close()
	for _, api := range apis {
		m, err := NewModel(ModelOptions{API: api, BaseURL: base, Model: "m", APIKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
		if !errors.Is(err, ErrTransient) || strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: err = %v", api, err)
		}
	}
}

// The SDKs read OPENAI_API_KEY / ANTHROPIC_API_KEY and *_BASE_URL by
// default; aicr must send only what its own config says.
func TestEnvironmentCredentialsAreIgnored(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env-openai")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env-anthropic")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	for _, api := range apis {
		s := modelsim.Start(t, modelsim.Step{Text: "ok"})
		m := newModel(t, s, api, false, func(o *ModelOptions) { o.APIKey = "" })
		if _, err := m.Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}); err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		h := s.Requests()[0].Header
		if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
			t.Errorf("%s: sent credentials from the environment: %v", api, h)
		}
	}
}

func TestNewModelRejectsBadOptions(t *testing.T) {
	bad := []ModelOptions{
		{API: "gemini", Model: "m"},
		{API: APIOpenAIChat},
		{API: APIOpenAIChat, Model: "m", BaseURL: "gpu-box:8000/v1"},
		{API: APIAnthropic, Model: "m", Headers: map[string]string{"X-Bad\r\nInjected": "v"}},
	}
	for _, o := range bad {
		if _, err := NewModel(o); err == nil {
			t.Errorf("NewModel(%+v) accepted", o)
		}
	}
}

func TestClassifyScrubsAnEchoedKey(t *testing.T) {
	err := classify(context.Background(), APIOpenAIChat, ModelOptions{APIKey: testKey, Model: "m"},
		&apiFailure{status: 401, message: "Incorrect API key provided: " + testKey}, nil)
	if !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("err = %v", err)
	}
	// The same placeholder as the agent's own errors (secret.Scrub).
	if !strings.Contains(err.Error(), "Incorrect API key provided: "+secret.Redacted) {
		t.Fatalf("err = %v, want the key replaced by %s", err, secret.Redacted)
	}
}

// A model's malformed arguments come back as sent (the tool's validation
// answers them) and the next turn still goes out in a form the API takes.
func TestInvalidArgumentsRoundTrip(t *testing.T) {
	const broken = `{"file": "a.c", "line": `
	each(t, func(t *testing.T, api string, stream bool) {
		s := modelsim.Start(t,
			modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", Arguments: broken}}},
			modelsim.Step{Text: "fixed"},
		)
		m := newModel(t, s, api, stream)
		req := Request{Tools: []Tool{reportTool}, Messages: []Message{{Role: RoleUser, Text: "review"}}}
		first, err := m.Turn(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.ToolCalls) != 1 || json.Valid(first.ToolCalls[0].Arguments) && api != APIAnthropic {
			t.Fatalf("tool calls = %+v", first.ToolCalls)
		}
		call := first.ToolCalls[0]
		req.Messages = append(req.Messages, Message{Role: RoleAssistant, ToolCalls: first.ToolCalls},
			Message{Role: RoleTool, ToolResult: &ToolResult{CallID: call.ID, Name: call.Name, Content: `{"code":"invalid_arguments"}`, IsError: true}})
		if _, err := m.Turn(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		sent := s.Requests()[1].Messages[1].ToolCalls
		if len(sent) != 1 || sent[0].Name != "aicr_report_problem" {
			t.Fatalf("assistant turn sent back as %+v", sent)
		}
		if api == APIAnthropic && sent[0].Arguments != "{}" {
			t.Errorf("tool_use.input = %s, want an object", sent[0].Arguments)
		}
		if api != APIAnthropic && sent[0].Arguments != broken {
			t.Errorf("arguments sent back as %q, want the model's own", sent[0].Arguments)
		}
	})
}

// Without a timeout the Anthropic SDK refuses a non-streaming request
// whose max_tokens could outlast ten minutes; the pass context bounds it.
func TestAnthropicLargeMaxTokensWithoutTimeout(t *testing.T) {
	s := modelsim.Start(t, modelsim.Step{Text: "ok"})
	m := newModel(t, s, APIAnthropic, false)
	if _, err := m.Turn(context.Background(), Request{MaxOutputTokens: 64000, Messages: []Message{{Role: RoleUser, Text: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].MaxTokens; got != 64000 {
		t.Fatalf("max_tokens = %d", got)
	}
}

// Some Responses servers end the stream with a response.completed whose
// output is empty; the finished items streamed before it are the answer.
func TestResponsesStreamWithoutOutputInCompleted(t *testing.T) {
	events := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"m","output":[]}}`,
		`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"aicr_report_problem","arguments":""}}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":2,"output_index":0,"item_id":"fc_1","delta":"{\"line\":1}"}`,
		`{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"aicr_report_problem","arguments":"{\"line\":1}"}}`,
		`{"type":"response.completed","sequence_number":4,"response":{"id":"resp_1","object":"response","status":"completed","model":"m","usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			var head struct{ Type string }
			_ = json.Unmarshal([]byte(e), &head)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
		}
	}))
	defer srv.Close()
	m, err := NewModel(ModelOptions{API: APIOpenAIResponses, BaseURL: srv.URL + "/v1", Model: "m", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_1" || string(resp.ToolCalls[0].Arguments) != `{"line":1}` || resp.Usage.Output != 2 {
		t.Fatalf("response = %+v", resp)
	}
}

type countingTransport struct{ n int }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n++
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPClientIsUsed(t *testing.T) {
	for _, api := range apis {
		s := modelsim.Start(t, modelsim.Step{Text: "ok"})
		tr := &countingTransport{}
		m := newModel(t, s, api, false, func(o *ModelOptions) { o.HTTPClient = &http.Client{Transport: tr} })
		if _, err := m.Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}); err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		if tr.n != 1 {
			t.Errorf("%s: the given HTTP client made %d requests, want 1", api, tr.n)
		}
	}
}

// A cancelled run is not a model failure: the error says so and is none
// of the sentinels, so the caller's own cancellation decides.
func TestCancelledContextIsNotTransient(t *testing.T) {
	for _, api := range apis {
		s := modelsim.Start(t, modelsim.Step{Hang: true})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for len(s.Requests()) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
		}()
		_, err := newModel(t, s, api, false).Turn(ctx, Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTransient) {
			t.Errorf("%s: err = %v", api, err)
		}
	}
}
