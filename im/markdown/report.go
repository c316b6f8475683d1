package markdown

import (
	"strings"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
)

// Blocks renders rep in dialect d as blocks ready for im.Split: the
// header first, then one block per problem (most severe first), the
// summaries, and the skip and left-out sentences. Every word comes from
// rep (its sentences and rep.Words); only markup differs between
// dialects. Title is left to the channel, which puts it where its
// platform shows a title.
func Blocks(rep im.Report, d Dialect) []im.Block { return BlocksMentioning(rep, d, "") }

// BlocksMentioning is Blocks with the author's mention, markup the
// channel made from its platform's ids (never committer text), on the
// header's "Author:" line, where every dialect shows it.
func BlocksMentioning(rep im.Report, d Dialect, mention string) []im.Block {
	if rep.Kind == im.KindResolution {
		return resolutionBlocks(rep, d)
	}
	blocks := []im.Block{{Text: header(rep, d, mention)}}
	for i, p := range rep.Problems {
		text := ProblemText(p, rep.Words, d)
		if e := entryText(rep.EntryFor(i), rep.Words, d); e != "" {
			text += "\n\n" + e
		}
		blocks = append(blocks, im.Block{Text: text, Problem: true})
	}
	if r := repeatsBlock(rep, d); r != "" {
		blocks = append(blocks, im.Block{Text: r})
	}
	for _, s := range rep.Summaries {
		body := Convert(s.Markdown, d)
		if s.Title == "" && body == "" {
			continue
		}
		var b strings.Builder
		if s.Title != "" {
			if d == Slack {
				b.WriteString(bold(Literal(s.Title, d), d))
			} else {
				b.WriteString("#### " + Literal(s.Title, d))
			}
		}
		if body != "" {
			if s.Title != "" {
				b.WriteString("\n\n")
			}
			b.WriteString(body)
		}
		blocks = append(blocks, im.Block{Text: b.String()})
	}
	var tail []string
	if rep.Notice != "" {
		tail = append(tail, Literal(rep.Notice, d))
	}
	if note := rep.SkipNote(); note != "" {
		tail = append(tail, Literal(note, d))
	}
	if line := rep.LeftOutLine(); line != "" {
		tail = append(tail, Literal(line, d))
	}
	if rep.Footer != "" {
		tail = append(tail, FooterText(rep, d))
	}
	if len(tail) > 0 {
		blocks = append(blocks, im.Block{Text: strings.Join(tail, "\n\n")})
	}
	return blocks
}

func header(rep im.Report, d Dialect, mention string) string {
	var lines []string
	if rep.Description != "" {
		lines = append(lines, "> "+Literal(rep.Description, d))
	}
	if len(rep.Problems) == 0 {
		lines = append(lines, bold(Literal(rep.Verdict, d), d))
	} else {
		lines = append(lines, bold(Literal(rep.Words.Label(rep.Words.Problems), d), d)+" "+countsText(rep, d))
	}
	if mention != "" {
		lines = append(lines, bold(Literal(rep.Words.Label(rep.Words.Author), d), d)+" "+mention)
	}
	if SafeURL(rep.ChangeURL) != "" {
		lines = append(lines, Link(rep.Words.ViewChange, rep.ChangeURL, d))
	}
	// Blank lines between them: DingTalk joins single-newline lines.
	return strings.Join(lines, "\n\n")
}

// countsText gives each count its severity's icon and, where the dialect
// has colours, its colour; the words are the report's (Counts).
func countsText(rep im.Report, d Dialect) string {
	var parts []string
	for _, c := range rep.Language.Counts(rep.Problems) {
		parts = append(parts, Severity(c.Severity, Literal(c.Text, d), d))
	}
	return strings.Join(parts, rep.Language.ListSep())
}

