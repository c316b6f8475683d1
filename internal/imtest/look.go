package imtest

import (
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// LookSubject is the commit subject of LookMessage: every character a
// chat platform's Markdown acts on, typed by a committer. Every platform
// must show it exactly as typed (issue 27).
const LookSubject = "Fix *all* the _parsers_ ~now~ with `go vet`, <thing> and [x](y) # 1. done"

// LookMessage is the one representative report whose body every platform
// renders for the golden tests and the README: a problem of every
// severity, a suggestion, a hostile subject, the author's ids on every
// platform, a link to the change, the reviewer and a left-out file.
func LookMessage() im.Message {
	return im.Message{
		RunID: 57,
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "payments", Revision: "1234", Author: "alice",
			Description: LookSubject + "\n\nThe gateway client now retries once.",
			Files: []vcs.FileChange{
				{Path: "gateway/client.go"},
				{Path: "assets/logo.png", Skipped: vcs.SkipBinary},
			}},
		ChangeURL: "https://svn.example.com/viewvc/payments?view=revision&revision=1234",
		RunURL:    "https://aicr.example.com/runs/57",
		Author: &im.Identity{VCSUser: "alice", SlackID: "U0ALICE", FeishuOpenID: "ou_alice01",
			DingTalkUserID: "alice01", Mobile: "13800000000", WeComUserID: "alice.w"},
		Reviewer: im.Reviewer{Agent: "llm", Model: "gpt-4o"},
		Result: review.Result{
			Problems: []review.Problem{
				{File: "gateway/client.go", Line: 88, Severity: review.SeverityLow, Category: "style",
					Message: "The retry count is a magic number."},
				{File: "config/prod.yaml", Line: 3, Severity: review.SeverityCritical, Category: "hard-coded-credential",
					Message: "A live API key is committed in plain text."},
				{File: "gateway/client.go", Line: 40, EndLine: 44, Severity: review.SeverityHigh, Category: "error-handling",
					Message:    "The error of `resp.Body.Close()` is ignored, and the body leaks on retry.",
					Suggestion: "```go\ndefer resp.Body.Close()\n```"},
				{File: "gateway/retry.go", Line: 12, Severity: review.SeverityMedium, Category: "race",
					Message: "`attempts` is written by two goroutines without a lock."},
				{File: "gateway/client.go", Line: 7, Severity: review.SeverityInfo, Category: "docs",
					Message: "The package comment still names the old gateway."},
			},
			Summaries: []review.Summary{{Title: "Summary", Markdown: "One **critical** credential leak; the retry path needs a lock."}},
		},
	}
}
