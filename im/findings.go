package im

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// The parts of a report that come from findings living across commits
// (package findings): which problems are new, which were reported before
// and are only mentioned, what a later change resolved, and the periodic
// digest. A report without them (tracking off, an older aicr's stored
// report) renders as before.

// ReportKind says what a report is about.
type ReportKind string

const (
	// KindReview is a review's findings (the zero value).
	KindReview ReportKind = ""
	// KindResolution tells a channel that findings it was told about
	// were resolved by a later change (Report.Followups).
	KindResolution ReportKind = "resolution"
	// KindDigest is a [[digest]]'s periodic summary (Report.Digest).
	KindDigest ReportKind = "digest"
)

// Entry is what a report knows of one of its Problems as a finding; the
// report's Entries are aligned with its Problems (same index), or empty.
type Entry struct {
	FindingID int64 `json:"finding_id"`
	// State is "" for a finding this report announces, "reopened" for one
	// that came back, "resolved" or "dismissed" in a report a platform
	// edits after the fact (Slack's chat.update).
	State string `json:"state,omitempty"`
	// Note says what happened since, in the edited report: "Resolved in
	// r3 by bob".
	Note string `json:"note,omitempty"`
	// Page is the finding's signed web link; "" when [web] is off.
	Page string `json:"page,omitempty"`
	// Actions are the finding's signed action links (useful, false
	// positive, won't fix), in findings.ReportActions order; empty when
	// [web] is off. Slack also shows them as buttons.
	Actions []ActionLink `json:"actions,omitempty"`
}

// ActionLink is one action a reader can take on a finding.
type ActionLink struct {
	// Action is the findings.Action ("useful", "false_positive", ...).
	Action string `json:"action"`
	// Label is its text, from Words.
	Label string `json:"label"`
	// URL is the signed link; "" when [web] is off (Slack buttons still
	// work over Socket Mode).
	URL string `json:"url,omitempty"`
}

