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
func Blocks(rep im.Report, d Dialect) []im.Block {
	if rep.Kind == im.KindResolution {
		return resolutionBlocks(rep, d)
	}
	blocks := []im.Block{{Text: header(rep, d)}}
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
			b.WriteString("#### " + Escape(s.Title, d))
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
		tail = append(tail, Escape(rep.Notice, d))
	}
	if note := rep.SkipNote(); note != "" {
		tail = append(tail, Escape(note, d))
	}
	if line := rep.LeftOutLine(); line != "" {
		tail = append(tail, Escape(line, d))
	}
	if rep.Footer != "" {
		tail = append(tail, Escape(rep.Footer, d))
	}
	if len(tail) > 0 {
		blocks = append(blocks, im.Block{Text: strings.Join(tail, "\n\n")})
	}
	return blocks
}

func header(rep im.Report, d Dialect) string {
	var lines []string
	if rep.Description != "" {
		lines = append(lines, "> "+Escape(rep.Description, d))
	}
	if len(rep.Problems) == 0 {
		lines = append(lines, "**"+Escape(rep.Verdict, d)+"**")
	} else {
		lines = append(lines, "**"+Escape(rep.Words.Problems, d)+":** "+countsText(rep.Counts, d))
	}
	if SafeURL(rep.ChangeURL) != "" {
		lines = append(lines, Link(rep.Words.ViewChange, rep.ChangeURL, d))
	}
	// Blank lines between them: DingTalk joins single-newline lines.
	return strings.Join(lines, "\n\n")
}

// countsText colours the worst severities where the dialect can; the
// words are im.CountsText's.
func countsText(text string, d Dialect) string {
	if d == DingTalk {
		return text
	}
	parts := strings.Split(text, ", ")
	for i, p := range parts {
		if _, sev, ok := strings.Cut(p, " "); ok {
			parts[i] = colour(p, review.Severity(sev), d)
		}
	}
	return strings.Join(parts, ", ")
}

// ProblemText renders one problem:
//
//	[high] `file.go:12-14` · category
//	message
//	**Suggestion:** suggestion (raw diffs as a code block)
func ProblemText(p review.Problem, w im.Words, d Dialect) string {
	sev := strings.Join(strings.Fields(im.Sanitize(string(p.Severity))), " ")
	var b strings.Builder
	b.WriteString(colour("**["+Escape(w.Severity(review.Severity(sev)), d)+"]**", review.Severity(sev), d))
	if loc := CodeSpan(im.ProblemLocation(p), d); loc != "" {
		b.WriteString(" " + loc)
	}
	if c := strings.Join(strings.Fields(im.Sanitize(p.Category)), " "); c != "" {
		b.WriteString(" · " + Escape(c, d))
	}
	if msg := Convert(im.Sanitize(strings.TrimSpace(p.Message)), d); msg != "" {
		b.WriteString("\n\n" + msg)
	}
	if s := im.Sanitize(strings.TrimSpace(p.Suggestion)); s != "" {
		if isRawDiff(s) {
			b.WriteString("\n\n**" + Escape(w.Suggestion, d) + ":**\n\n" + CodeBlock(s, "diff", d))
		} else if conv := Convert(s, d); conv != "" {
			sep := " "
			if startsBlock(conv) {
				// A fence, quote or list only works at the start of a line.
				sep = "\n\n"
			}
			b.WriteString("\n\n**" + Escape(w.Suggestion, d) + ":**" + sep + conv)
		}
	}
	return b.String()
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

// colour wraps text in the dialect's colour markup for sev.
func colour(text string, sev review.Severity, d Dialect) string {
	switch d {
	case Feishu:
		c := map[review.Severity]string{
			review.SeverityCritical: "red", review.SeverityHigh: "red",
			review.SeverityMedium: "orange", review.SeverityLow: "yellow", review.SeverityInfo: "grey",
		}[sev]
		if c == "" {
			return text
		}
		return "<font color='" + c + "'>" + text + "</font>"
	case WeCom:
		// WeCom has three documented colours: info (green), comment
		// (grey) and warning (orange-red).
		c := map[review.Severity]string{
			review.SeverityCritical: "warning", review.SeverityHigh: "warning",
			review.SeverityMedium: "warning", review.SeverityLow: "comment", review.SeverityInfo: "info",
		}[sev]
		if c == "" {
			return text
		}
		return `<font color="` + c + `">` + text + `</font>`
	}
	return text
}

// Worst returns the highest severity among problems, or "" for none.
func Worst(problems []review.Problem) review.Severity {
	var worst review.Severity
	for _, p := range problems {
		if p.Severity.Rank() > worst.Rank() {
			worst = p.Severity
		}
	}
	return worst
}
