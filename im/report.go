package im

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// The words every report uses, in one place. Dialects add markup around
// them, never their own wording: they read them from Report.Words.
const (
	TextNoProblems  = "No problems found."
	TextProblems    = "Problems"
	TextNotReviewed = "Not reviewed"
	TextViewChange  = "View change"
	TextSuggestion  = "Suggestion"
	TextLeftOut     = "Left out of the review"
	TextAuthor      = "Author"
	TextReviewedBy  = "Reviewed by"
	TextFailed      = "Review failed."
	TextCost        = "cost"
	TextCached      = "cached"
	TextPartial     = "Partial review"
	TextFoundSoFar  = "what it found until then is below"
	TextOverBudget  = "diff over the model's prompt budget (agent.llm.context_window); the model was told to read it with fetch_more_context"
)

// Words are the labels a dialect shows around the report's content. A
// renderer takes every word it prints from here (or from the sentences
// BuildReport made: Verdict, Skip, LeftOutLine), so the report reads the
// same on every platform and changing a word is one edit.
type Words struct {
	// Problems labels the counts ("Problems: 1 high") and problem ranges.
	Problems string
	// Suggestion labels a problem's suggested fix.
	Suggestion string
	// ViewChange is the text of the link to the change.
	ViewChange string
	// Author labels the author's mention where a platform shows it apart.
	Author string
	// ReviewedBy starts the footer naming the agent and model.
	ReviewedBy string
	// Cost labels the review's cost in the footer, Cached the share of
	// the prompt read from the provider's cache ("cost $0.012 · 84% cached").
	Cost   string
	Cached string
	// Partial starts the notice of a review stopped before it was done
	// (a per-review cap), FoundSoFar ends it.
	Partial    string
	FoundSoFar string
}

// English is the wording BuildReport uses.
var English = Words{Problems: TextProblems, Suggestion: TextSuggestion, ViewChange: TextViewChange, Author: TextAuthor,
	ReviewedBy: TextReviewedBy, Cost: TextCost, Cached: TextCached, Partial: TextPartial, FoundSoFar: TextFoundSoFar}

// Report is the neutral report document built once from a Message; the
// plain-text, Markdown (Feishu, DingTalk, WeCom), Slack and webhook
// renderers only mark it up and fit it to their platform's limits. All
// text in it is sanitized (and the description has credentials redacted)
// but not escaped for any dialect.
type Report struct {
	// RunID is the review run, for "aicr audit show <run>" pointers.
	RunID int64
	// Words are the labels renderers put around the content.
	Words Words
	// Title is the headline (Title).
	Title string
	// Description is the first line of the change description.
	Description string
	// Change is the change's metadata for machine formats (the webhook):
	// sanitized, the full description with credentials redacted. Zero
	// when the message carried no change.
	Change ChangeInfo
	// Problems are sanitized and sorted (SortProblems).
	Problems []review.Problem
	// Verdict is "No problems found.", "Problems: 2 critical, 1 high" or
	// the Skip sentence; it never claims a clean result above findings.
	Verdict string
	// Counts is CountsText of Problems; "" when there are none.
	Counts string
	// Summaries are the agent's, sanitized, empty ones dropped.
	Summaries []review.Summary
	// Skip explains, as a sentence, why the change was not reviewed; ""
	// when it was (a clean "lgtm" is a review, not a skip).
	Skip string
	// SkipReason is the reviewer's skip as it reported it (sanitized),
	// nil when it reported none; for machine formats, which keep "lgtm".
	SkipReason *review.Skip
	// LeftOut lists files whose content was not reviewed and why, as
	// "path (reason)", for the "Left out of the review" line.
	LeftOut []string
	// LeftOutMore counts left-out files beyond those listed.
	LeftOutMore int
	// ChangeURL links to the change; "" when unknown.
	ChangeURL string
	// Author are the author's chat identities, for mentions; may be nil.
	Author *Identity
	// Footer names the reviewer: "Reviewed by llm (gpt-4o)"; "" when the
	// message did not say or the review failed. Every dialect prints it
	// last.
	Footer string
	// Notice says, for a run that failed, what failed, how much of the
	// review there is, and the commands to inspect and retry the run; ""
	// for a review that ran whole. Every dialect prints it before the
	// skip note.
	Notice string
	// Failure is the failed run's reason as the message carried it
	// (sanitized), for machine formats; "" when the review ran whole.
	Failure string
	// Stopped is why a review that ran stopped before it was done (a
	// per-review cap), for machine formats; its sentence is the Notice.
	Stopped string `json:",omitempty"`

	// Kind is what the report is about; the zero value is a review.
	Kind ReportKind `json:",omitempty"`
	// Entries are the Problems as findings (same index), or empty when
	// findings are not tracked (im/findings.go).
	Entries []Entry `json:",omitempty"`
	// Repeats are findings this channel was already told about, seen
	// again, as one line each (repeat = "mention").
	Repeats []Repeat `json:",omitempty"`
	// Followups are the earlier reports whose findings a change resolved
	// (Kind == KindResolution).
	Followups []Followup `json:",omitempty"`
	// Digest is the periodic summary (Kind == KindDigest).
	Digest *Digest `json:",omitempty"`
}

