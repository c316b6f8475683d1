package im_test

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
)

func TestTrackedReportGolden(t *testing.T) {
	rep := im.BuildReport(imtest.TrackedMessage())
	imtest.Golden(t, "tracked.golden", im.PlainText(rep))
	if len(rep.Entries) != len(rep.Problems) || len(rep.Problems) != 2 || len(rep.Repeats) != 1 {
		t.Fatalf("%d problems, %d entries, %d repeats; want 2 full (new, reopened), 2 entries, 1 repeat",
			len(rep.Problems), len(rep.Entries), len(rep.Repeats))
	}
	// Sorted with their problems: the medium new one before the low
	// reopened one.
	if rep.Entries[0].FindingID != 11 || rep.Entries[1].FindingID != 3 || rep.Entries[1].State != "reopened" {
		t.Fatalf("entries not aligned with the sorted problems: %+v", rep.Entries)
	}
	if strings.Contains(im.PlainText(rep), "Dismissed as a false positive") {
		t.Fatal("a dismissed finding appears in the report")
	}
}

func TestResolutionGolden(t *testing.T) {
	rep := imtest.ResolutionReport()
	imtest.Golden(t, "resolution.golden", im.PlainText(rep))
	if rep.Verdict != "Resolved: 3 findings of 2 earlier reports." {
		t.Fatalf("verdict %q", rep.Verdict)
	}
	up := rep.Followups[0].Updated
	for _, e := range up.Entries {
		if e.FindingID == 11 && (e.State != "resolved" || e.Note != "Resolved in r43 by bob" || e.Actions != nil) {
			t.Fatalf("updated entry %+v", e)
		}
	}
}

// The no_problems policy counts only what is new (and reopened) unless a
// channel wants repeats in full; dismissed findings never count nor show.
func TestApplyFindingsCountsNewOnly(t *testing.T) {
	res := review.Result{Problems: []review.Problem{
		{File: "a.go", Line: 1, Severity: review.SeverityHigh, Message: "old"},
		{File: "b.go", Line: 2, Severity: review.SeverityHigh, Message: "dismissed"},
	}}
	tracked := []im.Tracked{{FindingID: 1, Class: im.ClassRepeat, Since: "r1", Commits: 2}, {FindingID: 2, Class: im.ClassDismissed}}
	suppress := im.Policy{NoProblems: im.NoProblemsSuppress}
	for _, tc := range []struct {
		repeat            im.RepeatPolicy
		publish           bool
		problems, repeats int
		verdict           string
	}{
		{im.RepeatMention, false, 0, 1, "No new problems found; 1 reported earlier is still open."},
		{im.RepeatOmit, false, 0, 0, "No new problems found; 1 reported earlier is still open."},
		{im.RepeatFull, true, 1, 0, "Problems: 1 high"},
	} {
		t.Run(string(tc.repeat), func(t *testing.T) {
			filtered, f, publish, reason := suppress.ApplyFindings(res, im.Findings{Tracked: tracked, Repeat: tc.repeat})
			if publish != tc.publish || (!publish && reason != im.ReasonNoProblemsSuppressed) {
				t.Fatalf("publish = %v (%q), want %v", publish, reason, tc.publish)
			}
			rep := im.BuildReport(im.Message{RunID: 1, Result: filtered, Findings: &f})
			if len(rep.Problems) != tc.problems || len(rep.Repeats) != tc.repeats || rep.Verdict != tc.verdict {
				t.Fatalf("%d problems, %d repeats, verdict %q", len(rep.Problems), len(rep.Repeats), rep.Verdict)
			}
			if strings.Contains(im.PlainText(rep), "dismissed") {
				t.Fatal("dismissed finding shown")
			}
		})
	}
	// Published anyway (no_problems = publish): the verdict says there is
	// nothing new.
	filtered, f, publish, _ := im.Policy{}.ApplyFindings(res, im.Findings{Tracked: tracked})
	rep := im.BuildReport(im.Message{Result: filtered, Findings: &f})
	if !publish || !strings.Contains(im.PlainText(rep), "Still open:\n  a.go:1 [high] old (still open since r1, 2 commits)\n") {
		t.Fatalf("publish %v:\n%s", publish, im.PlainText(rep))
	}
}

// Links are aicr's own, but one that could break out of a dialect's link
// syntax is dropped rather than rendered.
func TestSafeLink(t *testing.T) {
	for raw, want := range map[string]string{
		"https://aicr.example.com/f/1/view?exp=1&sig=x": "https://aicr.example.com/f/1/view?exp=1&sig=x",
		"javascript:alert(1)":                           "",
		"https://x.example.com/a b":                     "",
		"https://x.example.com/a)](https://evil":        "",
		"https://x.example.com/<@U1>":                   "",
		"/relative":                                     "",
	} {
		if got := im.SafeLink(raw); got != want {
			t.Errorf("SafeLink(%q) = %q, want %q", raw, got, want)
		}
	}
}
