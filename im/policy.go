package im

import (
	"strings"

	"github.com/aicr-dev/aicr/review"
)

// NoProblemsPolicy says what a channel does with a review that, after
// severity filtering, has no problems left.
type NoProblemsPolicy string

const (
	// NoProblemsPublish posts the report anyway ("no problems found",
	// summaries, or the skip reason).
	NoProblemsPublish NoProblemsPolicy = "publish"
	// NoProblemsSuppress posts nothing.
	NoProblemsSuppress NoProblemsPolicy = "suppress"
	// NoProblemsPublishIfSummary posts only when the agent published at
	// least one non-empty summary.
	NoProblemsPublishIfSummary NoProblemsPolicy = "publish_if_summary"
)

// Valid reports whether p is one of the three policies.
func (p NoProblemsPolicy) Valid() bool {
	switch p {
	case NoProblemsPublish, NoProblemsSuppress, NoProblemsPublishIfSummary:
		return true
	}
	return false
}

// ReasonNoProblemsSuppressed is the reason Apply gives for not publishing.
// It is the same string as the run-level skip reason recorded when every
// selected channel suppresses, so the pipeline can compare reasons directly.
const ReasonNoProblemsSuppressed = "no_problems_suppressed"

// Policy decides, per channel, which problems are published and whether a
// review is published at all.
type Policy struct {
	// MinSeverity drops problems ranked below it. Empty keeps everything.
	MinSeverity review.Severity
	// NoProblems applies when no problems survive the filter. Empty (and,
	// defensively, any unknown value) behaves as publish, because dropping
	// a report silently is worse than posting one too many; config
	// validation rejects unknown values before they get here.
	NoProblems NoProblemsPolicy
}

// Apply filters res for one channel and decides whether to publish it.
//
// Problems ranked below MinSeverity are dropped; summaries and skip are
// kept as they are. If any problem remains the result is published. If none
// remains (including a result whose Skip is set, and one whose problems
// were all below the threshold), NoProblems decides: publish publishes,
// suppress does not, publish_if_summary publishes only when some summary
// has a non-blank title or body. When publish is false, reason is
// ReasonNoProblemsSuppressed; otherwise it is empty.
//
// The returned result never shares slices with res.
func (p Policy) Apply(res review.Result) (filtered review.Result, publish bool, reason string) {
	minRank := p.MinSeverity.Rank() // -1 for empty: keeps every problem
	filtered.Problems = make([]review.Problem, 0, len(res.Problems))
	for _, pr := range res.Problems {
		if pr.Severity.Rank() >= minRank {
			filtered.Problems = append(filtered.Problems, pr)
		}
	}
	filtered.Summaries = append(make([]review.Summary, 0, len(res.Summaries)), res.Summaries...)
	if res.Skip != nil {
		skip := *res.Skip
		filtered.Skip = &skip
	}

	if len(filtered.Problems) > 0 {
		return filtered, true, ""
	}
	switch p.NoProblems {
	case NoProblemsSuppress:
		return filtered, false, ReasonNoProblemsSuppressed
	case NoProblemsPublishIfSummary:
		if hasSummary(filtered.Summaries) {
			return filtered, true, ""
		}
		return filtered, false, ReasonNoProblemsSuppressed
	default:
		return filtered, true, ""
	}
}

// An agent that calls publish_summary with nothing in it has not said
// anything worth a message.
func hasSummary(ss []review.Summary) bool {
	for _, s := range ss {
		if strings.TrimSpace(s.Title) != "" || strings.TrimSpace(s.Markdown) != "" {
			return true
		}
	}
	return false
}
