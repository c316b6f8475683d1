package im_test

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
)

// A failed run's message, in every dialect: it never claims a clean
// result or names a reviewer that did not finish, says what failed, and
// names the commands to inspect and retry the run. With builtin findings
// it is a partial review that says only the builtin rules ran.
func TestFailedRunMessageInEveryDialect(t *testing.T) {
	const reason = "agent review pass 1: llm: authentication refused (401) by https://api.example.com/v1"
	notice := imtest.EmptyMessage()
	notice.Reviewer = im.Reviewer{Agent: "llm", Model: "gpt-x"}
	notice.Failure = reason
	partial := notice
	partial.Result = review.Result{Problems: []review.Problem{{File: "config/prod.yaml", Line: 3, Severity: review.SeverityCritical,
		Category: "hard-coded-credential", Message: "Secret-scanner rule aws-access-token matched a hard-coded credential at column 9."}}}

	for name, tc := range map[string]struct {
		msg  im.Message
		want []string
	}{
		"notice":  {notice, []string{im.TextFailed, "The review could not be completed: " + reason}},
		"partial": {partial, []string{"Partial review: the model review failed (" + reason + "), so only the builtin rules ran.", "config/prod.yaml"}},
	} {
		rep := im.BuildReport(tc.msg)
		// A failed run was not reviewed by an agent; the footer names only the run.
		if rep.Footer != "run 7" || rep.Failure != reason {
			t.Errorf("%s: footer %q, failure %q", name, rep.Footer, rep.Failure)
		}
		for dialect, out := range renderAll(t, rep) {
			// Markdown dialects escape punctuation, and the reason is
			// untrusted text whose bare URLs are broken with a zero-width
			// space (markdown.Escape); compare the words.
			plain := strings.NewReplacer(`\`, "", "*", "", "_", "", "\u200b", "").Replace(out)
			for _, w := range append(tc.want, "aicr audit show 7", "aicr run retry 7") {
				if w = strings.NewReplacer("*", "", "_", "").Replace(w); !strings.Contains(plain, w) {
					t.Errorf("%s/%s: missing %q:\n%s", name, dialect, w, out)
				}
			}
			for _, never := range []string{im.TextNoProblems, im.TextReviewedBy, "gpt-x"} {
				if strings.Contains(out, never) {
					t.Errorf("%s/%s: says %q:\n%s", name, dialect, never, out)
				}
			}
		}
	}
}

// The reason quotes a server's answer; a credential in it is blanked
// like one in a commit message.
func TestFailedRunReasonIsRedacted(t *testing.T) {
	msg := imtest.EmptyMessage()
	msg.Failure = "llm: 401 from server: Incorrect API key provided: AKIAQWERTYUIOPASDFGH"
	rep := im.BuildReport(msg)
	if strings.Contains(im.PlainText(rep), "AKIAQWERTYUIOPASDFGH") || strings.Contains(rep.Failure, "AKIAQWERTYUIOPASDFGH") {
		t.Errorf("the key is in the notice:\n%s", im.PlainText(rep))
	}
}