// ChangeInfo is the reviewed change's metadata as a report carries it.
type ChangeInfo struct {
	VCS, Repo, Revision, Author string
	// Description is the whole description, credentials redacted.
	Description string
}

// maxLeftOut bounds the files named on the "left out" line; a huge
// import commit would otherwise fill the message with file names.
const maxLeftOut = 10

// BuildReport turns msg into the neutral report every dialect renders:
// msg.Report when the message carries its planned report.
func BuildReport(msg Message) Report {
	if msg.Report != nil {
		return *msg.Report
	}
	r := Report{RunID: msg.RunID, Words: English, Title: Title(msg), Author: msg.Author, ChangeURL: oneLine(msg.ChangeURL)}
	res := SanitizeResult(msg.Result)
	r.Problems, r.SkipReason = res.Problems, res.Skip
	tracked := msg.Findings != nil && len(msg.Findings.Tracked) == len(msg.Result.Problems)
	if tracked {
		r.buildTracked(msg.Result, msg.Findings)
	}
	for _, s := range res.Summaries {
		s.Title = oneLine(s.Title)
		s.Markdown = strings.TrimSpace(s.Markdown)
		if s.Title != "" || s.Markdown != "" {
			r.Summaries = append(r.Summaries, s)
		}
	}
	if c := msg.Change; c != nil {
		// A commit message is posted as written, so credentials pasted into
		// it are blanked the way code findings never quote them.
		r.Change = ChangeInfo{VCS: string(c.VCS), Repo: Sanitize(c.Repo), Revision: Sanitize(c.Revision),
			Author: Sanitize(c.Author), Description: redact.Text(Sanitize(c.Description))}
		r.Description = FirstLine(r.Change.Description)
		r.LeftOut, r.LeftOutMore = leftOut(c.Files)
	}
	for _, p := range msg.Clipped {
		if len(r.LeftOut) == maxLeftOut {
			r.LeftOutMore++
			continue
		}
		r.LeftOut = append(r.LeftOut, oneLine(p)+" ("+TextOverBudget+")")
	}
	if res.Skip != nil {
		r.Skip = SkipSentence(res.Skip.Reason)
	}
	// The reason quotes a server's answer, which may echo a credential.
	if r.Failure = redact.Text(oneLine(msg.Failure)); r.Failure != "" {
		r.Notice = failureNotice(r.Failure, r.RunID, len(r.Problems) > 0)
	}
	if r.Stopped = oneLine(msg.Stopped); r.Stopped != "" && r.Failure == "" {
		r.Notice = r.Words.Partial + ": " + r.Stopped + "; " + r.Words.FoundSoFar + "."
	}
	// A failed run was not reviewed by the agent the footer would name.
	if agent := oneLine(msg.Reviewer.Agent); agent != "" && r.Failure == "" {
		r.Footer = r.Words.ReviewedBy + " " + agent
		if model := oneLine(msg.Reviewer.Model); model != "" {
			r.Footer += " (" + model + ")"
		}
		r.Footer += costNote(r.Words, msg.Reviewer)
	}
	switch {
	case len(r.Problems) > 0:
		r.Counts = CountsText(r.Problems)
		r.Verdict = r.Words.Problems + ": " + r.Counts
	case r.Failure != "":
		r.Verdict = TextFailed
	case tracked && (len(msg.Result.Problems) > 0 || msg.Findings.StillOpen > 0):
		r.Verdict = stillOpenVerdict(len(r.Repeats) + msg.Findings.StillOpen)
	case r.Skip != "":
		r.Verdict = r.Skip
	default:
		r.Verdict = TextNoProblems
	}
	return r
}

