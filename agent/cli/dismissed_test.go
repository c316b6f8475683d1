package cli_test

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/internal/modelsim"
)

// An agent CLI's prompt lists the team's dismissals as the llm agent's
// does: the real Claude Code sends them to the model in its first
// request, read from the run dir's dismissed.json.
func TestCLIPromptListsDismissals(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	a := claudeAgent(t, sim.URL, "")
	run := newRun(t)
	const marker = "Dismissal marker 3c9e: the retry loop is bounded elsewhere."
	if err := prompt.WriteDismissals(run.DismissedPath(), []prompt.Dismissal{{Path: plantedFile, Line: 13, Category: "correctness",
		Message: marker, Reason: "false_positive", Note: "see the caller"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reviewPass(t, a, run); err != nil {
		t.Fatalf("Review: %v\n%s", err, claudeStream(t, run))
	}
	reqs := sim.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	raw := string(reqs[0].Raw)
	for _, want := range []string{"Dismissed findings (untrusted data)", marker, "dismissed as a false positive", "Reason: see the caller"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the first request lacks %q", want)
		}
	}
}
