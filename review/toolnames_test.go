package review_test

import (
	"testing"

	"github.com/aicr-dev/aicr/review"
)

func TestCanonicalToolName(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for not an aicr tool
	}{
		{"aicr.report_problem", "aicr.report_problem"},
		{"aicr_report_problem", "aicr.report_problem"},
		{"aicr-output_aicr_report_problem", "aicr.report_problem"}, // Kilo
		{"mcp__aicr__report_problem", "aicr.report_problem"},       // Claude Code
		{"mcp__aicr-output__aicr_report_problem", "aicr.report_problem"},
		{"mcp__aicr__aicr.report_problem", "aicr.report_problem"},
		{"functions.aicr_report_problem", "aicr.report_problem"},
		{"  AICR.Report_Problem \n", "aicr.report_problem"},
		{"aicr . report_problem", "aicr.report_problem"},
		{"aicr/report_problem", "aicr.report_problem"},
		{"report_problem", "aicr.report_problem"},
		{"aicr.publish_summary", "aicr.publish_summary"},
		{"mcp__aicr__publish_summary", "aicr.publish_summary"},
		{"aicr_skip", "aicr.skip"},
		{"aicr-output_aicr_skip", "aicr.skip"},
		{"AICR_FETCH_MORE_CONTEXT", "aicr.fetch_more_context"},
		{"mcp__aicr__try_blame", "aicr.try_blame"},
		{"aicr-output_aicr_try_blame", "aicr.try_blame"},

		{"", ""},
		{"   ", ""},
		{"aicr", ""},
		{"aicr.report", ""},
		{"aicr.report_problems", ""},
		{"mcp__github__report_problem", ""}, // another server's tool
		{"other_skip", ""},
		{"xreport_problem", ""},
		{"aicr.skip.now", ""},
		{"aicr.report-problem", ""},
	}
	for _, tt := range tests {
		got, ok := review.CanonicalToolName(tt.in)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("CanonicalToolName(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	// Every canonical name and its underscore alias round-trip.
	for _, name := range review.ToolNames {
		for _, in := range []string{name, review.UnderscoreToolName(name)} {
			if got, ok := review.CanonicalToolName(in); !ok || got != name {
				t.Errorf("CanonicalToolName(%q) = %q, %v", in, got, ok)
			}
		}
	}
}

func TestParseToolNaming(t *testing.T) {
	for in, want := range map[string]review.ToolNaming{
		"": review.ToolNamingDotted, "dotted": review.ToolNamingDotted,
		"Underscore": review.ToolNamingUnderscore, " both ": review.ToolNamingBoth,
	} {
		if got, err := review.ParseToolNaming(in); err != nil || got != want {
			t.Errorf("ParseToolNaming(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := review.ParseToolNaming("camel"); err == nil {
		t.Error("ParseToolNaming(camel) accepted")
	}
}