// Repeat is a finding an earlier report of this channel announced and
// this review saw again, shown as one compact line (repeat = "mention").
type Repeat struct {
	FindingID int64  `json:"finding_id"`
	File      string `json:"file"`
	Line      int    `json:"line"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	// Since is the revision that first reported it, as its VCS names it
	// ("r120", "change 120").
	Since string `json:"since"`
	// Commits is how many reviews reported it, this one included.
	Commits int    `json:"commits"`
	Page    string `json:"page,omitempty"`
	// Text is the whole line as BuildReport words it, for dialects that
	// print it as it is.
	Text string `json:"text"`
}

// Followup is what a resolution report says about one earlier report:
// which of its findings a later change resolved.
type Followup struct {
	// RunID and Revision are the earlier report's run and change.
	RunID    int64  `json:"run_id"`
	Revision string `json:"revision"`
	// Title is the earlier report's title, so the follow-up names it.
	Title string `json:"title"`
	// MessageID is the platform's id of the earlier report's first part
	// (Slack: "<channel id>:<ts>"), for platforms that edit or thread; ""
	// when it was not recorded.
	MessageID string `json:"message_id,omitempty"`
	// Updated is the earlier report with these findings marked resolved
	// (Entries' State and Note), for platforms that edit the message.
	Updated  *Report    `json:"updated,omitempty"`
	Resolved []Resolved `json:"resolved"`
}

// Resolved is one finding a later change resolved.
type Resolved struct {
	FindingID int64  `json:"finding_id"`
	File      string `json:"file"`
	Line      int    `json:"line"`
	Severity  string `json:"severity"`
	Category  string `json:"category"`
	Message   string `json:"message"`
	// Revision resolved it ("r3", "change 3"); Author committed it.
	Revision string `json:"revision"`
	Author   string `json:"author,omitempty"`
	Page     string `json:"page,omitempty"`
}

// Digest is a [[digest]]'s summary of a period: what is open, what came
// and went, how precise the findings were, what the reviews cost.
type Digest struct {
	// Name is the [[digest]]'s name; Period names the period ("2026-12-01
	// 09:00 – 2026-12-02 09:00 UTC").
	Name   string   `json:"name"`
	Period string   `json:"period"`
	Repos  []string `json:"repos,omitempty"`
	// Paths are the path prefixes it counts; empty means every path.
	Paths []string `json:"paths,omitempty"`
	// Open counts every open (or reopened) finding it covers at the end
	// of the period; OpenByPath may list only the first paths of them.
	Open int `json:"open"`
	// OpenByPath counts the open findings per path, oldest first.
	OpenByPath []DigestPath `json:"open_by_path"`
	// MorePaths counts the paths with open findings OpenByPath leaves
	// out (it is bounded, so the stored report stays small).
	MorePaths int `json:"more_paths,omitempty"`
	New       int `json:"new"`
	Resolved  int `json:"resolved"`
	Dismissed int `json:"dismissed"`
	// FalsePositiveRate is dismissed-as-false-positive over reported in
	// the period, 0..1; negative when nothing was reported.
	FalsePositiveRate float64 `json:"false_positive_rate"`
	// Reported counts the findings first reported in the period and
	// FalsePositives those of them dismissed as false positives: the
	// rate's two terms.
	Reported       int `json:"reported"`
	FalsePositives int `json:"false_positives"`
	// Reviews counts the runs that finished in the period; CostUSD is
	// their agents' cost, when [agent.llm] prices are configured.
	Reviews int     `json:"reviews"`
	CostUSD float64 `json:"cost_usd"`
	// Budgets are the [[budget]]s covering its repos, measured in their
	// current period when the digest was built.
	Budgets []DigestBudget `json:"budgets,omitempty"`
}

// DigestPath is one path's open findings in a digest.
type DigestPath struct {
	Path string `json:"path"`
	Open int    `json:"open"`
	// OldestDays is the age of its oldest open finding, in days.
	OldestDays int `json:"oldest_days"`
}

// The English words of the findings parts, for code and tests that
// name them; the catalogue holds them in every language.
var (
	TextNoNewProblems = LangEnglish.T(KeyNoNewProblems)
	TextStillOpen     = LangEnglish.T(KeyStillOpen)
	TextFinding       = LangEnglish.T(KeyFinding)
	TextResolved      = "Resolved"
	TextEarlierReport = "Earlier report"
	TextReopened      = LangEnglish.T(KeyReopened)
)

// actionKeys are the catalogue's words for each findings.Action.
var actionKeys = map[string]Key{"useful": KeyActUseful, "false_positive": KeyActFalsePos, "wont_fix": KeyActWontFix,
	"accepted_risk": KeyActAcceptedRisk, "reopen": KeyActReopen}

// ActionLabels are the readers' English words for each findings.Action.
var ActionLabels = func() map[string]string {
	m := map[string]string{}
	for a, k := range actionKeys {
		m[a] = LangEnglish.T(k)
	}
	return m
}()

// ActionLabel is the English label of action, or the action itself when
// it has none.
func ActionLabel(action string) string { return LangEnglish.ActionLabel(action) }

// ActionLabel is the label of action in l, or the action itself when it
// has none.
func (l Language) ActionLabel(action string) string {
	if k, ok := actionKeys[action]; ok {
		return l.T(k)
	}
	return action
}

// Tracked is what the findings store said of one problem of a Message:
// which finding it is, what it is to the channel (findings.Class: new,
// repeat, reopened, dismissed) and its links.
type Tracked struct {
	FindingID int64  `json:"finding_id"`
	Class     string `json:"class"`
	// Since is the revision that first reported it, as its VCS names it.
	Since string `json:"since,omitempty"`
	// Commits is how many reviews reported it, this one included.
	Commits int          `json:"commits,omitempty"`
	Page    string       `json:"page,omitempty"`
	Actions []ActionLink `json:"actions,omitempty"`
}

// The classes of Tracked, as package findings names them.
const (
	ClassNew       = "new"
	ClassRepeat    = "repeat"
	ClassReopened  = "reopened"
	ClassDismissed = "dismissed"
	// ClassDuplicate is a problem an earlier problem of the same review
	// already reported (same code, file and category): shown once.
	ClassDuplicate = "duplicate"
)

// Findings is how a message's problems live across commits: Tracked is
// aligned with Message.Result.Problems (same index), Repeat is the
// channel's policy, and StillOpen counts the repeats a policy left out
// (repeat = "omit"), for the verdict.
type Findings struct {
	Tracked   []Tracked
	Repeat    RepeatPolicy
	StillOpen int
}

// isRepeat reports whether t is shown as a repeat under policy r: a
// repeat, unless the channel wants every finding in full.
func (t Tracked) isRepeat(r RepeatPolicy) bool {
	return t.Class == ClassRepeat && r != RepeatFull
}

// ApplyFindings is Apply for a review whose problems are tracked:
// problems below MinSeverity go, dismissed findings never appear, repeats
// go under repeat = "omit" (counted in StillOpen), and NoProblems decides
// on the new and reopened findings alone unless repeat is "full": a
// review with only repeats has no new problems. f.Tracked must be aligned
// with res.Problems; the result is, with the filtered problems.
func (p Policy) ApplyFindings(res review.Result, f Findings) (review.Result, Findings, bool, string) {
	if len(f.Tracked) != len(res.Problems) {
		filtered, publish, reason := p.Apply(res)
		return filtered, Findings{Repeat: f.Repeat}, publish, reason
	}
	if f.Repeat == "" {
		f.Repeat = DefaultRepeat
	}
	minRank := p.MinSeverity.Rank()
	kept := review.Result{Problems: make([]review.Problem, 0, len(res.Problems))}
	out := Findings{Repeat: f.Repeat, StillOpen: f.StillOpen, Tracked: make([]Tracked, 0, len(res.Problems))}
	counting := 0
	for i, pr := range res.Problems {
		t := f.Tracked[i]
		switch {
		case pr.Severity.Rank() < minRank, t.Class == ClassDismissed, t.Class == ClassDuplicate:
			continue
		case t.isRepeat(f.Repeat) && f.Repeat == RepeatOmit:
			out.StillOpen++
			continue
		}
		if !t.isRepeat(f.Repeat) {
			counting++
		}
		kept.Problems = append(kept.Problems, pr)
		out.Tracked = append(out.Tracked, t)
	}
	// The rest (summaries, skip) and the verdict on them are Apply's.
	filtered, publish, reason := p.Apply(review.Result{Summaries: res.Summaries, Skip: res.Skip})
	filtered.Problems = kept.Problems
	if counting > 0 {
		return filtered, out, true, ""
	}
	return filtered, out, publish, reason
}

// buildTracked fills the report's problems, entries and repeat lines from
// a tracked result, sorted as every report sorts its problems.
func (r *Report) buildTracked(res review.Result, f *Findings) {
	type pair struct {
		p review.Problem
		t Tracked
	}
	pairs := make([]pair, len(res.Problems))
	for i, p := range res.Problems {
		pairs[i] = pair{p: sanitizeProblem(p), t: f.Tracked[i]}
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return compareProblems(a.p, b.p) })
	r.Problems = make([]review.Problem, 0, len(pairs))
	for _, pr := range pairs {
		if pr.t.isRepeat(f.Repeat) {
			r.Repeats = append(r.Repeats, newRepeat(r.Language, pr.p, pr.t))
			continue
		}
		e := Entry{FindingID: pr.t.FindingID, Page: SafeLink(pr.t.Page)}
		if pr.t.Class == ClassReopened {
			e.State = ClassReopened
		}
		for _, a := range pr.t.Actions {
			action := oneLine(a.Action)
			e.Actions = append(e.Actions, ActionLink{Action: action, Label: r.Language.ActionLabel(action), URL: SafeLink(a.URL)})
		}
		r.Problems = append(r.Problems, pr.p)
		r.Entries = append(r.Entries, e)
	}
}

// maxRepeatMessage bounds the message quoted on a repeat's line: the
// line reminds, the first report said it all.
const maxRepeatMessage = 160

// newRepeat words one repeat's line: "src/a.go:12 [high] message (still
// open since r120, 3 commits)".
func newRepeat(lang Language, p review.Problem, t Tracked) Repeat {
	msg := FirstLine(p.Message)
	if len([]rune(msg)) > maxRepeatMessage {
		msg = string([]rune(msg)[:maxRepeatMessage-1]) + "…"
	}
	rp := Repeat{FindingID: t.FindingID, File: oneLine(p.File), Line: p.Line, Severity: oneLine(string(p.Severity)),
		Message: msg, Since: oneLine(t.Since), Commits: t.Commits, Page: SafeLink(t.Page)}
	sev := lang.Words().Severity(review.Severity(rp.Severity))
	rp.Text = fmt.Sprintf("%s [%s] %s (%s)", ProblemLocation(p), sev, rp.Message, rp.StillOpenText(lang))
	return rp
}

// StillOpenText is "still open since r120, 3 commits" in l.
func (rp Repeat) StillOpenText(l Language) string {
	switch {
	case rp.Since != "" && rp.Commits > 1:
		return l.T(KeyRepeatSinceCommits, rp.Since, rp.Commits)
	case rp.Since != "":
		return l.T(KeyRepeatSince, rp.Since)
	case rp.Commits > 1:
		return l.T(KeyRepeatCommits, rp.Commits)
	}
	return l.T(KeyRepeatOpen)
}

// stillOpenVerdict is the verdict of a tracked review with no new
// problems: "No new problems found; 2 reported earlier are still open."
func stillOpenVerdict(lang Language, n int) string {
	switch n {
	case 0:
		return lang.T(KeyNoNewProblems)
	case 1:
		return lang.T(KeyStillOpen1)
	}
	return lang.T(KeyStillOpenN, n)
}

// SafeLink keeps a link only when it is an absolute http(s) URL with
// nothing that could break out of a dialect's link syntax; "" otherwise.
// The links are aicr's own, but a misconfigured base_url must not become
// markup.
func SafeLink(raw string) string {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.ContainsAny(raw, "<>|()[]{}\"'` \t\r\n") || Sanitize(raw) != raw {
		return ""
	}
	return raw
}

