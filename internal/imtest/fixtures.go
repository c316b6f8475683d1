package imtest

import (
	"fmt"
	"strings"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// Message is a realistic review: Chinese text, emoji, a fenced
// suggestion, a raw diff, a table and hostile markup in the summary.
func Message() im.Message {
	return im.Message{
		RunID: 7,
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "alice",
			Description: "修复登录流程 🚀\n\nLonger body."},
		ChangeURL: "https://svn.example.com/viewvc/main?view=revision&revision=42",
		Author: &im.Identity{VCSUser: "alice", FeishuOpenID: "ou_0123abcd", Mobile: "13800000000",
			DingTalkUserID: "alice01", WeComUserID: "alice.w"},
		Result: review.Result{
			Problems: []review.Problem{
				{File: "web/login.go", Line: 12, EndLine: 14, Severity: review.SeverityMedium, Category: "error-handling",
					Message: "错误被忽略：`err` 未检查。", Suggestion: "```go\nif err != nil {\n\treturn err\n}\n```"},
				{File: "config/prod.yaml", Line: 3, Severity: review.SeverityCritical, Category: "hard-coded-credential",
					Message: "A password is committed in **plain text** 🔑.", Suggestion: "-password: x\n+password: ${DB_PASSWORD}"},
				{File: "web/__init__.py", Line: 1, Severity: review.SeverityLow, Category: "style",
					Message: "Click [here](javascript:alert(1)) or <at id=all></at> <font color=\"red\">x</font>"},
			},
			Summaries: []review.Summary{{Title: "总结 Summary", Markdown: "## 结论\n\n整体**良好**，但有 1 个严重问题。\n\n| 文件 | 问题 |\n|---|---|\n| prod.yaml | 密码 |\n\n- see <https://example.com/doc>\n- ![img](https://example.com/a.png)\n\n<script>alert(1)</script>"}},
		},
	}
}

// EmptyMessage is a review that found nothing.
func EmptyMessage() im.Message {
	m := Message()
	m.Author = nil
	m.Result = review.Result{Problems: []review.Problem{}, Summaries: []review.Summary{}}
	return m
}

// BigMessage has n problems with Chinese messages and fenced code, so
// any platform must split it.
func BigMessage(n int) im.Message {
	m := Message()
	sevs := review.Severities
	m.Result.Problems = nil
	for i := range n {
		m.Result.Problems = append(m.Result.Problems, review.Problem{
			File: fmt.Sprintf("pkg/模块%03d/file.go", i), Line: i + 1, Severity: sevs[i%len(sevs)],
			Category: "bug", Message: fmt.Sprintf("第 %d 个问题：变量可能为空 ✅ %s", i, strings.Repeat("很长的说明。", 5)),
			Suggestion: fmt.Sprintf("```go\nif v == nil { // 检查 %d\n\treturn\n}\n```", i),
		})
	}
	return m
}
