package im

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// SortProblems orders problems the way every channel shows them: most
// severe first, then by file, line, end line, and finally by the remaining
// fields so that equal-looking problems still come out in a fixed order.
func SortProblems(ps []review.Problem) {
	slices.SortStableFunc(ps, compareProblems)
}

func compareProblems(a, b review.Problem) int {
	return cmp.Or(
		cmp.Compare(b.Severity.Rank(), a.Severity.Rank()),
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.EndLine, b.EndLine),
		cmp.Compare(a.Category, b.Category),
		cmp.Compare(a.Message, b.Message),
		cmp.Compare(a.Suggestion, b.Suggestion),
		cmp.Compare(a.Fingerprint, b.Fingerprint),
	)
}

// CountBySeverity counts problems per severity. Severities with no
// problems are absent from the map.
func CountBySeverity(ps []review.Problem) map[review.Severity]int {
	counts := make(map[review.Severity]int)
	for _, p := range ps {
		counts[p.Severity]++
	}
	return counts
}

// CountsText is the English LangEnglish.CountsText.
func CountsText(ps []review.Problem) string { return LangEnglish.CountsText(ps) }

// CountsText renders the counts most severe first, e.g. "2 critical, 1
// high", or "no problems", in l. Unknown severities, which validation
// should have rejected, are still counted so nothing disappears from the
// total.
func (l Language) CountsText(ps []review.Problem) string {
	if len(ps) == 0 {
		return l.T(KeyNoProblemsShort)
	}
	var parts []string
	for _, c := range l.Counts(ps) {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, l.ListSep())
}

// Count is one severity's part of CountsText, for renderers that mark
// each part in its severity's look (SeverityStyle).
type Count struct {
	// Severity is "" for the severities validation should have rejected.
	Severity review.Severity
	// Text is "2 critical" in the report's language.
	Text string
}

// Counts are the parts of CountsText, most severe first.
func (l Language) Counts(ps []review.Problem) []Count {
	counts := CountBySeverity(ps)
	names := l.severities()
	var out []Count
	for i := len(review.Severities) - 1; i >= 0; i-- {
		s := review.Severities[i]
		if n := counts[s]; n > 0 {
			out = append(out, Count{Severity: s, Text: l.T(KeyCount, n, names[string(s)])})
		}
		delete(counts, s)
	}
	if other := sumCounts(counts); other > 0 {
		out = append(out, Count{Text: l.T(KeyCount, other, l.T(KeySevUnknown))})
	}
	return out
}

// ListSep joins the items of a list in l: ", " or "，".
func (l Language) ListSep() string { return l.T(KeyListSep) }

func sumCounts(m map[review.Severity]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// Sanitize makes untrusted text (from the agent or from commit metadata)
// safe to show: invalid UTF-8 becomes U+FFFD, and control characters other
// than newline and tab are dropped, as are the bidirectional overrides that
// can make displayed text differ from what it says.
func Sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || isBidiControl(r) {
			return -1
		}
		return r
	}, s)
}

func isBidiControl(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069') ||
		r == '\u200E' || r == '\u200F' || r == '\u061C'
}

// SanitizeResult returns a copy of res with every text field sanitized and
// problems sorted, ready for a channel that sends structured data.
func SanitizeResult(res review.Result) review.Result {
	out := review.Result{
		Problems:  make([]review.Problem, len(res.Problems)),
		Summaries: make([]review.Summary, len(res.Summaries)),
	}
	for i, p := range res.Problems {
		out.Problems[i] = sanitizeProblem(p)
	}
	SortProblems(out.Problems)
	for i, s := range res.Summaries {
		out.Summaries[i] = review.Summary{Title: Sanitize(s.Title), Markdown: Sanitize(s.Markdown)}
	}
	if res.Skip != nil {
		out.Skip = &review.Skip{Reason: Sanitize(res.Skip.Reason)}
	}
	return out
}

func sanitizeProblem(p review.Problem) review.Problem {
	p.File = Sanitize(p.File)
	p.Severity = review.Severity(Sanitize(string(p.Severity)))
	p.Category = Sanitize(p.Category)
	p.Message = Sanitize(p.Message)
	p.Suggestion = Sanitize(p.Suggestion)
	p.Fingerprint = Sanitize(p.Fingerprint)
	return p
}

// Title is the one-line headline of a report, in msg's language, naming
// the change as its VCS does: "aicr review: main r42 by alice", "…
// change 1234 …", "… shelved change 1234 …". Internal ids (the run) are
// not a reader's name for the change: they are in the footer
// (Report.Footer).
func Title(msg Message) string {
	lang := msg.Language.Norm()
	return lang.T(KeyTitle, changeTitle(lang, msg.Change))
}

// changeTitle names a change the way titles do: "main r42 by alice", or
// "unknown change".
func changeTitle(lang Language, c *vcs.Change) string {
	s := lang.T(KeyUnknownChange)
	if c != nil {
		s = oneLine(c.Repo) + " " + changeText(lang, c)
		if a := oneLine(c.Author); a != "" {
			s = lang.T(KeyChangeBy, s, a)
		}
	}
	return s
}

// Subversion users say "r42", Perforce users say "change 12345" and
// "shelved change 12345".
func changeText(lang Language, c *vcs.Change) string {
	t := vcs.RevisionText(c.VCS, oneLine(c.Revision))
	if c.Shelved {
		t = lang.T(KeyShelvedChange, t)
	}
	return t
}

// oneLine keeps header fields on one line whatever a commit author typed.
func oneLine(s string) string {
	return strings.Join(strings.Fields(Sanitize(s)), " ")
}