// Resolution is what a resolution report is built from: the change that
// resolved findings, and per earlier report that announced them to the
// channel, its Followup (Resolved filled in; MessageID and Updated as the
// daemon found them).
type Resolution struct {
	// Language is the channel's, which the resolution is worded in.
	Language  Language
	RunID     int64
	Change    *vcs.Change
	ChangeURL string
	Followups []Followup
}

// ResolvedNote is the English LangEnglish.ResolvedNote.
func ResolvedNote(revision, author string) string { return LangEnglish.ResolvedNote(revision, author) }

// ResolvedNote is what an edited report says of a finding a change
// resolved, in l: "Resolved in r3 by bob".
func (l Language) ResolvedNote(revision, author string) string {
	if a := oneLine(author); a != "" {
		return l.T(KeyResolvedInBy, oneLine(revision), a)
	}
	return l.T(KeyResolvedIn, oneLine(revision))
}

// BuildResolution is the report telling a channel that findings it was
// told about were resolved: one message for one change, naming each
// earlier report and its findings. Every text is sanitized here, as
// BuildReport does for a review.
func BuildResolution(in Resolution) Report {
	lang := in.Language.Norm()
	r := Report{Kind: KindResolution, RunID: in.RunID, Language: lang, Words: lang.Words(), ChangeURL: oneLine(in.ChangeURL)}
	if c := in.Change; c != nil {
		r.Change = ChangeInfo{VCS: string(c.VCS), Repo: Sanitize(c.Repo), Revision: Sanitize(c.Revision),
			Author: Sanitize(c.Author), Description: redact.Text(Sanitize(c.Description)), Shelved: c.Shelved}
		r.Description = FirstLine(r.Change.Description)
	}
	r.Title = lang.T(KeyResolutionTitle, changeTitle(lang, in.Change))
	if in.RunID > 0 {
		// The run is aicr's id, not the reader's name for the change.
		r.Footer = lang.T(KeyFooterRun, strconv.FormatInt(in.RunID, 10))
	}
	n := 0
	for _, f := range in.Followups {
		f.Title, f.Revision, f.MessageID = oneLine(f.Title), oneLine(f.Revision), oneLine(f.MessageID)
		for i, res := range f.Resolved {
			f.Resolved[i] = sanitizeResolved(res)
		}
		n += len(f.Resolved)
		r.Followups = append(r.Followups, f)
	}
	r.Verdict = resolvedVerdict(lang, n, len(r.Followups))
	return r
}

