package im

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

// A report never says "No problems found" above a list of findings, even
// when the agent also skipped.
func TestVerdictNeverContradictsFindings(t *testing.T) {
	msg := Message{Result: review.Result{
		Problems: []review.Problem{{File: "a.go", Line: 1, Severity: review.SeverityHigh, Message: "m"}},
		Skip:     &review.Skip{Reason: "no_output_publisher"},
	}}
	r := BuildReport(msg)
	if r.Verdict != "Problems: 1 high" {
		t.Fatalf("Verdict = %q", r.Verdict)
	}
	if !strings.HasPrefix(r.SkipNote(), "Not reviewed: the reviewer finished") {
		t.Fatalf("SkipNote = %q", r.SkipNote())
	}
	if got := RenderText(msg); strings.Contains(got, TextNoProblems) {
		t.Fatalf("clean verdict above findings:\n%s", got)
	}
}

func TestSkipSentences(t *testing.T) {
	for reason, want := range map[string]string{
		"lgtm":                     "",
		ReasonNoProblemsSuppressed: "",
		"":                         "Not reviewed: the reviewer gave no reason.",
		"no_files_in_scope":        "Not reviewed: no file in the change is in the repository's review scope.",
		"agent_timeout":            "Not reviewed: agent timeout.",
	} {
		if got := SkipSentence(reason); got != want {
			t.Errorf("SkipSentence(%q) = %q, want %q", reason, got, want)
		}
	}
}
