package modelsim

import (
	"encoding/json"
	"strings"
	"sync"
)

// A scripted reviewer of known precision and recall, for aicr eval's
// tests: it recognises which case a review prompt is about by a string
// the prompt contains (a path in the diff) and reports the problems the
// script gives for it, all at once with the summary, as a model that
// follows the protected rules does. A test that knows which of those
// problems are the golden findings knows the precision and recall the
// evaluation must print.

// EvalCase is what the scripted reviewer answers for one case.
type EvalCase struct {
	// Match is a string only this case's review prompt contains.
	Match string
	// Answers are the problems reported on the case's 1st, 2nd, …
	// review (cycling), so --repeat sees a model that varies.
	Answers [][]EvalProblem
}

// EvalProblem is one reported problem.
type EvalProblem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	EndLine  int    `json:"end_line,omitempty"`
	Severity string `json:"severity"`
	Category string `json:"category"`
	Message  string `json:"message"`
}

// EvalReviewer answers review requests from cases, and judge requests
// (a system prompt starting "You compare two descriptions") with judge.
// The answer with every call and the summary reports First as its usage;
// a client that asks again once the calls are answered gets a closing
// text with Closing.
type EvalReviewer struct {
	Cases []EvalCase
	// Usage of the answer with the calls and of a closing request.
	First, Closing Usage
	// Judge decides a judge request from its user prompt; nil answers
	// every judge request false.
	Judge func(prompt string) bool

	mu      sync.Mutex
	reviews map[int]int
}

// Respond is the StartFunc responder.
func (e *EvalReviewer) Respond(req Request) Step {
	if strings.HasPrefix(req.System, "You compare two descriptions") {
		user := ""
		if len(req.Messages) > 0 {
			user = req.Messages[len(req.Messages)-1].Text
		}
		same := e.Judge != nil && e.Judge(user)
		if same {
			return Step{Text: `{"same_issue": true}`, Usage: Usage{Input: 200, Output: 6}}
		}
		return Step{Text: `{"same_issue": false}`, Usage: Usage{Input: 200, Output: 6}}
	}
	if req.ToolResults() > 0 {
		return Step{Text: "Reported.", Usage: e.Closing}
	}
	prompt := req.System
	for _, m := range req.Messages {
		prompt += "\n" + m.Text
	}
	for i, c := range e.Cases {
		if c.Match == "" || !strings.Contains(prompt, c.Match) {
			continue
		}
		e.mu.Lock()
		if e.reviews == nil {
			e.reviews = map[int]int{}
		}
		n := e.reviews[i]
		e.reviews[i]++
		e.mu.Unlock()
		var problems []EvalProblem
		if len(c.Answers) > 0 {
			problems = c.Answers[n%len(c.Answers)]
		}
		return e.answer(req, problems)
	}
	return e.answer(req, nil)
}

func (e *EvalReviewer) answer(req Request, problems []EvalProblem) Step {
	report, summary := req.Offered("report_problem"), req.Offered("publish_summary")
	var calls []ToolCall
	for _, p := range problems {
		if p.Severity == "" {
			p.Severity = "medium"
		}
		b, _ := json.Marshal(p)
		calls = append(calls, ToolCall{Name: report, Arguments: string(b)})
	}
	text := "No problems found."
	if len(problems) > 0 {
		text = "Reported the problems above."
	}
	b, _ := json.Marshal(map[string]string{"markdown": text})
	calls = append(calls, ToolCall{Name: summary, Arguments: string(b)})
	return Step{ToolCalls: calls, Usage: e.First}
}