func sanitizeResolved(res Resolved) Resolved {
	res.File, res.Severity, res.Category = oneLine(res.File), oneLine(res.Severity), oneLine(res.Category)
	res.Message = FirstLine(res.Message)
	if len([]rune(res.Message)) > maxRepeatMessage {
		res.Message = string([]rune(res.Message)[:maxRepeatMessage-1]) + "…"
	}
	res.Revision, res.Author, res.Page = oneLine(res.Revision), oneLine(res.Author), SafeLink(res.Page)
	return res
}

// resolvedVerdict is "Resolved: 2 findings of 1 earlier report."
func resolvedVerdict(lang Language, findings, reports int) string {
	plural := func(n int, one, many Key) string {
		if n == 1 {
			return lang.T(one)
		}
		return lang.T(many, n)
	}
	return lang.T(KeyResolvedVerdict, plural(findings, KeyResolvedFindings1, KeyResolvedFindingsN),
		plural(reports, KeyResolvedReports1, KeyResolvedReportsN))
}

// ResolvedText is a resolved finding's line in r's language: "src/a.go:12
// [high] message (Resolved in r3 by bob)".
func (r Report) ResolvedText(res Resolved) string {
	loc := res.File
	if res.Line > 0 {
		loc += fmt.Sprintf(":%d", res.Line)
	}
	s := loc + " [" + r.Words.fill(r.Language).Severity(review.Severity(res.Severity)) + "] "
	if res.Category != "" {
		s += res.Category + ": "
	}
	return s + res.Message + " (" + r.Language.ResolvedNote(res.Revision, res.Author) + ")"
}