// FirstLine returns the first non-blank line of a change description.
func FirstLine(description string) string {
	for line := range strings.SplitSeq(description, "\n") {
		if l := oneLine(line); l != "" {
			return l
		}
	}
	return ""
}

// ProblemLocation renders "file:line" or "file:line-end".
func ProblemLocation(p review.Problem) string {
	loc := Sanitize(p.File)
	if p.Line > 0 {
		loc += ":" + strconv.Itoa(p.Line)
		if p.EndLine > p.Line {
			loc += "-" + strconv.Itoa(p.EndLine)
		}
	}
	return loc
}

// RenderText is PlainText of msg's report.
func RenderText(msg Message) string { return PlainText(BuildReport(msg)) }

// PlainText is the plain-text dialect of a report, the form the console,
// file and webhook channels carry. Layout:
//
//	aicr review: <repo> <revision> by <author>
//	<first line of the description, credentials redacted>
//	Problems: 2 critical, 1 high   (or "No problems found.", or why it was not reviewed)
//	<change URL>
//
//	<icon> <file>:<line>[-<end>] [<severity>] <category>: <message>
//	    Suggestion: <suggestion>
//
//	## <summary title>
//	<summary markdown>
//
//	Left out of the review: <file> (<reason>), ...
//	Reviewed by <agent> (<model>) · run <id>
//
// Lines that do not apply are left out. The output ends with exactly one
// newline.
func PlainText(r Report) string {
	if r.Kind == KindResolution {
		return plainResolution(r)
	}
	var b strings.Builder
	b.WriteString(r.Title + "\n")
	if r.Description != "" {
		b.WriteString(r.Description + "\n")
	}
	b.WriteString(r.Verdict + "\n")
	if r.ChangeURL != "" {
		b.WriteString(r.ChangeURL + "\n")
	}

	if len(r.Problems) > 0 {
		b.WriteString("\n")
		for i, p := range r.Problems {
			// The icon every platform shows for the severity (SeverityStyle).
			if st, ok := SeverityStyle(p.Severity); ok {
				b.WriteString(st.Icon + " ")
			}
			fmt.Fprintf(&b, "%s [%s] ", ProblemLocation(p), oneLine(r.Words.Severity(p.Severity)))
			if c := oneLine(p.Category); c != "" {
				b.WriteString(c + ": ")
			}
			b.WriteString(indentRest(strings.TrimSpace(p.Message), "    ") + "\n")
			if s := strings.TrimSpace(p.Suggestion); s != "" {
				b.WriteString("    " + r.Words.Suggestion + ": " + indentRest(s, "    ") + "\n")
			}
			plainEntry(&b, r.Words, r.EntryFor(i))
		}
	}
	if len(r.Repeats) > 0 {
		b.WriteString("\n" + r.Words.StillOpen + ":\n")
		for _, rp := range r.Repeats {
			b.WriteString("  " + rp.Text + "\n")
			if rp.Page != "" {
				b.WriteString("    " + r.Words.Finding + ": " + rp.Page + "\n")
			}
		}
	}

	for _, s := range r.Summaries {
		b.WriteString("\n")
		if s.Title != "" {
			b.WriteString("## " + s.Title + "\n")
		}
		if s.Markdown != "" {
			b.WriteString(s.Markdown + "\n")
		}
	}

	footer := r.Footer
	if r.RunURL != "" {
		footer += " " + r.RunURL
	}
	tail := []string{r.Notice, r.SkipNote(), r.LeftOutLine(), footer}
	if slices.ContainsFunc(tail, func(s string) bool { return s != "" }) {
		b.WriteString("\n")
		for _, line := range tail {
			if line != "" {
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String()
}

// indentRest indents every line after the first, so a multi-line message
// stays visually attached to its problem.
func indentRest(s, indent string) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			lines[i] = indent + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// plainEntry is a problem's finding lines: what happened since (an edited
// report), the page and the action links.
//
//	Resolved in r3 by bob
//	Finding: <url>
//	Useful: <url> | False positive: <url> | Won't fix: <url>
func plainEntry(b *strings.Builder, w Words, e Entry) {
	if e.Note != "" {
		b.WriteString("    " + e.Note + "\n")
	} else if e.State == ClassReopened {
		b.WriteString("    " + w.Reopened + "\n")
	}
	if e.Page != "" {
		b.WriteString("    " + w.Finding + ": " + e.Page + "\n")
	}
	var links []string
	for _, a := range e.Actions {
		if a.URL != "" {
			links = append(links, a.Label+": "+a.URL)
		}
	}
	if len(links) > 0 {
		b.WriteString("    " + strings.Join(links, " | ") + "\n")
	}
}

// plainResolution is the plain-text dialect of a resolution report:
//
//	aicr: resolved in <repo> <revision> by <author>
//	Resolved: 2 findings of 1 earlier report.
//	<change URL>
//
//	Earlier report: <its title>
//	  <file>:<line> [<severity>] <category>: <message> (Resolved in r3 by bob)
//	    Finding: <url>
func plainResolution(r Report) string {
	var b strings.Builder
	b.WriteString(r.Title + "\n")
	if r.Description != "" {
		b.WriteString(r.Description + "\n")
	}
	b.WriteString(r.Verdict + "\n")
	if r.ChangeURL != "" {
		b.WriteString(r.ChangeURL + "\n")
	}
	for _, f := range r.Followups {
		b.WriteString("\n" + r.FollowupHeading(f) + "\n")
		for _, res := range f.Resolved {
			b.WriteString("  " + r.ResolvedText(res) + "\n")
			if res.Page != "" {
				b.WriteString("    " + r.Words.Finding + ": " + res.Page + "\n")
			}
		}
	}
	if r.Footer != "" {
		b.WriteString("\n" + r.Footer + "\n")
	}
	return b.String()
}
