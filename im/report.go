package im

import (
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// The English words of every report, for code and tests that name them;
// the catalogue (catalog.go) is where they live, in every language, and
// BuildReport takes them from there in the report's language.
var (
	TextNoProblems  = LangEnglish.T(KeyNoProblems)
	TextProblems    = LangEnglish.T(KeyProblems)
	TextNotReviewed = LangEnglish.T(KeyNotReviewedLabel)
	TextViewChange  = LangEnglish.T(KeyViewChange)
	TextSuggestion  = LangEnglish.T(KeySuggestion)
	TextLeftOut     = "Left out of the review"
	TextAuthor      = LangEnglish.T(KeyAuthor)
	TextReviewedBy  = LangEnglish.T(KeyReviewedBy)
	TextFailed      = LangEnglish.T(KeyFailed)
)

// Words are the labels a dialect shows around the report's content. A
// renderer takes every word it prints from here (or from the sentences
// BuildReport made: Verdict, Skip, LeftOutLine), so the report reads the
// same on every platform, in the report's language, and changing a word
// is one edit of the catalogue.
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
	// StillOpen heads the repeats' lines; Finding is the text of a
	// finding's link; Reopened marks a finding that came back.
	StillOpen string `json:",omitempty"`
	Finding   string `json:",omitempty"`
	Reopened  string `json:",omitempty"`
	// Colon ends a label ("Problems:", "问题："); Label adds it.
	Colon string `json:",omitempty"`
	// Severities names each severity ("high": "高"); Severity reads it.
	Severities map[string]string `json:",omitempty"`
}

// Label is word as a label, with the language's colon.
func (w Words) Label(word string) string {
	if w.Colon == "" {
		return word + ":"
	}
	return word + w.Colon
}

// Severity is sev as the report's language names it; a severity the
// catalogue does not know shows as it is.
func (w Words) Severity(sev review.Severity) string {
	if s, ok := w.Severities[string(sev)]; ok {
		return s
	}
	return string(sev)
}

// fill completes w with l's words where it has none: a report an older
// aicr stored has only the first five.
func (w Words) fill(l Language) Words {
	d := l.Words()
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&w.Problems, d.Problems}, {&w.Suggestion, d.Suggestion}, {&w.ViewChange, d.ViewChange}, {&w.Author, d.Author},
		{&w.ReviewedBy, d.ReviewedBy}, {&w.StillOpen, d.StillOpen}, {&w.Finding, d.Finding}, {&w.Reopened, d.Reopened},
		{&w.Colon, d.Colon},
	} {
		if *f.dst == "" {
			*f.dst = f.src
		}
	}
	if w.Severities == nil {
		w.Severities = d.Severities
	}
	return w
}

// English is the wording of an English report.
var English = LangEnglish.Words()

// Report is the neutral report document built once from a Message; the
// plain-text, Markdown (Feishu, DingTalk, WeCom), Slack and webhook
// renderers only mark it up and fit it to their platform's limits. All
// text in it is sanitized (and the description has credentials redacted)
// but not escaped for any dialect.
type Report struct {
	// RunID is the review run, for "aicr audit show <run>" pointers.
	RunID int64
	// Language is the language of every word and sentence in it, kept
	// with the planned report so a retry sends what was planned; "" is
	// English (a report stored before reports had a language).
	Language Language `json:",omitempty"`
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
	// Footer names the reviewer and the run: "Reviewed by llm (gpt-4o) ·
	// run 7"; the reviewer is left out when the message did not say or
	// the review failed, the run when there is none. Every dialect prints
	// it last; the run is the internal id the title leaves out, for
	// "aicr audit show".
	Footer string
	// RunURL is the run's web page, which the footer's run links to
	// where the dialect has links; "" without [web] base_url.
	RunURL string `json:",omitempty"`
	// RunLabel is the footer's last words naming the run ("run 7"), the
	// text of that link; "" when there is no run.
	RunLabel string `json:",omitempty"`
	// Reviewer is the agent and model that reviewed the change, for
	// machine formats; zero when unknown or the review failed.
	Reviewer Reviewer `json:",omitzero"`
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
	// Budget is the spent [[budget]] that changed how the change was
	// reviewed (its sentence is the Notice), for machine formats; nil
	// when none applied.
	Budget *BudgetNotice `json:",omitempty"`

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
	// Shelved marks a Perforce shelf (vcs.Change.Shelved).
	Shelved bool `json:",omitempty"`
}

// maxLeftOut bounds the files named on the "left out" line; a huge
// import commit would otherwise fill the message with file names.
const maxLeftOut = 10

