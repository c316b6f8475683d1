package review_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

// Credentials an agent quotes (an AWS key, a GitHub token) never reach
// the state file, and so neither the audit trail nor any channel: every
// agent text is passed through the credential rules when it is recorded,
// refused calls' arguments included (issue 22 C10).
const (
	quotedAWSKey = "AKIAZ3MHQ4XW7PLR2N5K"
	quotedGitHub = "ghp_8f3kQz1LmN0pRsTuVwXyZa2B4c6D8e0F1g3H"
)

func TestAgentTextIsRedactedWhenRecorded(t *testing.T) {
	f := newFixture(t)
	v := review.NewValidator(f.change, f.srcDir, review.Limits{})
	st := review.NewState()
	args := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	calls := []review.ToolCall{
		{Name: review.ToolReportProblem, Arguments: args(map[string]any{"file": "app/main.go", "line": 7, "severity": "high",
			"category": "hard-coded-credential", "message": "The key " + quotedAWSKey + " is committed.",
			"suggestion": "Revoke " + quotedGitHub + " and read GITHUB_TOKEN from the environment."})},
		{Name: review.ToolPublishSummary, Arguments: args(map[string]any{"title": "Leak of " + quotedAWSKey,
			"markdown": "Rotate `" + quotedGitHub + "` now."})},
		{Name: review.ToolFetchMoreContext, Arguments: args(map[string]any{"path": "lib/db.go", "reason": "where " + quotedAWSKey + " is used"})},
		// Refused (no such line), so kept with its arguments in Rejected.
		{Name: review.ToolReportProblem, Arguments: args(map[string]any{"file": "app/main.go", "line": 999, "severity": "low",
			"category": "x", "message": "again " + quotedGitHub})},
	}
	for i, o := range review.ApplyCalls(v, st, calls) {
		if (o.Err != nil) != (i == 3) {
			t.Fatalf("call %d: %+v", i, o.Err)
		}
	}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := review.SaveState(path, st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{quotedAWSKey, quotedGitHub} {
		if strings.Contains(string(b), key) {
			t.Errorf("state file holds %s…:\n%s", key[:6], b)
		}
	}
	if len(st.Problems) != 1 || !strings.Contains(st.Problems[0].Message, "<redacted>") || !strings.Contains(st.Summaries[0].Markdown, "<redacted>") {
		t.Errorf("the redacted text must still say a credential was there: %+v %+v", st.Problems, st.Summaries)
	}
	if len(st.Rejected) != 1 || !json.Valid(st.Rejected[0].Arguments) {
		t.Errorf("rejected arguments: %+v", st.Rejected)
	}
}
