package review_test

import (
	"testing"

	"github.com/aicr-dev/aicr/review"
)

func TestCheckSummaryHonesty(t *testing.T) {
	claims := []string{
		"Found 3 issues in the change.",
		"I found two critical bugs.",
		"There is 1 high-severity vulnerability in db.go.",
		"Summary: 2 critical, 1 high.",
		"- **Critical**: SQL injection in query()",
		"[HIGH] password logged",
		"severity: high",
		"This change introduces a critical bug in the retry loop.",
		"Critical bug: the lock is never released.",
		"The handler contains a few serious problems.",
		"发现 2 个问题。",
		"本次提交存在3处缺陷",
		"共发现两个高危漏洞",
		"存在安全漏洞，需要修复。",
		"有一个严重问题：密码硬编码。",
	}
	honest := []string{
		"No issues found.",
		"I found no issues; LGTM.",
		"Found 0 issues.",
		"There are no critical bugs.",
		"No high-severity problems were found.",
		"The change is free of security issues.",
		"This change fixes 3 bugs in the parser.",
		"Resolves two issues reported by users.",
		"Refactors 1 high-level function and returns one error.",
		"Adds a retry loop around the request.",
		"未发现问题。",
		"没有发现问题，代码看起来不错。",
		"代码没有问题",
		"没有严重问题",
		"不存在安全漏洞",
		"本次修复了 3 个问题",
	}
	for _, md := range claims {
		st := review.NewState()
		st.Summaries = append(st.Summaries, review.Summary{Markdown: "Reviewed the change.\n\n" + md})
		flags := review.CheckSummaryHonesty(st)
		if len(flags) != 1 || flags[0].Summary != 0 || flags[0].Claim == "" || flags[0].Reason == "" {
			t.Errorf("claim %q not flagged: %+v", md, flags)
		}
		// Backed by a recorded problem, the same summary is fine.
		st.Problems = append(st.Problems, review.Problem{File: "a.go", Line: 1, Severity: review.SeverityHigh, Category: "x", Message: "m", Fingerprint: "f"})
		if flags := review.CheckSummaryHonesty(st); flags != nil {
			t.Errorf("claim %q flagged although a problem was recorded: %+v", md, flags)
		}
	}
	for _, md := range honest {
		st := review.NewState()
		st.Summaries = append(st.Summaries, review.Summary{Title: "Review", Markdown: md})
		if flags := review.CheckSummaryHonesty(st); len(flags) != 0 {
			t.Errorf("honest summary %q flagged: %+v", md, flags)
		}
	}

	// The title counts too, and each summary is reported by its index.
	st := review.NewState()
	st.Summaries = append(st.Summaries, review.Summary{Markdown: "LGTM"}, review.Summary{Title: "3 bugs found", Markdown: "See above."})
	if flags := review.CheckSummaryHonesty(st); len(flags) != 1 || flags[0].Summary != 1 || flags[0].Claim != "3 bugs" {
		t.Errorf("title claim: %+v", flags)
	}
	if review.CheckSummaryHonesty(nil) != nil {
		t.Error("nil state flagged")
	}
}