// BuildReport turns msg into the neutral report every dialect renders:
// msg.Report when the message carries its planned report.
func BuildReport(msg Message) Report {
	if msg.Report != nil {
		r := *msg.Report
		r.Words = r.Words.fill(r.Language)
		return r
	}
	lang := msg.Language.Norm()
	r := Report{RunID: msg.RunID, Language: lang, Words: lang.Words(), Title: Title(msg), Author: msg.Author,
		ChangeURL: oneLine(msg.ChangeURL)}
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
			Author: Sanitize(c.Author), Description: redact.Text(Sanitize(c.Description)), Shelved: c.Shelved}
		r.Description = FirstLine(r.Change.Description)
		r.LeftOut, r.LeftOutMore = leftOut(lang, c.Files)
	}
	for _, p := range msg.Clipped {
		if len(r.LeftOut) == maxLeftOut {
			r.LeftOutMore++
			continue
		}
		r.LeftOut = append(r.LeftOut, oneLine(p)+" ("+lang.T(KeyFileOverPrompt)+")")
	}
	if res.Skip != nil {
		r.Skip = lang.SkipSentence(res.Skip.Reason)
	}
	// The reason quotes a server's answer, which may echo a credential.
	if r.Failure = redact.Text(oneLine(msg.Failure)); r.Failure != "" {
		r.Notice = failureNotice(lang, r.Failure, r.RunID, len(r.Problems) > 0)
	} else if msg.Budget != nil {
		// A failed run's notice says what failed; a review that ran says
		// why it ran without the configured model.
		b := *msg.Budget
		r.Budget, r.Notice = &b, lang.BudgetSentence(b)
	}
	if r.Stopped = oneLine(msg.Stopped); r.Stopped != "" && r.Failure == "" {
		r.Notice = lang.T(KeyStoppedNotice, r.Stopped)
	}
	// A failed run was not reviewed by the agent the footer would name.
	var footer []string
	if agent := oneLine(msg.Reviewer.Agent); agent != "" && r.Failure == "" {
		r.Reviewer = Reviewer{Agent: agent, Model: oneLine(msg.Reviewer.Model)}
		by := lang.T(KeyFooter, agent)
		if r.Reviewer.Model != "" {
			by = lang.T(KeyFooterModel, agent, r.Reviewer.Model)
		}
		footer = append(footer, by+costNote(lang, msg.Reviewer))
	}
	if r.RunID > 0 {
		r.RunLabel = lang.T(KeyFooterRun, strconv.FormatInt(r.RunID, 10))
		r.RunURL = SafeLink(msg.RunURL)
		footer = append(footer, r.RunLabel)
	}
	r.Footer = strings.Join(footer, " · ")
	switch {
	case len(r.Problems) > 0:
		r.Counts = lang.CountsText(r.Problems)
		r.Verdict = lang.T(KeyVerdictProblems, r.Counts)
	case r.Failure != "":
		r.Verdict = lang.T(KeyFailed)
	case tracked && (len(msg.Result.Problems) > 0 || msg.Findings.StillOpen > 0):
		r.Verdict = stillOpenVerdict(lang, len(r.Repeats)+msg.Findings.StillOpen)
	case r.Skip != "":
		r.Verdict = r.Skip
	default:
		r.Verdict = lang.T(KeyNoProblems)
	}
	return r
}

// costNote is the footer's " · cost $0.0123 · 84% cached": what the
// review cost where prices are configured, and the share of its prompt the
// provider read from its cache where any was; "" when neither is known.
func costNote(lang Language, rv Reviewer) string {
	var s string
	if rv.CostUSD != nil {
		s += " · " + lang.T(KeyFooterCost, formatUSD(*rv.CostUSD))
	}
	if rv.PromptTokens > 0 && rv.CachedTokens > 0 {
		s += " · " + lang.T(KeyFooterCached, rv.CachedTokens*100/rv.PromptTokens)
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
func failureNotice(lang Language, reason string, runID int64, partial bool) string {
	s := lang.T(KeyFailure, reason)
	if partial {
		s = lang.T(KeyFailurePartial, reason)
	}
	if runID > 0 {
		id := strconv.FormatInt(runID, 10)
		s = lang.T(KeyFailureCommands, s, id, id)
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
// for platforms that post them in batches: "Problems 1–10 of 23". A
// batch holding every problem is not a range of them: just "Problems".
func (r Report) ProblemRange(from, to int) string {
	if from <= 1 && to >= len(r.Problems) {
		return r.Words.Problems
	}
	return r.Language.T(KeyRange, r.Words.Problems, from, to, len(r.Problems))
}

// LeftOutLine is the sentence naming the files not reviewed, or "".
func (r Report) LeftOutLine() string {
	if len(r.LeftOut) == 0 {
		return ""
	}
	list := strings.Join(r.LeftOut, r.Language.T(KeyListSep))
	if r.LeftOutMore > 0 {
		return r.Language.T(KeyLeftOutMore, list, r.LeftOutMore)
	}
	return r.Language.T(KeyLeftOut, list)
}

// SkipSentence is the English LangEnglish.SkipSentence.
func SkipSentence(reason string) string { return LangEnglish.SkipSentence(reason) }

// SkipSentence explains a skip reason to a person. Reasons that mean the
// reviewer looked and found nothing ("lgtm") are not skips: "". A reason
// the catalogue does not know is the reviewer's own word, shown as it is.
func (l Language) SkipSentence(reason string) string {
	reason = oneLine(reason)
	switch reason {
	case "lgtm", ReasonNoProblemsSuppressed:
		return ""
	case "":
		return l.T(KeySkipNoReason)
	case "no_reviewable_code":
		return l.T(KeySkipNoCode)
	case "no_files_in_scope":
		return l.T(KeySkipNoScope)
	case "no_output_publisher":
		return l.T(KeySkipNoPublisher)
	case ReasonBudgetSpent:
		return l.T(KeySkipBudget)
	}
	return l.T(KeySkipOther, strings.ReplaceAll(reason, "_", " "))
}

// fileSkipKeys are the catalogue's words for vcs.FileChange.Skipped.
var fileSkipKeys = map[string]Key{vcs.SkipBinary: KeyFileBinary, vcs.SkipExcluded: KeyFileExcluded,
	vcs.SkipTooLarge: KeyFileTooLarge, vcs.SkipFileCap: KeyFileOverFiles, vcs.SkipReviewBytesCap: KeyFileOverBytes}

// leftOut names the files whose content was not reviewed and why.
// Deleted files and directories have no content to review, so they are
// not "left out".
func leftOut(lang Language, files []vcs.FileChange) ([]string, int) {
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
		if k, ok := fileSkipKeys[why]; ok {
			why = lang.T(k)
		}
		out = append(out, lang.T(KeyLeftOutItem, oneLine(f.Path), why))
	}
	return out, more
}