// ProblemText renders one problem:
//
//	[high] `file.go:12-14` · category
//	message
//	**Suggestion:** suggestion (raw diffs as a code block)
func ProblemText(p review.Problem, w im.Words, d Dialect) string {
	sev := strings.Join(strings.Fields(im.Sanitize(string(p.Severity))), " ")
	var b strings.Builder
	b.WriteString(Severity(review.Severity(sev), bold("["+Literal(w.Severity(review.Severity(sev)), d)+"]", d), d))
	if loc := CodeSpan(im.ProblemLocation(p), d); loc != "" {
		b.WriteString(" " + loc)
	}
	if c := strings.Join(strings.Fields(im.Sanitize(p.Category)), " "); c != "" {
		b.WriteString(" · " + Literal(c, d))
	}
	if msg := Convert(im.Sanitize(strings.TrimSpace(p.Message)), d); msg != "" {
		b.WriteString("\n\n" + msg)
	}
	if s := im.Sanitize(strings.TrimSpace(p.Suggestion)); s != "" {
		if isRawDiff(s) {
			b.WriteString("\n\n" + bold(Literal(w.Label(w.Suggestion), d), d) + "\n\n" + CodeBlock(s, "diff", d))
		} else if conv := Convert(s, d); conv != "" {
			sep := " "
			if startsBlock(conv) {
				// A fence, quote or list only works at the start of a line.
				sep = "\n\n"
			}
			b.WriteString("\n\n" + bold(Literal(w.Label(w.Suggestion), d), d) + sep + conv)
		}
	}
	return b.String()
}

// FooterText is the report's footer with its run linked to the run's
// web page when there is one ([web] base_url).
func FooterText(rep im.Report, d Dialect) string {
	f := Literal(rep.Footer, d)
	if rep.RunLabel == "" || SafeURL(rep.RunURL) == "" {
		return f
	}
	label := Literal(rep.RunLabel, d)
	if !strings.HasSuffix(f, label) {
		return f
	}
	if d == Slack {
		return strings.TrimSuffix(f, label) + linkMarkup(label, rep.RunURL, d)
	}
	return strings.TrimSuffix(f, label) + Link(rep.RunLabel, rep.RunURL, d)
}

// bold is s (already escaped) in the dialect's strong emphasis.
func bold(s string, d Dialect) string {
	if d == Slack {
		return "*" + s + "*"
	}
	return "**" + s + "**"
}

func startsBlock(s string) bool {
	first, _, _ := strings.Cut(s, "\n")
	for _, p := range []string{"```", "~~~", ">", "- ", "#"} {
		if strings.HasPrefix(first, p) {
			return true
		}
	}
	num := strings.TrimLeft(first, "0123456789")
	return len(num) < len(first) && strings.HasPrefix(num, ". ")
}

// isRawDiff spots a unified diff pasted without a fence: it would
// otherwise be parsed as a list ("- old line").
func isRawDiff(s string) bool {
	if strings.Contains(s, "```") || strings.Contains(s, "~~~") {
		return false
	}
	var changed, other int
	for line := range strings.SplitSeq(s, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "@@"), strings.HasPrefix(line, "+"), strings.HasPrefix(line, "-"):
			changed++
		default:
			other++
		}
	}
	return changed >= 2 && changed >= other
}

// Severity marks text (a severity tag, a count) as sev looks on every
// platform (im.SeverityStyle): its icon first, then, where the dialect has
// colours, the text in its colour: Feishu takes the colour's name,
// WeCom its nearest of three font colours, DingTalk and Slack have none
// in message text and show the icon only. An unknown severity gets
// neither.
func Severity(sev review.Severity, text string, d Dialect) string {
	st, ok := im.SeverityStyle(sev)
	if !ok {
		return text
	}
	switch d {
	case Feishu:
		text = "<font color='" + st.Colour + "'>" + text + "</font>"
	case WeCom:
		text = `<font color="` + st.WeCom + `">` + text + `</font>`
	}
	return st.Icon + " " + text
}

// Worst returns the highest severity among problems, or "" for none.
func Worst(problems []review.Problem) review.Severity { return im.Worst(problems) }
