package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Problem is one finding a scripted reviewer reports.
type Problem struct {
	File     string
	Line     int
	Severity string
	Category string
	Message  string
}

func (p Problem) arguments() string {
	sev := p.Severity
	if sev == "" {
		sev = "medium"
	}
	cat := p.Category
	if cat == "" {
		cat = "correctness"
	}
	b, err := json.Marshal(map[string]any{"file": p.File, "line": p.Line, "severity": sev, "category": cat, "message": p.Message})
	if err != nil {
		panic(err) // strings and ints always marshal
	}
	return string(b)
}

// reported counts the report_problem calls already in the conversation.
func reported(req Request) int {
	n := 0
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if strings.HasSuffix(c.Name, "report_problem") {
				n++
			}
		}
	}
	return n
}

func summaryCall(req Request, n int) ToolCall {
	args, _ := json.Marshal(map[string]any{"title": "Review", "markdown": fmt.Sprintf("%d problems found.", n)})
	return ToolCall{Name: req.Offered("publish_summary"), Arguments: string(args)}
}

// OneCallPerAnswer is a reviewer (for StartFunc) that reports problems
// one report_problem call per answer, then publishes the summary in an
// answer of its own: K problems take K+1 requests, the shape the cost of
// a review is measured on. It reads its progress from the conversation,
// so every pass and every API gets the same answers.
func OneCallPerAnswer(problems []Problem) func(Request) Step {
	return func(req Request) Step {
		k := reported(req)
		if k < len(problems) {
			return Step{ToolCalls: []ToolCall{{Name: req.Offered("report_problem"), Arguments: problems[k].arguments()}}}
		}
		return Step{ToolCalls: []ToolCall{summaryCall(req, len(problems))}}
	}
}

// AllAtOnce is a reviewer (for StartFunc) that answers with every
// report_problem call and the summary together: one request a pass.
func AllAtOnce(problems []Problem) func(Request) Step {
	return func(req Request) Step {
		var calls []ToolCall
		for _, p := range problems[min(reported(req), len(problems)):] {
			calls = append(calls, ToolCall{Name: req.Offered("report_problem"), Arguments: p.arguments()})
		}
		return Step{ToolCalls: append(calls, summaryCall(req, len(problems)))}
	}
}

// RefuseParallelToolCalls makes the OpenAI endpoints refuse a request
// that names parallel_tool_calls with a 400, as gateways and older
// OpenAI-compatible API versions do ("Unrecognized request argument
// supplied: parallel_tool_calls"). The refusal is recorded in Requests
// and uses up no step.
func (s *Server) RefuseParallelToolCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noParallel = true
}

func (s *Server) parallelRefusal(name string, raw []byte) *apiError {
	s.mu.Lock()
	refuse := s.noParallel
	s.mu.Unlock()
	if !refuse || (name != APIOpenAIChat && name != APIOpenAIResponses) {
		return nil
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return nil
	}
	if _, ok := in["parallel_tool_calls"]; !ok {
		return nil
	}
	e := errorFor(name, http.StatusBadRequest, "invalid_request_error", "Unrecognized request argument supplied: parallel_tool_calls")
	return &e
}

// ParallelToolCalls reports whether the request asked for parallel tool
// calls: nil when it did not say.
func (r Request) ParallelToolCalls() *bool {
	var in struct {
		Parallel *bool `json:"parallel_tool_calls"`
	}
	if json.Unmarshal(r.Raw, &in) != nil {
		return nil
	}
	return in.Parallel
}

// CacheBreakpoints counts the blocks of an Anthropic request that carry
// cache_control.
func (r Request) CacheBreakpoints() int {
	blocks, err := anthropicBlocks(r.Raw)
	if err != nil {
		return 0
	}
	n := 0
	for _, b := range blocks {
		if b.mark {
			n++
		}
	}
	return n
}
