// Package modelsim is a scripted model server for tests: it speaks
// OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and the
// Gemini API on loopback, streaming and not, and answers each request
// with the next scripted Step (tool calls, text, usage, an error with the
// API's real error body, or a hang). SimulateCaches adds each provider's
// prompt cache, with the usage split as that API reports it (cache.go). It decodes every request into one
// Request shape so a test can assert what the client sent, whichever API
// it used.
//
// No model server may be reached from a test, so this is the stand-in
// for vLLM, Ollama, a gateway, OpenAI, Anthropic and Google; it follows
// the wire formats of the official SDKs closely enough that those SDKs
// decode it.
package modelsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// APIs as recorded in Request.API (the values llm.API* uses).
const (
	APIOpenAIChat      = "openai-chat"
	APIOpenAIResponses = "openai-responses"
	APIAnthropic       = "anthropic"
)

// Step is the scripted answer to one request.
type Step struct {
	// ToolCalls the model makes (names as offered, e.g. "aicr_report_problem").
	ToolCalls []ToolCall
	// Text is the assistant's prose.
	Text string
	// Status, when non-2xx, answers with that API's real error body.
	Status int
	// ErrorType chooses the error body (e.g. "context_length_exceeded",
	// "rate_limit_exceeded", "invalid_api_key", "overloaded_error"); with no
	// Status it implies the status the real API uses for it.
	ErrorType string
	// Hang never answers until the request's context ends.
	Hang bool
	// Usage is the token count to report.
	Usage Usage
	// Check inspects the request; an error is recorded in Err() and the
	// request is refused with a 400 naming it.
	Check func(Request) error
	// NoChoices answers a Chat request with "choices": [], as some
	// OpenAI-compatible servers and gateways do under load.
	NoChoices bool
	// PadBytes makes the Chat answer's text that many bytes of filler
	// after Text, written as it is sent (never held in memory), for
	// clients that must not read an endless answer whole.
	PadBytes int64
}

// ToolCall is one function call the model makes or made.
type ToolCall struct {
	Name      string
	Arguments string
	// ObjectArguments sends a Chat call's arguments as this JSON value
	// instead of the string Arguments, as some servers do.
	ObjectArguments json.RawMessage
}

// Usage counts tokens as the APIs report them. Input is the uncached
// prompt (Anthropic's input_tokens); the OpenAI APIs and Gemini report
// Input+CacheRead+CacheWrite as the prompt with CacheRead as its cached
// part. CacheWrite is Anthropic's alone.
type Usage struct{ Input, Output, CacheRead, CacheWrite int }

// prompt is the whole prompt count the OpenAI APIs and Gemini report.
func (u Usage) prompt() int { return u.Input + u.CacheRead + u.CacheWrite }

// Request is what a client sent, decoded per API into one shape.
type Request struct {
	API    string
	Model  string
	Stream bool
	Header http.Header
	// System is the system prompt (Chat's system/developer messages,
	// Responses' instructions, Anthropic's system).
	System string
	// Tools are the names of the functions offered.
	Tools []string
	// Messages are the conversation without the system prompt; a tool
	// result is its own Message with Role "tool" whatever the API.
	Messages  []Message
	MaxTokens int
	Raw       []byte
}

// Message is one conversation entry: Role is "user", "assistant" or
// "tool", or "system" for an Anthropic mid-conversation system message.
type Message struct {
	Role       string
	Text       string
	ToolCalls  []ToolCall
	ToolCallID string
	IsError    bool
}

// Server is a running scripted model server.
type Server struct {
	// URL is the base URL, ending in /v1.
	URL string

	srv     *httptest.Server
	closing chan struct{}

	mu       sync.Mutex
	steps    []Step
	respond  func(Request) Step
	next     int
	key      string
	requests []Request
	err      error

	// userAssistantOnly: see UserAssistantRolesOnly.
	userAssistantOnly bool
	// vllm: see VLLM.
	vllm *VLLMOptions
	// caches: see SimulateCaches.
	caches *caches
	// noParallel: see RefuseParallelToolCalls.
	noParallel bool
}

