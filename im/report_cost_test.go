package im

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

// The footer shows what the review cost and how much of its prompt the
// provider read from its cache; a review stopped at a cap says so in its
// notice, and a failed run has neither (its reviewer did not finish).
func TestReportFooterCostAndStoppedNotice(t *testing.T) {
	cost := 0.01234
	msg := Message{RunID: 9, Result: review.Result{Problems: []review.Problem{}, Summaries: []review.Summary{}},
		Reviewer: Reviewer{Agent: "llm", Model: "claude-x", CostUSD: &cost, PromptTokens: 20000, CachedTokens: 16800},
		Stopped:  "stopped at the review's cost limit of $0.01 (agent.max_cost_per_review)"}
	r := BuildReport(msg)
	if want := "Reviewed by llm (claude-x) · cost $0.01234 · 84% cached · run 9"; r.Footer != want {
		t.Errorf("footer %q, want %q", r.Footer, want)
	}
	if want := "Partial review: stopped at the review's cost limit of $0.01 (agent.max_cost_per_review); what it found until then is below."; r.Notice != want || r.Stopped == "" {
		t.Errorf("notice %q, want %q", r.Notice, want)
	}
	if text := PlainText(r); !strings.Contains(text, r.Notice) || !strings.Contains(text, r.Footer) {
		t.Errorf("plain text lacks the notice or the footer:\n%s", text)
	}
	// Files over the prompt budget are named as left out, and why.
	msg.Clipped = []string{"src/big.c"}
	if line := BuildReport(msg).LeftOutLine(); !strings.Contains(line, "src/big.c (diff over the model's prompt budget (agent.llm.context_window)") {
		t.Errorf("left-out line %q", line)
	}
	msg.Clipped = nil
	// No prices, nothing cached: the footer names the reviewer only.
	msg.Reviewer = Reviewer{Agent: "llm", Model: "m", PromptTokens: 100}
	if r := BuildReport(msg); r.Footer != "Reviewed by llm (m) · run 9" {
		t.Errorf("unpriced footer %q", r.Footer)
	}
	msg.Failure = "model refused the key"
	// The run id stays in the footer, where the report keeps internal ids.
	if r := BuildReport(msg); strings.Contains(r.Notice, "Partial review: stopped") || r.Footer != "run 9" {
		t.Errorf("failed run: notice %q footer %q", r.Notice, r.Footer)
	}
}
