package im

import (
	"testing"

	"github.com/aicr-dev/aicr/review"
)

func TestPolicyApply(t *testing.T) {
	high := review.Problem{File: "a.go", Line: 1, Severity: review.SeverityHigh, Message: "high"}
	low := review.Problem{File: "a.go", Line: 2, Severity: review.SeverityLow, Message: "low"}
	summary := review.Summary{Title: "Overview", Markdown: "looks fine"}

	results := map[string]review.Result{
		"above":         {Problems: []review.Problem{high, low}},
		"only_below":    {Problems: []review.Problem{low}, Summaries: []review.Summary{}},
		"none":          {Problems: []review.Problem{}},
		"none_summary":  {Summaries: []review.Summary{summary}},
		"blank_summary": {Summaries: []review.Summary{{Title: " ", Markdown: "\n"}}},
		"skip":          {Skip: &review.Skip{Reason: "lgtm"}},
		"skip_summary":  {Skip: &review.Skip{Reason: "lgtm"}, Summaries: []review.Summary{summary}},
	}
	type want struct {
		publish  bool
		problems int
	}
	const supp = false
	tests := map[NoProblemsPolicy]map[string]want{
		NoProblemsPublish: {
			"above": {true, 1}, "only_below": {true, 0}, "none": {true, 0}, "none_summary": {true, 0},
			"blank_summary": {true, 0}, "skip": {true, 0}, "skip_summary": {true, 0},
		},
		NoProblemsSuppress: {
			"above": {true, 1}, "only_below": {supp, 0}, "none": {supp, 0}, "none_summary": {supp, 0},
			"blank_summary": {supp, 0}, "skip": {supp, 0}, "skip_summary": {supp, 0},
		},
		NoProblemsPublishIfSummary: {
			"above": {true, 1}, "only_below": {supp, 0}, "none": {supp, 0}, "none_summary": {true, 0},
			"blank_summary": {supp, 0}, "skip": {supp, 0}, "skip_summary": {true, 0},
		},
	}
	for policy, cases := range tests {
		if len(cases) != len(results) {
			t.Fatalf("%s: table covers %d results, want %d", policy, len(cases), len(results))
		}
		for name, w := range cases {
			t.Run(string(policy)+"/"+name, func(t *testing.T) {
				p := Policy{MinSeverity: review.SeverityMedium, NoProblems: policy}
				in := results[name]
				got, publish, reason := p.Apply(in)
				if publish != w.publish {
					t.Errorf("publish = %v, want %v", publish, w.publish)
				}
				wantReason := ""
				if !w.publish {
					wantReason = ReasonNoProblemsSuppressed
				}
				if reason != wantReason {
					t.Errorf("reason = %q, want %q", reason, wantReason)
				}
				if len(got.Problems) != w.problems {
					t.Errorf("problems = %d, want %d", len(got.Problems), w.problems)
				}
				for _, pr := range got.Problems {
					if pr.Severity.Rank() < review.SeverityMedium.Rank() {
						t.Errorf("kept %s problem below threshold", pr.Severity)
					}
				}
				if len(got.Summaries) != len(in.Summaries) {
					t.Errorf("summaries = %d, want %d", len(got.Summaries), len(in.Summaries))
				}
				if (got.Skip == nil) != (in.Skip == nil) {
					t.Errorf("skip = %v, want %v", got.Skip, in.Skip)
				}
			})
		}
	}
}

func TestPolicyApplyThresholdIsInclusive(t *testing.T) {
	res := review.Result{Problems: []review.Problem{
		{Severity: review.SeverityMedium}, {Severity: review.SeverityCritical}, {Severity: review.SeverityInfo},
	}}
	got, _, _ := Policy{MinSeverity: review.SeverityMedium, NoProblems: NoProblemsSuppress}.Apply(res)
	if len(got.Problems) != 2 || got.Problems[0].Severity != review.SeverityMedium || got.Problems[1].Severity != review.SeverityCritical {
		t.Fatalf("problems = %+v, want medium and critical in input order", got.Problems)
	}
}

func TestPolicyApplyZeroValueKeepsAllAndPublishes(t *testing.T) {
	res := review.Result{Problems: []review.Problem{{Severity: review.SeverityInfo}}}
	got, publish, _ := Policy{}.Apply(res)
	if !publish || len(got.Problems) != 1 {
		t.Fatalf("publish=%v problems=%d, want true 1", publish, len(got.Problems))
	}
	_, publish, _ = Policy{}.Apply(review.Result{})
	if !publish {
		t.Fatal("empty policy suppressed an empty result; want publish as default")
	}
}

func TestPolicyApplyDoesNotAliasInput(t *testing.T) {
	in := review.Result{
		Problems:  []review.Problem{{Severity: review.SeverityHigh, Message: "m"}},
		Summaries: []review.Summary{{Markdown: "s"}},
		Skip:      &review.Skip{Reason: "lgtm"},
	}
	got, _, _ := Policy{}.Apply(in)
	got.Problems[0].Message = "changed"
	got.Summaries[0].Markdown = "changed"
	got.Skip.Reason = "changed"
	if in.Problems[0].Message != "m" || in.Summaries[0].Markdown != "s" || in.Skip.Reason != "lgtm" {
		t.Fatalf("Apply result shares memory with its input: %+v", in)
	}
}