// FollowupHeading names the earlier report a follow-up is about, in r's
// language: "Earlier report: aicr review: main r1 by alice (run 7)".
func (r Report) FollowupHeading(f Followup) string {
	title := f.Title
	if title == "" {
		title = f.Revision
	}
	return r.Language.T(KeyEarlierReport, title)
}

// Text is the English ResolvedText, for callers without a report.
func (res Resolved) Text() string { return Report{}.ResolvedText(res) }

// Heading is the English FollowupHeading, for callers without a report.
func (f Followup) Heading() string { return Report{}.FollowupHeading(f) }

// MarkResolved is a copy of rep (an earlier report as it was stored)
// with the entries of the resolved findings marked, for platforms that
// edit the message they posted: State "resolved", Note "Resolved in r3
// by bob". notes maps finding id to its note.
func MarkResolved(rep Report, notes map[int64]string) *Report {
	out := rep
	out.Entries = slices.Clone(rep.Entries)
	for i, e := range out.Entries {
		if note, ok := notes[e.FindingID]; ok {
			e.State, e.Note = "resolved", oneLine(note)
			// A resolved finding has nothing left to act on from chat.
			e.Actions = nil
			out.Entries[i] = e
		}
	}
	return &out
}

// EntryFor returns the entry of problem i, or a zero Entry when the
// report carries none.
func (r Report) EntryFor(i int) Entry {
	if i < len(r.Entries) {
		return r.Entries[i]
	}
	return Entry{}
}

// ResolvedRecord is one resolved finding as the machine formats (the
// webhook, the file channel) carry it: the finding and the earlier report
// that announced it.
type ResolvedRecord struct {
	Resolved
	ReportRunID    int64  `json:"report_run_id"`
	ReportRevision string `json:"report_revision"`
	ReportTitle    string `json:"report_title,omitempty"`
}

// ResolvedRecords flattens a resolution report's follow-ups; nil for
// any other report.
func (r Report) ResolvedRecords() []ResolvedRecord {
	var out []ResolvedRecord
	for _, f := range r.Followups {
		for _, res := range f.Resolved {
			out = append(out, ResolvedRecord{Resolved: res, ReportRunID: f.RunID, ReportRevision: f.Revision, ReportTitle: f.Title})
		}
	}
	return out
}