// Start serves the script on loopback until the test ends.
func Start(t testing.TB, steps ...Step) *Server {
	t.Helper()
	s := &Server{steps: steps, closing: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.handle(APIOpenAIChat))
	mux.HandleFunc("/v1/responses", s.handle(APIOpenAIResponses))
	mux.HandleFunc("/v1/messages", s.handle(APIAnthropic))
	mux.HandleFunc(geminiPrefix, s.handleGemini())
	mux.HandleFunc("/v1/models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(fmt.Errorf("modelsim: unexpected %s %s", r.Method, r.URL.Path))
		http.NotFound(w, r)
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(func() {
		// Release hanging handlers first: Close waits for them.
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// StartFunc serves answers computed from each request instead of a fixed
// script: agent CLIs make requests of their own (titles, retries after a
// refusal, memory extraction), so a test of a real CLI scripts what the
// model does in a situation, not the n-th request.
func StartFunc(t testing.TB, respond func(Request) Step) *Server {
	s := Start(t)
	s.mu.Lock()
	s.respond = respond
	s.mu.Unlock()
	return s
}

// Offered returns the offered tool whose name ends in suffix
// ("report_problem"), as the client spelled it, or "".
func (r Request) Offered(suffix string) string {
	for _, t := range r.Tools {
		if strings.HasSuffix(t, suffix) {
			return t
		}
	}
	return ""
}

// ToolResults counts the tool results in the conversation.
func (r Request) ToolResults() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

// RequireKey makes every request without this key (OpenAI: Authorization:
// Bearer; Anthropic: x-api-key) fail with the API's real 401 body. A
// refused request is recorded in Requests but uses up no step.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Requests returns what the clients sent, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Err returns the first unexpected request or failed Check.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// api is one wire format: decoding requests, encoding answers and errors.
type api interface {
	decode(raw []byte, req *Request) error
	authorized(h http.Header, key string) (ok bool, token string)
	writeError(w http.ResponseWriter, e apiError)
	writeAnswer(w http.ResponseWriter, req Request, a answer)
}

// answer is one successful reply, with the ids the script's calls get.
type answer struct {
	seq       int
	model     string
	text      string
	toolCalls []ToolCall
	usage     Usage
	noChoices bool
	pad       int64
	// noDetails leaves prompt_tokens_details out (vLLM without
	// --enable-prompt-tokens-details).
	noDetails bool
}

func apiFor(name string) api {
	switch name {
	case APIOpenAIChat:
		return chatAPI{}
	case APIOpenAIResponses:
		return responsesAPI{}
	case APIGemini:
		return geminiAPI{}
	default:
		return anthropicAPI{}
	}
}

// handle serves one API's endpoint: decode the request the way that API
// would, refuse it where the real server would, then play the next step
// of the script.
func (s *Server) handle(name string) http.HandlerFunc {
	a := apiFor(name)
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := s.readRequest(w, r, a, name)
		if !ok {
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		seq := len(s.requests)
		key := s.key
		s.mu.Unlock()

		if s.refuse(w, r, a, req, key) {
			return
		}
		step, ok := s.nextStep(w, a, name, seq, req)
		if !ok {
			return
		}
		s.play(w, r, a, step, seq, req)
	}
}

// readRequest decodes a POST into a Request; ok is false when it was
// answered with an error instead.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, a api, name string) (req Request, ok bool) {
	if r.Method != http.MethodPost {
		s.fail(fmt.Errorf("modelsim: %s %s, want POST", r.Method, r.URL.Path))
		a.writeError(w, errorFor(name, http.StatusMethodNotAllowed, "", ""))
		return req, false
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return req, false
	}
	req = Request{API: name, Header: r.Header.Clone(), Raw: raw}
	if g, isGemini := a.(geminiAPI); isGemini {
		if err := g.decodeURL(r, &req); err != nil {
			s.fail(err)
			a.writeError(w, errorFor(name, http.StatusNotFound, "", err.Error()))
			return req, false
		}
	}
	if err := a.decode(raw, &req); err != nil {
		s.fail(fmt.Errorf("modelsim: %s request does not decode: %w", name, err))
		a.writeError(w, errorFor(name, http.StatusBadRequest, "invalid_request_error", err.Error()))
		return req, false
	}
	return req, true
}

// refuse answers what the real server refuses before it reads the
// conversation (credentials, a system message Anthropic does not take,
// what this vLLM is not started for, a missing anthropic-version), so a
// refusal does not use up a step. It reports whether it answered.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, a api, req Request, key string) bool {
	name, raw := req.API, req.Raw
	if key != "" {
		if ok, token := a.authorized(r.Header, key); !ok {
			a.writeError(w, authError(name, token))
			return true
		}
	}
	if name == APIAnthropic && s.refusesSystemMessages() {
		if i := systemMessageIndex(raw); i >= 0 {
			a.writeError(w, errorFor(name, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)))
			return true
		}
	}
	s.mu.Lock()
	vllm := s.vllm
	s.mu.Unlock()
	if name == APIOpenAIChat && vllm != nil {
		if e := vllmRefusal(vllm, raw, req); e != nil {
			e.write(w)
			return true
		}
	}
	if name == APIAnthropic {
		if e := breakpointRefusal(raw); e != nil {
			a.writeError(w, *e)
			return true
		}
	}
	if e := s.parallelRefusal(name, raw); e != nil {
		a.writeError(w, *e)
		return true
	}
	if name == APIAnthropic && r.Header.Get("anthropic-version") == "" {
		a.writeError(w, errorFor(name, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required"))
		return true
	}
	return false
}

// nextStep is the Respond callback's answer, else the script's next
// step; ok is false when the script has run out (answered with a 500).
func (s *Server) nextStep(w http.ResponseWriter, a api, name string, seq int, req Request) (Step, bool) {
	s.mu.Lock()
	if s.respond != nil {
		respond := s.respond
		s.mu.Unlock()
		return respond(req), true
	}
	if s.next >= len(s.steps) {
		s.mu.Unlock()
		s.fail(fmt.Errorf("modelsim: request %d (%s) beyond the script's %d steps", seq, name, len(s.steps)))
		a.writeError(w, errorFor(name, http.StatusInternalServerError, "", "modelsim: no scripted step left"))
		return Step{}, false
	}
	step := s.steps[s.next]
	s.next++
	s.mu.Unlock()
	return step, true
}

// play answers the request as step says: its check, a hang, an error or
// the answer.
func (s *Server) play(w http.ResponseWriter, r *http.Request, api api, step Step, seq int, req Request) {
	name := req.API
	if step.Check != nil {
		if err := step.Check(req); err != nil {
			s.fail(fmt.Errorf("modelsim: request %d (%s): %w", seq, name, err))
			api.writeError(w, errorFor(name, http.StatusBadRequest, "invalid_request_error", "modelsim check: "+err.Error()))
			return
		}
	}
	if step.Hang {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	if step.Status >= 300 || step.ErrorType != "" {
		api.writeError(w, errorFor(name, step.Status, step.ErrorType, ""))
		return
	}
	model := req.Model
	if model == "" {
		model = "modelsim"
	}
	a := answer{seq: seq, model: model, text: step.Text, toolCalls: step.ToolCalls, usage: step.Usage,
		noChoices: step.NoChoices, pad: step.PadBytes}
	a.usage, _ = s.simulatedUsage(req, a)
	s.mu.Lock()
	a.noDetails = s.vllm != nil && !s.vllm.PromptTokensDetails
	s.mu.Unlock()
	api.writeAnswer(w, req, a)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // the server's own literals always marshal
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// sse writes one Server-Sent Event; event may be empty (Chat names none).
func sse(w http.ResponseWriter, event string, data any) {
	var buf bytes.Buffer
	if event != "" {
		fmt.Fprintf(&buf, "event: %s\n", event)
	}
	switch d := data.(type) {
	case string:
		fmt.Fprintf(&buf, "data: %s\n\n", d)
	default:
		body, err := json.Marshal(d)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&buf, "data: %s\n\n", body)
	}
	_, _ = w.Write(buf.Bytes())
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// sseOK is sse for long streams: it reports whether the client still reads.
func sseOK(w http.ResponseWriter, data any) bool {
	body, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	if _, err := fmt.Fprintf(w, "data: %s\n\n", body); err != nil {
		return false
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// chunks splits s in up to three pieces so streaming clients must join deltas.
func chunks(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	third := len(s) / 3
	return []string{s[:third], s[third : 2*third], s[2*third:]}
}

// textOf joins the text parts of a content field that is either a string
// or an array of parts with a "text" member (every API allows both).
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func joinSystem(old, add string) string {
	if old == "" {
		return add
	}
	return old + "\n" + add
}