// costNote is the footer's " · cost $0.0123 · 84% cached": what the
// review cost where prices are configured, and the share of its prompt the
// provider read from its cache where any was; "" when neither is known.
func costNote(w Words, rv Reviewer) string {
	var s string
	if rv.CostUSD != nil {
		s += " · " + w.Cost + " $" + formatUSD(*rv.CostUSD)
	}
	if rv.PromptTokens > 0 && rv.CachedTokens > 0 {
		s += fmt.Sprintf(" · %d%% %s", rv.CachedTokens*100/rv.PromptTokens, w.Cached)
	}
	return s
}

// formatUSD is a cost to four significant places under a dollar (a
// review usually costs cents) and to the cent above.
func formatUSD(v float64) string {
	if v >= 1 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// failureNotice is the sentence a failed run's report carries: the
// builtin findings of a partial review come with what failed; a bare
// notice says the review could not be done. Both name the run's commands,
// so whoever reads it can see the whole error and retry once it is fixed.
func failureNotice(reason string, runID int64, partial bool) string {
	s := "The review could not be completed: " + reason + "."
	if partial {
		s = "Partial review: the model review failed (" + reason + "), so only the builtin rules ran."
	}
	if runID > 0 {
		id := strconv.FormatInt(runID, 10)
		s += " Inspect it with `aicr audit show " + id + "`; once the cause is fixed, `aicr run retry " + id + "` sends the full review."
	}
	return s
}

// SkipNote is the skip sentence when the verdict does not already say it
// (a skip that still came with problems), else "".
func (r Report) SkipNote() string {
	if r.Skip == r.Verdict {
		return ""
	}
	return r.Skip
}

// ProblemRange labels the problems from..to (1-based) of the report's,
// for platforms that post them in batches: "Problems 1–10 of 23".
func (r Report) ProblemRange(from, to int) string {
	return fmt.Sprintf("%s %d–%d of %d", r.Words.Problems, from, to, len(r.Problems))
}

// LeftOutLine is the sentence naming the files not reviewed, or "".
func (r Report) LeftOutLine() string {
	if len(r.LeftOut) == 0 {
		return ""
	}
	s := TextLeftOut + ": " + strings.Join(r.LeftOut, ", ")
	if r.LeftOutMore > 0 {
		s += fmt.Sprintf(" and %d more", r.LeftOutMore)
	}
	return s + "."
}

// SkipSentence explains a skip reason to a person. Reasons that mean the
// reviewer looked and found nothing ("lgtm") are not skips: "".
func SkipSentence(reason string) string {
	reason = oneLine(reason)
	switch reason {
	case "lgtm", ReasonNoProblemsSuppressed:
		return ""
	case "":
		return TextNotReviewed + ": the reviewer gave no reason."
	case "no_reviewable_code":
		return TextNotReviewed + ": the change has no code to review (only deletions, binaries, directories or excluded files)."
	case "no_files_in_scope":
		return TextNotReviewed + ": no file in the change is in the repository's review scope."
	case "no_output_publisher":
		return TextNotReviewed + ": the reviewer finished without publishing a result."
	}
	return TextNotReviewed + ": " + strings.ReplaceAll(reason, "_", " ") + "."
}

// leftOut names the files whose content was not reviewed and why.
// Deleted files and directories have no content to review, so they are
// not "left out".
func leftOut(files []vcs.FileChange) ([]string, int) {
	var out []string
	more := 0
	for _, f := range files {
		why := oneLine(f.Skipped)
		if why == "" || why == vcs.SkipDeleted || why == vcs.SkipDirectory {
			continue
		}
		if len(out) == maxLeftOut {
			more++
			continue
		}
		out = append(out, oneLine(f.Path)+" ("+why+")")
	}
	return out, more
}
