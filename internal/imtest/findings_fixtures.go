package imtest

import (
	"fmt"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// link is a signed-looking link to the stand-in web page.
func link(id int64, action string) string {
	return fmt.Sprintf("https://aicr.example.com/f/%d/%s?exp=1893456000&sig=abc123", id, action)
}

func actions(id int64) []im.ActionLink {
	var out []im.ActionLink
	for _, a := range []string{"useful", "false_positive", "wont_fix"} {
		out = append(out, im.ActionLink{Action: a, URL: link(id, a)})
	}
	return out
}

// TrackedMessage is Message with its findings tracked: the medium one
// new, the critical one reported before (a repeat: one line under
// repeat = "mention"), the low one back after it was resolved, and a
// dismissed one that must never appear.
func TrackedMessage() im.Message {
	m := Message()
	m.Result.Problems = append(m.Result.Problems, review.Problem{File: "web/old.go", Line: 9,
		Severity: review.SeverityHigh, Category: "bug", Message: "Dismissed as a false positive: never shown."})
	m.Findings = &im.Findings{Repeat: im.RepeatMention, Tracked: []im.Tracked{
		{FindingID: 11, Class: im.ClassNew, Since: "r42", Commits: 1, Page: link(11, "view"), Actions: actions(11)},
		{FindingID: 5, Class: im.ClassRepeat, Since: "r40", Commits: 3, Page: link(5, "view"), Actions: actions(5)},
		{FindingID: 3, Class: im.ClassReopened, Since: "r30", Commits: 2, Page: link(3, "view"), Actions: actions(3)},
		{FindingID: 2, Class: im.ClassDismissed, Since: "r20", Commits: 4},
	}}
	res, f, _, _ := im.Policy{}.ApplyFindings(m.Result, *m.Findings)
	m.Result, m.Findings = res, &f
	return m
}

// ResolutionReport says that r43 by bob resolved two findings of the
// report of r42 (whose Slack message was C0TEST001:1700000000.000001) and
// one of r41's, whose message id is unknown.
func ResolutionReport() im.Report {
	earlier := im.BuildReport(TrackedMessage())
	notes := map[int64]string{11: im.ResolvedNote("r43", "bob"), 3: im.ResolvedNote("r43", "bob")}
	return im.BuildResolution(im.Resolution{
		RunID:     8,
		Change:    &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "43", Author: "bob", Description: "Check the error <at id=all></at>"},
		ChangeURL: "https://svn.example.com/viewvc/main?view=revision&revision=43",
		Followups: []im.Followup{
			{RunID: 7, Revision: "r42", Title: earlier.Title, MessageID: "C0TEST001:1700000000.000001",
				Updated: im.MarkResolved(earlier, notes), Resolved: []im.Resolved{
					{FindingID: 11, File: "web/login.go", Line: 12, Severity: "medium", Category: "error-handling",
						Message: "错误被忽略：`err` 未检查。", Revision: "r43", Author: "bob", Page: link(11, "view")},
					{FindingID: 3, File: "web/__init__.py", Line: 1, Severity: "low", Category: "style",
						Message: "Click [here](javascript:alert(1)) or <at id=all></at>", Revision: "r43", Author: "bob", Page: link(3, "view")},
				}},
			{RunID: 6, Revision: "r41", Title: "aicr review: main r41 by carol", Resolved: []im.Resolved{
				{FindingID: 9, File: "web/x.go", Line: 4, Severity: "high", Category: "bug",
					Message: "<!channel> nil map write", Revision: "r43", Author: "bob", Page: link(9, "view")},
			}},
		},
	})
}
